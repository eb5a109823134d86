/**
 * A before_transition hook leaving IDLE or FAULT runs while the mode is still IDLE or FAULT, where
 * the mode gate refuses every actuating call: with fail_on_error (the default) a call of an
 * actuating function in it vetoes the transition every time, so the machine can never be armed.
 * Start-up says so, once the inventory tells which functions actuate, naming the hook's key.
 */
import assert from "node:assert/strict";
import {
  PROVIDER_TEXT_CHARS,
  QUOTED_PROVIDER_ID_CHARS,
  RuntimeError,
} from "../../src/common/mod.ts";
import { rig } from "../helpers/rig.ts";
import { call, hook, inertSim, plantProvider } from "../safety/_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import { policyProvider } from "../helpers/policy_provider.ts";
import { load } from "../config/_helpers.ts";
import type { CallConfig, Config, HookConfig } from "../../src/config/mod.ts";

/** Automation off, these mode-transition hooks only: what each test here starts with. */
function hooksOnly(
  hooks: Config["automation"]["modeTransitionHooks"] = {
    beforeTransition: [],
    afterTransition: [],
  },
): Config["automation"] {
  return {
    enabled: false,
    behaviorTree: null,
    tickRateHz: 10,
    manualGatingPolicy: "BLOCK",
    parameters: [],
    modeTransitionHooks: hooks,
  };
}

/** before_transition[i] (its config key), fail_on_error unless `failOnError` is false. */
function beforeHook(
  i: number,
  from: HookConfig["from"],
  to: HookConfig["to"],
  calls: CallConfig[],
  failOnError = true,
): HookConfig {
  return hook(
    from,
    to,
    calls,
    failOnError,
    `automation.mode_transition_hooks.before_transition[${i}]`,
  );
}

/** An IDLE -> MANUAL before-hook at before_transition[0] setting relay 1 of `relayDevice`. */
function armingHook(relayDevice: string): HookConfig {
  return beforeHook(0, "IDLE", "MANUAL", [
    call(relayDevice, "set_relay_ch1", { enabled: true }, "arming.calls[0]"),
  ]);
}

/** The log lines that warn of a vetoing hook. */
function vetoWarnings(r: { readonly lines: readonly string[] }): string[] {
  return r.lines.filter((l) => l.includes("vetoes"));
}

Deno.test("Start-up warns of a before_transition hook leaving IDLE whose actuating call (fail_on_error) vetoes arming every time", async () => {
  const arming = armingHook("sim0/relayio0");
  // Without fail_on_error its failure only logs: no veto, no warning.
  const lenient = beforeHook(1, "*", "MANUAL", [
    call("sim0/relayio0", "set_relay_ch2", { enabled: true }, "lenient.calls[0]"),
  ], false);
  await using r = await rig({
    providers: [inertSim("sim0")],
    automation: hooksOnly({ beforeTransition: [arming, lenient], afterTransition: [] }),
  });
  // The defect it warns of: arming is vetoed by its own hook.
  await assert.rejects(r.kernel.modes.request("MANUAL"), /vetoed: .*Call blocked in IDLE mode/);
  const warned = vetoWarnings(r);
  assert.equal(warned.length, 1, r.lines.join("\n"));
  assert.match(warned[0]!, /^WARN /);
  assert.match(
    warned[0]!,
    /automation\.mode_transition_hooks\.before_transition\[0\] .*IDLE -> MANUAL.*arming\.calls\[0\] sim0\/relayio0 set_relay_ch1/,
  );
});

Deno.test("Start-up warns of a before_transition hook calling a function its provider's allowed_modes refuse in the mode being left", async () => {
  const disarm = beforeHook(0, "MANUAL", "IDLE", [
    call("pol/act0", "auto_only", {}, "disarm.calls[0]"),
  ]);
  await using r = await rig({
    providers: [policyProvider("pol")],
    arm: true,
    automation: hooksOnly({ beforeTransition: [disarm], afterTransition: [] }),
  });
  await assert.rejects(r.kernel.modes.request("IDLE"), /vetoed: .*allowed only in "AUTO"/);
  const warned = vetoWarnings(r);
  assert.equal(warned.length, 1, r.lines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*before_transition\[0\] vetoes MANUAL -> IDLE every time: its call disarm\.calls\[0\] pol\/act0 auto_only is refused while the mode is still MANUAL \(Call refused in MANUAL mode: .*allowed only in "AUTO"/,
  );
});

Deno.test("A reload that adds the provider a before_transition hook names warns of the veto, as start-up does", async () => {
  // The hook names sim1, not configured at start (the loader only warns): nothing resolves, so
  // start-up cannot tell; the reload that adds sim1 makes the hook veto every arming.
  const arming = armingHook("sim1/relayio0");
  await using r = await rig({
    providers: [inertSim("sim0")],
    automation: hooksOnly({ beforeTransition: [arming], afterTransition: [] }),
  });
  assert.deepEqual(vetoWarnings(r), []);
  const rt = r.kernel;
  const report = await rt.reload({
    ...rt.config,
    providers: [...rt.config.providers, inertSim("sim1")],
  });
  assert.deepEqual(report.providers.added, ["sim1"]);
  await assert.rejects(rt.modes.request("MANUAL"), /vetoed: .*Call blocked in IDLE mode/);
  const warned = vetoWarnings(r);
  assert.equal(warned.length, 1, `the reload said nothing of the veto:\n${r.lines.join("\n")}`);
  assert.match(
    warned[0]!,
    /^WARN .*before_transition\[0\] vetoes IDLE -> MANUAL every time: its call arming\.calls\[0\] sim1\/relayio0 set_relay_ch1/,
  );
});

Deno.test("A reload that adds a provider and the hook naming it warns of the veto once", async () => {
  await using r = await rig({ providers: [inertSim("sim0")], automation: hooksOnly() });
  const rt = r.kernel;
  const arming = armingHook("sim1/relayio0");
  await rt.reload({
    ...rt.config,
    providers: [...rt.config.providers, inertSim("sim1")],
    automation: {
      ...rt.config.automation,
      modeTransitionHooks: { beforeTransition: [arming], afterTransition: [] },
    },
  });
  const warned = vetoWarnings(r);
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
    automation: hooksOnly(loaded.automation.modeTransitionHooks),
  });
  const warned = vetoWarnings(r);
  assert.equal(warned.length, 1, r.lines.join("\n"));
  assert.match(
    warned[0]!,
    /before_transition\[0\] \(line 5:9\) vetoes IDLE -> MANUAL every time: its call automation\.mode_transition_hooks\.before_transition\[0\]\.calls\[0\] \(line 8:13\) sim0\/relayio0 set_relay_ch1/,
  );
});

Deno.test("After a reload that only moved the hooks' lines, the vetoing-hook warning names their new lines", async () => {
  const hooksAt = (top: string) => {
    const loaded = load(`${top}
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
    return loaded.automation.modeTransitionHooks;
  };
  await using r = await rig({ providers: [inertSim("sim0")], automation: hooksOnly(hooksAt("")) });
  const rt = r.kernel;
  // Two comment lines on top: the same hooks, each two lines further down. The reload adds a
  // provider, so the warning is said again (the inventory changed).
  const report = await rt.reload({
    ...rt.config,
    providers: [...rt.config.providers, inertSim("sim1")],
    automation: { ...rt.config.automation, modeTransitionHooks: hooksAt("# one\n# two") },
  });
  assert.deepEqual(report.providers.added, ["sim1"]);
  assert.ok(!report.applied.includes("automation.mode_transition_hooks"), "the hooks are the same");
  const warned = vetoWarnings(r);
  assert.equal(warned.length, 2, r.lines.join("\n"));
  assert.match(warned[0]!, /before_transition\[0\] \(line 5:9\) vetoes .*calls\[0\] \(line 8:13\)/);
  assert.match(
    warned[1]!,
    /before_transition\[0\] \(line 7:9\) vetoes .*calls\[0\] \(line 10:13\)/,
    "the warning after the reload names the lines the file has now",
  );
});

Deno.test("A provider restart whose rediscovery adds the actuating function a hook calls warns of the veto", async () => {
  const dir = await Deno.makeTempDir({ prefix: "vetoing-" });
  try {
    // The first process of `plant` declares only its READ function, every later one set_fan too.
    const arming = beforeHook(0, "IDLE", "MANUAL", [
      call("plant/plant0", "set_fan", { duty: { double: 0 } }, "arming.calls[0]"),
    ]);
    await using r = await rig({
      providers: [plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 })],
      automation: hooksOnly({ beforeTransition: [arming], afterTransition: [] }),
    });
    assert.deepEqual(vetoWarnings(r), []);
    const host = r.kernel.registry.host("plant")!;
    const pid = r.kill("plant");
    await waitFor("plant restarted", () => host.available && host.session!.pid !== pid);
    const warned = vetoWarnings(r);
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

Deno.test("Start-up's vetoing-hook warning and the veto name a hook call to a 10 kB provider id cut, not whole", async () => {
  const long = "p".repeat(10_000);
  const arming = beforeHook(0, "IDLE", "MANUAL", [
    call(`${long}/plant0`, "set_fan", { duty: { double: 0 } }, "arming.calls[0]"),
  ]);
  await using r = await rig({
    providers: [plantProvider(long)],
    automation: hooksOnly({ beforeTransition: [arming], afterTransition: [] }),
  });
  const named = `${"p".repeat(QUOTED_PROVIDER_ID_CHARS)}\u2026/plant0 set_fan`;
  const vetoed = await r.kernel.modes.request("MANUAL").then(
    () => assert.fail("the hook vetoes"),
    (e: unknown) => e,
  );
  assert.ok(vetoed instanceof RuntimeError);
  assert.ok(!vetoed.message.includes(long), vetoed.message.slice(0, 400));
  assert.match(vetoed.message, new RegExp(`before_transition\\[0\\] call ${named} failed: `));
  const warned = vetoWarnings(r);
  assert.equal(warned.length, 1, r.lines.map((l) => l.slice(0, 300)).join("\n"));
  assert.ok(!warned[0]!.includes(long), warned[0]!.slice(0, 400));
  assert.ok(
    warned[0]!.includes(`arming.calls[0] ${named} is refused while the mode is still IDLE`),
  );
});

Deno.test("A veto names a hook call's unknown function name of 10 kB cut to PROVIDER_TEXT_CHARS", async () => {
  const fn = "f".repeat(10_000);
  await using r = await rig({
    providers: [plantProvider("plant")],
    automation: hooksOnly({
      beforeTransition: [beforeHook(0, "MANUAL", "IDLE", [call("plant/plant0", fn, {})])],
      afterTransition: [],
    }),
  });
  assert.equal(await r.kernel.modes.request("MANUAL"), "MANUAL");
  const vetoed = await r.kernel.modes.request("IDLE").then(
    () => assert.fail("the hook vetoes"),
    (e: unknown) => e,
  );
  assert.ok(vetoed instanceof RuntimeError);
  const cut = `${"f".repeat(PROVIDER_TEXT_CHARS)}\u2026`;
  assert.equal(
    vetoed.message,
    "Mode transition MANUAL -> IDLE vetoed: before_transition hook " +
      `automation.mode_transition_hooks.before_transition[0] call plant/plant0 ${cut} failed: ` +
      `NOT_FOUND: Function not found: plant/plant0 "${cut}"`,
  );
});
