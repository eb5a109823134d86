/**
 * The hooks into FAULT are stop actions; a provider that was down (restarting) when FAULT was
 * entered got none of them (UNAVAILABLE), and its new process starts with its own start-up values.
 * While FAULT stands, the hook calls addressed to it are made again when it comes back, as the
 * e-stop secures a provider that comes back while latched (docs/safety.md).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { call, d, hook, inertSim, manualCall, readSignal } from "../safety/_fixture.ts";

Deno.test("A provider restarting when FAULT was entered gets the hook calls into FAULT when it comes back", async () => {
  const faultHook = hook(
    "*",
    "FAULT",
    [call("sim0/tempctl0", "set_setpoint", { value: { double: 10 } })],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      // Down for 1.5 s after a crash: FAULT is entered meanwhile.
      providers: [inertSim("sim0", { restart: { backoffMs: [1500], maxAttempts: 1 } })],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook], afterTransition: [] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "tempctl0", 2, { value: d(80) });
    const host = rt.registry.host("sim0")!;
    const pid = host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("sim0 down", () => !host.available);
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json.mode, "FAULT");
    assert.equal(r.json.hook_failures.length, 1, r.text);
    assert.match(r.json.hook_failures[0].error, /^UNAVAILABLE/);
    await waitFor("sim0 restarted", () => host.available && host.session!.pid !== pid, 20_000);
    // The new process starts with its own setpoint (60); the hook's 10 must be applied again.
    await waitFor(
      "the FAULT hook's setpoint applied to the restarted sim0",
      async () => await readSignal(rt, "sim0", "tempctl0", "setpoint") === 10,
    );
    const status = await fx.request("GET", "/v0/runtime/status");
    assert.equal(status.json.mode, "FAULT");
  } finally {
    await fx.close();
  }
});

Deno.test("A provider a reload restarts while FAULT stands gets the hook calls into FAULT again", async () => {
  const faultHook = hook(
    "*",
    "FAULT",
    [call("sim0/tempctl0", "set_setpoint", { value: { double: 10 } })],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0")],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook], afterTransition: [] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.hook_failures, []);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    // Its entry changed: the reload restarts it (outside AUTO a change applies); the new process
    // starts with its own setpoint (60).
    const [sim0] = rt.config.providers;
    const report = await rt.reload({
      ...rt.config,
      providers: [{ ...sim0!, timeoutMs: sim0!.timeoutMs + 1 }],
    });
    assert.deepEqual(report.providers.restarted, ["sim0"]);
    await waitFor(
      "the FAULT hook's setpoint applied to the sim0 the reload restarted",
      async () => await readSignal(rt, "sim0", "tempctl0", "setpoint") === 10,
    );
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await fx.close();
  }
});

Deno.test("A provider that comes back while FAULT stands gets the hook calls a reload put in force meanwhile", async () => {
  const faultHook = (value: number) =>
    hook(
      "*",
      "FAULT",
      [call("sim0/tempctl0", "set_setpoint", { value: { double: value } })],
      true,
      "automation.mode_transition_hooks.before_transition[0]",
    );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0", { restart: { backoffMs: [100], maxAttempts: 1 } })],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook(10)], afterTransition: [] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(r.json.hook_failures, []);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    // The operator fixes the hook while FAULT stands (outside AUTO a hook change applies).
    const report = await rt.reload({
      ...rt.config,
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: { beforeTransition: [faultHook(20)], afterTransition: [] },
      },
    });
    assert.ok(report.applied.includes("automation.mode_transition_hooks"), JSON.stringify(report));
    // sim0 crashes; the supervisor restarts it and its new process starts at setpoint 60.
    const host = rt.registry.host("sim0")!;
    const pid = host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("sim0 restarted", () => host.available && host.session!.pid !== pid, 20_000);
    const setpoint = await waitFor(
      "a FAULT hook's setpoint applied to the restarted sim0",
      async () => {
        const v = await readSignal(rt, "sim0", "tempctl0", "setpoint");
        return v === 10 || v === 20 ? v : undefined;
      },
    );
    assert.equal(
      setpoint,
      20,
      "the hook in force now (the reload's), not the one FAULT was entered with",
    );
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await fx.close();
  }
});

Deno.test("A provider that comes back while latched, with the *->FAULT hooks adopted as the ladder, gets each of their calls once", async () => {
  // No safety: section: the e-stop adopts the *->FAULT hook's call as its ladder (rung hooks).
  const faultHook = hook(
    "*",
    "FAULT",
    [call("sim0/tempctl0", "set_setpoint", { value: { double: 10 } })],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      // Down for 1.5 s after a crash: the e-stop latches meanwhile.
      providers: [inertSim("sim0", { restart: { backoffMs: [1500], maxAttempts: 1 } })],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook], afterTransition: [] },
      },
    },
  });
  try {
    const rt = fx.runtime;
    assert.equal(rt.estop.status().software_safe_state, "hooks");
    await rt.modes.request("MANUAL");
    const host = rt.registry.host("sim0")!;
    const pid = host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("sim0 down", () => !host.available);
    const stop = await fx.request("POST", "/v0/estop", { body: { reason: "sim0 down" } });
    assert.equal(stop.status, 200, stop.text);
    assert.match(stop.json.actions[0].error, /^UNAVAILABLE/);
    assert.match(stop.json.hook_failures[0].error, /^UNAVAILABLE/);
    await waitFor("sim0 restarted", () => host.available && host.session!.pid !== pid, 20_000);
    // The latched provider gets its safe state from the ladder.
    await waitFor("the e-stop securing sim0", () => rt.estop.securing(host));
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    // Re-arming is refused until every stop action for it (ladder and hooks) has been made.
    const cleared = await fx.request("POST", "/v0/estop/clear");
    assert.equal(cleared.status, 200, cleared.text);
    await waitFor("re-armed (MANUAL)", async () => {
      const r = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
      return r.status === 200;
    });
    // Every call the provider received is on the audit trail (the router records each one sent).
    const sent = (await rt.audit.query({ limit: 1000 })).entries.filter((e) =>
      e.action === "call" && e.device_handle === "sim0/tempctl0" &&
      e.function === "set_setpoint" && e.outcome === "accepted"
    );
    assert.deepEqual(
      sent.map((e) => e.origin.kind),
      ["estop"],
      `set_setpoint reached the restarted sim0 once, by the ladder: ${JSON.stringify(sent)}`,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("A provider secured while latched that comes back again after the release gets the hook calls into FAULT", async () => {
  // No safety: section: the e-stop adopts the *->FAULT hook's call as its ladder (rung hooks).
  const faultHook = hook(
    "*",
    "FAULT",
    [call("sim0/tempctl0", "set_setpoint", { value: { double: 10 } })],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0", { restart: { backoffMs: [100], maxAttempts: 2 } })],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook], afterTransition: [] },
      },
    },
  });
  try {
    const rt = fx.runtime;
    const host = rt.registry.host("sim0")!;
    const stop = await fx.request("POST", "/v0/estop", { body: { reason: "test" } });
    assert.equal(stop.status, 200, stop.text);
    // Latched: the supervisor restarts sim0 and the ladder secures it.
    const first = host.session!.pid;
    Deno.kill(first, "SIGKILL");
    await waitFor("sim0 restarted", () => host.available && host.session!.pid !== first, 20_000);
    await waitFor("the e-stop securing sim0", () => rt.estop.securing(host));
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    // Released, FAULT stands: it restarts again; the hooks into FAULT, not the latch, secure it.
    const cleared = await fx.request("POST", "/v0/estop/clear");
    assert.equal(cleared.status, 200, cleared.text);
    const second = host.session!.pid;
    Deno.kill(second, "SIGKILL");
    await waitFor(
      "sim0 restarted again",
      () => host.available && host.session!.pid !== second,
      20_000,
    );
    await waitFor(
      "the FAULT hook's setpoint applied to sim0 restarted after the release",
      async () => await readSignal(rt, "sim0", "tempctl0", "setpoint") === 10,
    );
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await fx.close();
  }
});

Deno.test("A provider one reload restarts while FAULT stands gets the hook calls into FAULT that reload fixed", async () => {
  const faultHook = (value: number) =>
    hook(
      "*",
      "FAULT",
      [call("sim0/tempctl0", "set_setpoint", { value: { double: value } })],
      true,
      "automation.mode_transition_hooks.before_transition[0]",
    );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0")],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook(10)], afterTransition: [] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    assert.equal(r.status, 200, r.text);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    // One reload changes sim0's entry (restarted: its providers section applies first, and the
    // new process comes back before the hooks section) and fixes the hook.
    const [sim0] = rt.config.providers;
    const report = await rt.reload({
      ...rt.config,
      providers: [{ ...sim0!, timeoutMs: sim0!.timeoutMs + 1 }],
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: { beforeTransition: [faultHook(20)], afterTransition: [] },
      },
    });
    assert.deepEqual(report.providers.restarted, ["sim0"]);
    assert.ok(report.applied.includes("automation.mode_transition_hooks"), JSON.stringify(report));
    await waitFor(
      "the fixed FAULT hook's setpoint applied to the sim0 the same reload restarted",
      async () => await readSignal(rt, "sim0", "tempctl0", "setpoint") === 20,
    );
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await fx.close();
  }
});

Deno.test("A provider one reload restarts while latched, changing the adopted *->FAULT hook, gets each call once", async () => {
  const faultHook = (value: number) =>
    hook(
      "*",
      "FAULT",
      [call("sim0/tempctl0", "set_setpoint", { value: { double: value } })],
      true,
      "automation.mode_transition_hooks.before_transition[0]",
    );
  // No safety: section: the e-stop adopts the *->FAULT hook's call as its ladder (rung hooks).
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0")],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook(10)], afterTransition: [] },
      },
    },
  });
  try {
    const rt = fx.runtime;
    const stop = await fx.request("POST", "/v0/estop", { body: { reason: "test" } });
    assert.equal(stop.status, 200, stop.text);
    const seqBefore = (await rt.audit.query({ limit: 1000 })).entries.at(-1)!.seq;
    const [sim0] = rt.config.providers;
    const report = await rt.reload({
      ...rt.config,
      providers: [{ ...sim0!, timeoutMs: sim0!.timeoutMs + 1 }],
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: { beforeTransition: [faultHook(20)], afterTransition: [] },
      },
    });
    assert.deepEqual(report.providers.restarted, ["sim0"]);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 20);
    // Every stop action for it has been made once re-arming is possible.
    assert.equal((await fx.request("POST", "/v0/estop/clear")).status, 200);
    await waitFor("re-armed (MANUAL)", async () => {
      const r = await fx.request("POST", "/v0/mode", { body: { mode: "MANUAL" } });
      return r.status === 200;
    });
    const sent = (await rt.audit.query({ limit: 1000 })).entries.filter((e) =>
      e.seq > seqBefore && e.action === "call" && e.device_handle === "sim0/tempctl0" &&
      e.function === "set_setpoint" && e.outcome === "accepted"
    );
    assert.deepEqual(
      sent.map((e) => [e.origin.kind, (e.args as { value: { double: number } }).value.double]),
      [["estop", 10], ["estop", 20]],
      JSON.stringify(sent),
    );
  } finally {
    await fx.close();
  }
});

Deno.test("A reload while FAULT stands that changes a hook call into FAULT makes the new call on a provider that stayed up", async () => {
  const faultHook = (value: number) =>
    hook(
      "*",
      "FAULT",
      [call("sim0/tempctl0", "set_setpoint", { value: { double: value } })],
      true,
      "automation.mode_transition_hooks.before_transition[0]",
    );
  const fx = await startHttpFixture({
    config: {
      providers: [inertSim("sim0")],
      automation: {
        enabled: true,
        modeTransitionHooks: { beforeTransition: [faultHook(10)], afterTransition: [] },
      },
      safety: { present: true },
    },
  });
  try {
    const rt = fx.runtime;
    const r = await fx.request("POST", "/v0/mode", { body: { mode: "FAULT" } });
    assert.equal(r.status, 200, r.text);
    assert.equal(await readSignal(rt, "sim0", "tempctl0", "setpoint"), 10);
    const pid = rt.registry.host("sim0")!.session!.pid;
    // Only the hook changes: sim0 stays up, its process the same.
    const report = await rt.reload({
      ...rt.config,
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: { beforeTransition: [faultHook(20)], afterTransition: [] },
      },
    });
    assert.deepEqual(report.applied, ["automation.mode_transition_hooks"]);
    await waitFor(
      "the fixed FAULT hook's setpoint applied to sim0, which stayed up",
      async () => await readSignal(rt, "sim0", "tempctl0", "setpoint") === 20,
      5000,
    );
    assert.equal(rt.registry.host("sim0")!.session!.pid, pid, "sim0 was restarted");
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await fx.close();
  }
});
