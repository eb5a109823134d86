/**
 * A before_transition hook leaving IDLE or FAULT runs while the mode is still IDLE or FAULT, where
 * the mode gate refuses every actuating call: with fail_on_error (the default) a call of an
 * actuating function in it vetoes the transition every time, so the machine can never be armed.
 * Start-up says so, once the inventory tells which functions actuate, naming the hook's key.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { call, hook, inertSim, plantProvider } from "../safety/_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import { policyProvider } from "../helpers/policy_provider.ts";
import { load } from "../config/_helpers.ts";

Deno.test("Start-up warns of a before_transition hook leaving IDLE whose actuating call (fail_on_error) vetoes arming every time", async () => {
  const arming = hook(
    "IDLE",
    "MANUAL",
    [
      call("sim0/relayio0", "set_relay_ch1", { enabled: true }, "arming.calls[0]"),
    ],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  // Without fail_on_error its failure only logs: no veto, no warning.
  const lenient = hook(
    "*",
    "MANUAL",
    [
      call("sim0/relayio0", "set_relay_ch2", { enabled: true }, "lenient.calls[0]"),
    ],
    false,
    "automation.mode_transition_hooks.before_transition[1]",
  );
  await using r = await rig({
    providers: [inertSim("sim0")],
    automation: {
      enabled: false,
      behaviorTree: null,
      tickRateHz: 10,
      manualGatingPolicy: "BLOCK",
      parameters: [],
      modeTransitionHooks: { beforeTransition: [arming, lenient], afterTransition: [] },
    },
  });
  // The defect it warns of: arming is vetoed by its own hook.
  await assert.rejects(r.kernel.modes.request("MANUAL"), /vetoed: .*Call blocked in IDLE mode/);
  const warned = r.lines.filter((l) => l.includes("vetoes"));
  assert.equal(warned.length, 1, r.lines.join("\n"));
  assert.match(warned[0]!, /^WARN /);
  assert.match(
    warned[0]!,
    /automation\.mode_transition_hooks\.before_transition\[0\] .*IDLE -> MANUAL.*arming\.calls\[0\] sim0\/relayio0 set_relay_ch1/,
  );
});

Deno.test("Start-up warns of a before_transition hook calling a function its provider's allowed_modes refuse in the mode being left", async () => {
  const disarm = hook(
    "MANUAL",
    "IDLE",
    [
      call("pol/act0", "auto_only", {}, "disarm.calls[0]"),
    ],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  await using r = await rig({
    providers: [policyProvider("pol")],
    arm: true,
    automation: {
      enabled: false,
      behaviorTree: null,
      tickRateHz: 10,
      manualGatingPolicy: "BLOCK",
      parameters: [],
      modeTransitionHooks: { beforeTransition: [disarm], afterTransition: [] },
    },
  });
  await assert.rejects(r.kernel.modes.request("IDLE"), /vetoed: .*allowed only in AUTO/);
  const warned = r.lines.filter((l) => l.includes("vetoes"));
  assert.equal(warned.length, 1, r.lines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*before_transition\[0\] vetoes MANUAL -> IDLE every time: its call disarm\.calls\[0\] pol\/act0 auto_only is refused while the mode is still MANUAL \(Call refused in MANUAL mode: .*allowed only in AUTO/,
  );
});

Deno.test("A reload that adds the provider a before_transition hook names warns of the veto, as start-up does", async () => {
  // The hook names sim1, not configured at start (the loader only warns): nothing resolves, so
  // start-up cannot tell; the reload that adds sim1 makes the hook veto every arming.
  const arming = hook(
    "IDLE",
    "MANUAL",
    [call("sim1/relayio0", "set_relay_ch1", { enabled: true }, "arming.calls[0]")],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  await using r = await rig({
    providers: [inertSim("sim0")],
    automation: {
      enabled: false,
      behaviorTree: null,
      tickRateHz: 10,
      manualGatingPolicy: "BLOCK",
      parameters: [],
      modeTransitionHooks: { beforeTransition: [arming], afterTransition: [] },
    },
  });
  assert.deepEqual(r.lines.filter((l) => l.includes("vetoes")), []);
  const rt = r.kernel;
  const report = await rt.reload({
    ...rt.config,
    providers: [...rt.config.providers, inertSim("sim1")],
  });
  assert.deepEqual(report.providers.added, ["sim1"]);
  await assert.rejects(rt.modes.request("MANUAL"), /vetoed: .*Call blocked in IDLE mode/);
  const warned = r.lines.filter((l) => l.includes("vetoes"));
  assert.equal(warned.length, 1, `the reload said nothing of the veto:\n${r.lines.join("\n")}`);
  assert.match(
    warned[0]!,
    /^WARN .*before_transition\[0\] vetoes IDLE -> MANUAL every time: its call arming\.calls\[0\] sim1\/relayio0 set_relay_ch1/,
  );
});

Deno.test("A reload that adds a provider and the hook naming it warns of the veto once", async () => {
  await using r = await rig({
    providers: [inertSim("sim0")],
    automation: {
      enabled: false,
      behaviorTree: null,
      tickRateHz: 10,
      manualGatingPolicy: "BLOCK",
      parameters: [],
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    },
  });
  const rt = r.kernel;
  const arming = hook(
    "IDLE",
    "MANUAL",
    [call("sim1/relayio0", "set_relay_ch1", { enabled: true }, "arming.calls[0]")],
    true,
    "automation.mode_transition_hooks.before_transition[0]",
  );
  await rt.reload({
    ...rt.config,
    providers: [...rt.config.providers, inertSim("sim1")],
    automation: {
      ...rt.config.automation,
      modeTransitionHooks: { beforeTransition: [arming], afterTransition: [] },
    },
  });
  const warned = r.lines.filter((l) => l.includes("vetoes"));
  assert.equal(warned.length, 1, r.lines.join("\n"));
});

Deno.test("The vetoing-hook warning names the line and column of the hook and of its call in the file", async () => {
  const loaded = load(`
providers: [{id: sim0, command: prov}]
automation:
  mode_transition_hooks:
    before_transition:
      - from: IDLE
        to: MANUAL
        calls:
          - device_handle: sim0/relayio0
            function_name: set_relay_ch1
            args: {enabled: true}
`).config;
  assert.ok(loaded !== null);
  await using r = await rig({
    providers: [inertSim("sim0")],
    automation: {
      enabled: false,
      behaviorTree: null,
      tickRateHz: 10,
      manualGatingPolicy: "BLOCK",
      parameters: [],
      modeTransitionHooks: loaded.automation.modeTransitionHooks,
    },
  });
  const warned = r.lines.filter((l) => l.includes("vetoes"));
  assert.equal(warned.length, 1, r.lines.join("\n"));
  assert.match(
    warned[0]!,
    /before_transition\[0\] \(line 5:9\) vetoes IDLE -> MANUAL every time: its call automation\.mode_transition_hooks\.before_transition\[0\]\.calls\[0\] \(line 8:13\) sim0\/relayio0 set_relay_ch1/,
  );
});

Deno.test("A provider restart whose rediscovery adds the actuating function a hook calls warns of the veto", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vetoing-" });
  try {
    // The first process of `plant` declares only its READ function, every later one set_fan too.
    const arming = hook(
      "IDLE",
      "MANUAL",
      [call("plant/plant0", "set_fan", { duty: { double: 0 } }, "arming.calls[0]")],
      true,
      "automation.mode_transition_hooks.before_transition[0]",
    );
    await using r = await rig({
      providers: [plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 })],
      automation: {
        enabled: false,
        behaviorTree: null,
        tickRateHz: 10,
        manualGatingPolicy: "BLOCK",
        parameters: [],
        modeTransitionHooks: { beforeTransition: [arming], afterTransition: [] },
      },
    });
    assert.deepEqual(r.lines.filter((l) => l.includes("vetoes")), []);
    const host = r.kernel.registry.host("plant")!;
    const pid = r.kill("plant");
    await waitFor("plant restarted", () => host.available && host.session!.pid !== pid);
    const warned = r.lines.filter((l) => l.includes("vetoes"));
    assert.equal(
      warned.length,
      1,
      `the rediscovery said nothing of the veto:\n${r.lines.join("\n")}`,
    );
    assert.match(warned[0]!, /before_transition\[0\] vetoes IDLE -> MANUAL every time/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
