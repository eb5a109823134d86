/**
 * The device-loss latch across a reload that removes a provider (docs/safety.md, "A device that
 * drops out, and the device-loss latch"): a device that is no longer configured leaves the latch;
 * it is not "lost" forever, nor warned about at every entry into AUTO.
 */
import assert from "node:assert/strict";
import type { TypedValue } from "../../src/common/mod.ts";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { automationConfig, callAs, TreeDir, treeXml, tv } from "../scenarios/automation_helpers.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";

Deno.test("Kernel.reload removing a provider takes its devices out of the device-loss latch", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      const next = { ...rt.config, providers: rt.config.providers.filter((p) => p.id !== "sim1") };
      const report = await rt.reload(next);
      assert.deepEqual(report.providers.removed, ["sim1"]);
      // Give a latch (if any) the time to be published.
      await waitFor("the reload settled", () => rt.registry.host("sim1") === undefined, 2000);
      const latched = rt.automation!.status().device_loss_latched;
      assert.deepEqual(latched.filter((h) => h.startsWith("sim1/")), []);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload removing a provider whose devices were latched releases them at the removal, not as a later reload's new process's devices", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1", { restart: false })] },
    });
    await using r = await rig({ config: base, arm: true });
    const rt = r.kernel;
    {
      const engine = rt.automation!;
      const events = recordEvents(rt);
      // sim1 dies and stays down: its devices are lost, latched.
      r.kill("sim1");
      await waitFor(
        "sim1/motorctl0 latched",
        () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
      );
      const without = {
        ...rt.config,
        providers: rt.config.providers.filter((p) => p.id !== "sim1"),
      };
      assert.deepEqual((await rt.reload(without)).providers.removed, ["sim1"]);
      // Nothing reads the status before a reload configures sim1 again.
      assert.deepEqual((await rt.reload(base)).providers.added, ["sim1"]);
      assert.deepEqual(
        engine.status().device_loss_latched.filter((h) => h.startsWith("sim1/")),
        [],
        "the new process's devices are latched for the removed one's loss",
      );
      const released = events.events.filter((e) =>
        e.kind === "device_loss_latch" && e.provider_id === "sim1" && e.device_id === "motorctl0" &&
        !e.latched
      );
      assert.deepEqual(
        released.map((e) => e.kind === "device_loss_latch" ? e.reason : ""),
        ["its provider is no longer configured"],
      );
      events.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload removing a provider takes its devices out of the automation status's device outages", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      const engine = rt.automation!;
      // Two automated calls the sim1 device failed: an outage in status.
      await callAs(rt, "manual", "sim1/chaos_control", "inject_call_failure", {
        device_id: tv.s("motorctl0"),
        function_id: tv.s("10"), // set_motor_duty
        failure_rate: tv.d(1),
      });
      for (let i = 0; i < 2; i++) {
        await assert.rejects(
          engine.services.callDevice(
            "sim1/motorctl0",
            "set_motor_duty",
            { motor_index: tv.i(1), duty: tv.d(0.2) },
            new AbortController().signal,
          ),
          /injected fault/,
        );
      }
      assert.deepEqual(engine.status().device_outages.map((o) => o.device_handle), [
        "sim1/motorctl0",
      ]);
      const next = { ...rt.config, providers: rt.config.providers.filter((p) => p.id !== "sim1") };
      assert.deepEqual((await rt.reload(next)).providers.removed, ["sim1"]);
      assert.deepEqual(engine.status().device_outages, []);
      assert.equal(engine.status().last_error, null);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload removing a provider and a later one adding it back: the removed provider's device outages and refusals are not the new process's", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1")] },
    });
    const rt = await startRuntime(base, { arm: true });
    try {
      const engine = rt.automation!;
      const call = (handle: string, fn: string, args: Record<string, TypedValue> = {}) =>
        engine.services.callDevice(handle, fn, args, new AbortController().signal);
      // Two automated calls the sim1 device failed: an outage; two refused: refused_calls.
      await callAs(rt, "manual", "sim1/chaos_control", "inject_call_failure", {
        device_id: tv.s("motorctl0"),
        function_id: tv.s("10"), // set_motor_duty
        failure_rate: tv.d(1),
      });
      const duty = { motor_index: tv.i(1), duty: tv.d(0.2) };
      for (let i = 0; i < 2; i++) {
        await assert.rejects(call("sim1/motorctl0", "set_motor_duty", duty), /injected fault/);
        await assert.rejects(call("sim1/relayio0", "no_such_fn"), /Function not found/);
      }
      assert.deepEqual(engine.status().device_outages.map((o) => o.device_handle), [
        "sim1/motorctl0",
      ]);
      assert.deepEqual(engine.status().refused_calls.map((o) => o.device_handle), [
        "sim1/relayio0",
      ]);
      const without = {
        ...rt.config,
        providers: rt.config.providers.filter((p) => p.id !== "sim1"),
      };
      assert.deepEqual((await rt.reload(without)).providers.removed, ["sim1"]);
      // Nothing reads the status before a reload configures sim1 again: a new process, whose
      // devices no call of the tree has reached.
      assert.deepEqual((await rt.reload(base)).providers.added, ["sim1"]);
      const s = engine.status();
      assert.deepEqual(
        [s.device_outages, s.refused_calls, s.last_error],
        [[], [], null],
        "the removed provider's outages and refusals are listed for the new one",
      );
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload dropping a provider that failed to start: the tree's records of it are forgotten at the drop, not listed for a process a later reload starts under its id", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const base = automationConfig(tree, { config: { providers: [simProvider("sim0")] } });
    const rt = await startRuntime(base, { arm: true });
    try {
      const engine = rt.automation!;
      const call = (handle: string) =>
        engine.services.callDevice(handle, "set_relay", {}, new AbortController().signal);
      // sim1's simulator file does not exist: its process exits at once, the start fails and
      // the host stays listed down (startError) until the next reload.
      const broken = simProvider("sim1", { yaml: `${dir.path}/no-such-sim.yaml` });
      const failing = await rt.reload({ ...rt.config, providers: [...base.providers, broken] });
      assert.deepEqual(failing.providers.failed.map((f) => f.id), ["sim1"]);
      for (let i = 0; i < 2; i++) await assert.rejects(call("sim1/relayio0"));
      const s0 = engine.status();
      assert.deepEqual(
        [...s0.device_outages, ...s0.refused_calls].map((o) => o.device_handle),
        ["sim1/relayio0"],
        "the calls to the provider that did not start are recorded",
      );
      // The next reload drops sim1; nothing reads the status before one configures it again.
      await rt.reload(base);
      assert.equal(rt.registry.host("sim1"), undefined);
      assert.deepEqual(
        (await rt.reload({ ...base, providers: [...base.providers, simProvider("sim1")] }))
          .providers.added,
        ["sim1"],
      );
      const s = engine.status();
      assert.deepEqual(
        [s.device_outages, s.refused_calls, s.last_error],
        [[], [], null],
        "the dropped provider's records are listed for the new process",
      );
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

/**
 * sim0 (the FAULT hook's motor) and p1, a programmable provider listing `devices` (its file is
 * rewritten by the test: a process reads it when it starts), no restarts; armed (MANUAL).
 */
async function latchRig(devices: Record<string, unknown>) {
  const dir = await TreeDir.create();
  const file = await Deno.makeTempFile({ prefix: "reload-latch-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify({ devices }));
  const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
  const base = automationConfig(tree, {
    config: { providers: [simProvider("sim0"), programmableProvider("p1", file)] },
  });
  const rt = await startRuntime(base, { arm: true });
  return {
    rt,
    file,
    /** The reload that restarts p1 (its entry changed). */
    restartP1() {
      return rt.reload({
        ...rt.config,
        providers: rt.config.providers.map((p) =>
          p.id === "p1" ? { ...p, timeoutMs: p.timeoutMs + 1 } : p
        ),
      });
    },
    latched: () => rt.automation!.status().device_loss_latched,
    async close() {
      await rt.stop();
      await Deno.remove(file).catch(() => {});
      await dir.dispose();
    },
  };
}

const VALVE = { valve: { signals: [{ id: "x", type: T.DOUBLE }] } };
const OTHER = { other: { signals: [{ id: "x", type: T.DOUBLE }] } };

Deno.test("Kernel.reload restarting the provider of a latched device that does not come back keeps it latched, also across entering AUTO", async () => {
  const r = await latchRig({ ...VALVE, ...OTHER });
  try {
    // p1 crashes (no restarts): its devices are down and latched.
    Deno.kill(r.rt.registry.host("p1")!.session!.pid, "SIGKILL");
    await waitFor("p1/valve latched", () => r.latched().includes("p1/valve"), 10_000);
    // The operator changes p1's entry; its new process no longer lists the valve.
    await Deno.writeTextFile(r.file, JSON.stringify({ devices: OTHER }));
    const report = await r.restartP1();
    assert.deepEqual(report.providers.restarted, ["p1"]);
    assert.ok(r.latched().includes("p1/valve"), JSON.stringify(r.latched()));
    await r.rt.modes.request("AUTO");
    assert.deepEqual(
      r.latched().filter((h) => h.startsWith("p1/")),
      ["p1/valve"],
      "still down when AUTO was entered: its return must not let the tree command it",
    );
  } finally {
    await r.close();
  }
});

Deno.test("Kernel.reload restarting a provider whose new process no longer lists a device latches that device, as a supervisor restart would", async () => {
  const r = await latchRig({ ...VALVE, ...OTHER });
  try {
    assert.deepEqual(r.latched(), []);
    await Deno.writeTextFile(r.file, JSON.stringify({ devices: OTHER }));
    const report = await r.restartP1();
    assert.deepEqual(report.providers.restarted, ["p1"]);
    await r.rt.modes.request("AUTO");
    assert.deepEqual(
      r.latched().filter((h) => h.startsWith("p1/")),
      ["p1/valve"],
      "lost across the restart and still down when AUTO was entered",
    );
  } finally {
    await r.close();
  }
});
