/**
 * What the tree's calls tell automation about a device, over a real kernel and the simulated
 * provider: a call that reached the provider and failed there is the device's failure even when
 * the tree was halted meanwhile; a call refused before it was sent does not make the tree depend
 * on the device (the device-loss latch forces FAULT only for a device the tree commanded).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  automationConfig,
  callAs,
  slowCallsOf,
  TreeDir,
  treeXml,
  tv,
} from "../scenarios/automation_helpers.ts";
import type { TypedValue } from "../../src/common/mod.ts";
import { MOTOR_ARGS, refusedRows, withIdleTree } from "./_kernel_rig.ts";

Deno.test("AutomationEngine counts a sent call's failure toward device_outages even when the tree was halted while it was in flight", async () => {
  await withIdleTree(async (rt, engine) => {
    await rt.modes.request("MANUAL"); // the mode gate lets automated calls through outside AUTO
    await callAs(rt, "manual", "sim0/chaos_control", "inject_call_failure", {
      device_id: tv.s("motorctl0"),
      function_id: tv.s("10"), // set_motor_duty
      failure_rate: tv.d(1),
    });
    // The device answers a call 300 ms after it got it: the halt below comes well before.
    await slowCallsOf(rt, "sim0", "motorctl0", 300);
    // The halt comes once the call's decision was written ahead: the router sends the request
    // in the microtasks that follow, before the timer fires -- the tree is halted while its sent call is in flight.
    let halt: AbortController | null = null;
    rt.router.setAuditSink({
      record: (d) => rt.audit.record(d),
      writeAhead: async (call, options) => {
        const intent = await rt.audit.writeAhead(call, options);
        const h = halt;
        setTimeout(() => h?.abort(), 0);
        return intent;
      },
    });
    for (let i = 0; i < 2; i++) {
      halt = new AbortController();
      await assert.rejects(
        engine.services.callDevice("sim0/motorctl0", "set_motor_duty", MOTOR_ARGS, halt.signal),
        /injected fault/,
      );
      assert.equal(halt.signal.aborted, true, "halted while the call was in flight");
    }
    const s = engine.status();
    assert.deepEqual(
      s.device_outages.map((o) => [o.device_handle, o.consecutive_failures]),
      [["sim0/motorctl0", 2]],
      "the device failed both calls it was sent",
    );
    assert.match(s.device_outages[0]!.last_error, /injected fault/);
  });
});

Deno.test("AutomationEngine: a device whose only call was refused before sending is not commanded (its loss does not force FAULT); one commanded is", async () => {
  // The tree names no device: only the calls below can make it depend on sim1/motorctl0.
  await withIdleTree(async (rt, engine) => {
    const host = rt.registry.host("sim1")!;
    const signal = new AbortController().signal;
    const crashSim1 = () =>
      callAs(rt, "manual", "sim1/chaos_control", "crash", { exit_code: tv.i(9) });
    const lost = async () => {
      await crashSim1();
      await waitFor(
        "sim1/motorctl0 latched",
        () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
      );
    };
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO");
    // Refused by argument validation (duty above its max 1): nothing was sent.
    await assert.rejects(
      engine.services.callDevice(
        "sim1/motorctl0",
        "set_motor_duty",
        { motor_index: tv.i(1), duty: tv.d(2) },
        signal,
      ),
    );
    await lost();
    // The latch and the FAULT are decided in one step: latched and still AUTO is no FAULT.
    assert.equal(rt.modes.current(), "AUTO", "a device the tree never commanded forced FAULT");

    await waitFor("sim1 back", () => host.available, 10000);
    await waitFor("motorctl0 polled", () => rt.cache.device("sim1", "motorctl0")?.available);
    await rt.modes.request("MANUAL");
    await rt.modes.request("AUTO"); // releases the latch of the device that is back
    await engine.services.callDevice("sim1/motorctl0", "set_motor_duty", MOTOR_ARGS, signal);
    await lost();
    await waitFor("FAULT forced", () => rt.modes.current() === "FAULT");
    assert.equal(engine.status().not_running?.cause, "device_loss_latch");
  }, {
    // OVERRIDE: the test crashes sim1 with a manual chaos call while in AUTO.
    manualGatingPolicy: "OVERRIDE",
    config: {
      providers: [
        simProvider("sim0"),
        simProvider("sim1", { restart: { backoffMs: [300], successResetMs: 200 } }),
      ],
    },
  });
});

Deno.test("AutomationEngine lists a call to a function the device does not declare in refused_calls (unknown_function), not as a device outage", async () => {
  await withIdleTree(async (rt, engine) => {
    await rt.modes.request("MANUAL"); // the mode gate lets automated calls through outside AUTO
    const signal = new AbortController().signal;
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        engine.services.callDevice("sim0/motorctl0", "no_such_fn", {}, signal),
        /Function not found: sim0\/motorctl0 "no_such_fn"/,
      );
    }
    const s = engine.status();
    assert.deepEqual(s.device_outages, [], "the device answered nothing: no outage");
    assert.deepEqual(
      refusedRows(engine),
      [["sim0/motorctl0", 2, "unknown_function"]],
    );
    assert.match(s.refused_calls[0]!.last_refusal, /^Function not found: /);
    assert.equal(
      s.last_error,
      "calls refused: sim0/motorctl0 no_such_fn by unknown_function (2 in a row)",
    );
  });
});

Deno.test("AutomationEngine lists a call refused when made in the step its tree is halted in (validation, an unknown function) in refused_calls, not as cancelled", async () => {
  await withIdleTree(async (_rt, engine) => {
    const at = "/etc/runtime/bt/main.xml:12:9";
    const errors: string[] = [];
    for (let i = 0; i < 2; i++) {
      const halt = new AbortController();
      const call = (fn: string, args: Record<string, TypedValue>, node: string) =>
        engine.services.callDevice("sim0/motorctl0", fn, args, halt.signal, node, at)
          .then(() => "made", (err: unknown) => String(err));
      // MANUAL: the mode gate lets automated calls through; argument validation refuses duty 2.
      const refused = call("set_motor_duty", { motor_index: tv.i(1), duty: tv.d(2) }, "Demo/A[0]");
      const unknown = call("no_such_fn", {}, "Demo/A[1]");
      // The tree halted in the same step (AUTO left, an e-stop's FAULT), after both refusals.
      halt.abort();
      errors.push(await refused, await unknown);
    }
    assert.deepEqual(
      refusedRows(engine),
      [["sim0/motorctl0", 2, "validation"], ["sim0/motorctl0", 2, "unknown_function"]],
      "refused before the halt: refused, not cancelled",
    );
    assert.deepEqual(engine.status().device_outages, []);
    assert.match(errors[2]!, /duty.*\(CallDevice at \/etc\/runtime\/bt\/main\.xml:12:9\)$/);
    assert.match(errors[3]!, /Function not found: .*"no_such_fn" \(CallDevice at /);
  }, { arm: true });
});

Deno.test("AutomationEngine lists calls to a provider that is not configured in refused_calls (unknown_provider), not nowhere", async () => {
  await withIdleTree(async (_rt, engine) => {
    const signal = new AbortController().signal;
    // A handle the tree computed, naming a provider the configuration does not have.
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        engine.services.callDevice("simO/motorctl0", "set_motor_duty", MOTOR_ARGS, signal),
        /Provider not found: simO/,
      );
    }
    const s = engine.status();
    assert.deepEqual(s.device_outages, [], "no device answered: no outage");
    assert.deepEqual(
      refusedRows(engine),
      [["simO/motorctl0", 2, "unknown_provider"]],
      "the tree's calls to a provider that does not exist are nowhere in status",
    );
    assert.equal(
      s.last_error,
      "calls refused: simO/motorctl0 set_motor_duty by unknown_provider (2 in a row)",
    );
  }, { arm: true });
});

Deno.test("AutomationEngine lists calls with a malformed device handle in refused_calls (validation), not nowhere", async () => {
  await withIdleTree(async (_rt, engine) => {
    const signal = new AbortController().signal;
    // A handle the tree computed without its provider part.
    for (let i = 0; i < 2; i++) {
      await assert.rejects(
        engine.services.callDevice("motorctl0", "set_motor_duty", MOTOR_ARGS, signal),
        /device_handle must be 'provider\/device', got "motorctl0"/,
      );
    }
    const s = engine.status();
    assert.deepEqual(
      refusedRows(engine),
      [["motorctl0", 2, "validation"]],
      "the tree's calls with a malformed handle are nowhere in status",
    );
    assert.equal(
      s.last_error,
      "calls refused: motorctl0 set_motor_duty by validation (2 in a row)",
    );
  }, { arm: true });
});

Deno.test("AutomationEngine: a tree call still in flight from the previous AUTO session commands its device after AUTO is entered again (its loss forces FAULT)", async () => {
  const dir = await TreeDir.create();
  try {
    // The tree names no device: only the call below can make it depend on sim1/motorctl0.
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    await using r = await rig({
      config: automationConfig(tree, {
        config: {
          providers: [simProvider("sim0"), simProvider("sim1", { timeoutMs: 60_000 })],
        },
      }),
      arm: true,
    });
    const rt = r.kernel;
    const engine = rt.automation!;
    // The device answers a call 30 s after it got it: AUTO is left and entered again meanwhile.
    await slowCallsOf(rt, "sim1", "motorctl0", 30_000);
    // The request is written in the microtasks after its decision is written ahead.
    let written = false;
    rt.router.setAuditSink({
      record: (d) => rt.audit.record(d),
      writeAhead: async (call, options) => {
        const intent = await rt.audit.writeAhead(call, options);
        if (call.device_handle === "sim1/motorctl0") setTimeout(() => written = true, 0);
        return intent;
      },
    });
    await rt.modes.request("AUTO");
    const halt = new AbortController();
    const inFlight = engine.services.callDevice(
      "sim1/motorctl0",
      "set_motor_duty",
      MOTOR_ARGS,
      halt.signal,
    ).catch((err: unknown) => err);
    await waitFor("the tree's call sent", () => written);
    await rt.modes.request("MANUAL");
    halt.abort(); // the tree is halted: its sent call goes on
    await rt.modes.request("AUTO");
    let settled = false;
    void inFlight.then(() => settled = true);
    await Promise.resolve();
    assert.equal(settled, false, "the previous session's call is still in flight");
    r.kill("sim1");
    await waitFor(
      "sim1/motorctl0 latched",
      () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
    );
    // The latch and the FAULT are decided in one step.
    assert.equal(
      rt.modes.current(),
      "FAULT",
      "the device the tree's call in flight commands was lost in AUTO without FAULT",
    );
    assert.equal(engine.status().not_running?.cause, "device_loss_latch");
    await inFlight;
  } finally {
    await dir.dispose();
  }
});

Deno.test("AutomationEngine: a tree call halted while its decision was written ahead, not sent, does not command its device after AUTO is entered again (its loss does not force FAULT)", async () => {
  const dir = await TreeDir.create();
  try {
    // The tree names no device: only the call below could make it depend on sim1/motorctl0.
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    await using r = await rig({
      config: automationConfig(tree, {
        config: { providers: [simProvider("sim0"), simProvider("sim1")] },
      }),
      arm: true,
    });
    const rt = r.kernel;
    const engine = rt.automation!;
    // The call's write ahead is held (a slow journal, up to its bound) until the test lets it go.
    let held = false;
    let release = () => {};
    const writing = new Promise<void>((res) => release = res);
    rt.router.setAuditSink({
      record: (d) => rt.audit.record(d),
      writeAhead: async (call, options) => {
        if (call.device_handle === "sim1/motorctl0") {
          held = true;
          await writing;
        }
        return rt.audit.writeAhead(call, options);
      },
    });
    await rt.modes.request("AUTO");
    const halt = new AbortController();
    const call = engine.services.callDevice(
      "sim1/motorctl0",
      "set_motor_duty",
      MOTOR_ARGS,
      halt.signal,
    ).catch((err: unknown) => err);
    await waitFor("the call's write ahead held", () => held);
    await rt.modes.request("MANUAL");
    halt.abort(); // the tree is halted before its call was sent: it never will be
    await rt.modes.request("AUTO");
    release();
    assert.match(String(await call), /call cancelled before it was sent/);
    r.kill("sim1");
    await waitFor(
      "sim1/motorctl0 latched",
      () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
    );
    // The latch and the FAULT are decided in one step.
    assert.equal(
      rt.modes.current(),
      "AUTO",
      "a device the tree's halted, never sent call named was lost: FAULT forced",
    );
  } finally {
    await dir.dispose();
  }
});
