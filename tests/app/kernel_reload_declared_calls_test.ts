/**
 * The declared-call preflight (contract config.md sec. 6: hook and safety calls that do not
 * resolve against the discovered devices, logged at ERROR) across a reload: a reload that puts in
 * force a ladder or a hook whose call does not resolve says so, as start-up does, naming the
 * call's key and its line:column in the file; said once per reload. A call to a configured
 * provider whose inventory is not known (the reload failed to start or register it) is not judged
 * until it lists its inventory: it is down, not misconfigured.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { refuseRegistration } from "../helpers/unregistered.ts";
import { call, inertSim } from "../safety/_fixture.ts";
import { load } from "../config/_helpers.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { failedStartText } from "../../src/providers/mod.ts";

/** The lines of the declared-call preflight. */
function unresolved(r: { readonly lines: readonly string[] }): string[] {
  return r.lines.filter((l) => l.includes("declared call does not resolve"));
}

Deno.test("A reload that changes the e-stop ladder or a hook to a call that does not resolve says so at ERROR with the call's line:column, as start-up does, once", async () => {
  await using r = await rig({ providers: [inertSim("sim0")] });
  const rt = r.kernel;
  assert.deepEqual(unresolved(r), []);
  // An operator's typo in the ladder (set_relay_ch9: the device has no such function) and in a
  // hook (a device that does not exist).
  const loaded = load(`
providers: [{id: sim0, command: prov}]
safety:
  safe_state:
    setpoints:
      - device_handle: sim0/relayio0
        function_name: set_relay_ch9
        args: {enabled: false}
automation:
  mode_transition_hooks:
    after_transition:
      - from: "*"
        to: MANUAL
        calls:
          - device_handle: sim0/relayio9
            function_name: set_relay_ch1
            args: {enabled: true}
`).config;
  assert.ok(loaded !== null);
  const report = await rt.reload({
    ...rt.config,
    safety: loaded.safety,
    automation: {
      ...rt.config.automation,
      modeTransitionHooks: loaded.automation.modeTransitionHooks,
    },
  });
  assert.ok(report.applied.includes("safety"), JSON.stringify(report));
  assert.ok(report.applied.includes("automation.mode_transition_hooks"), JSON.stringify(report));
  const said = unresolved(r);
  assert.equal(said.length, 2, `the reload said nothing of them:\n${r.lines.join("\n")}`);
  assert.match(
    said[0]!,
    /^ERROR .*declared call does not resolve: automation\.mode_transition_hooks\.after_transition\[0\]\.calls\[0\] \(line 14:13\): .*sim0\/relayio9/,
  );
  assert.match(
    said[1]!,
    /^ERROR .*declared call does not resolve: safety\.safe_state\.setpoints\[0\] \(line 5:9\): .*set_relay_ch9/,
  );
  // A reload that also adds a provider says them once, not once per section.
  const before = r.lines.length;
  await rt.reload({ ...rt.config, providers: [...rt.config.providers, inertSim("sim1")] });
  assert.equal(unresolved({ lines: r.lines.slice(before) }).length, 2, r.lines.join("\n"));
});

/** sim0 and sim1 up, the ladder setting a relay of sim1 (it resolves at start-up). */
async function sim1LadderRig() {
  const r = await rig({
    programs: false,
    providers: [inertSim("sim0"), inertSim("sim1")],
    safety: {
      setpoints: [
        call(
          "sim1/relayio0",
          "set_relay_ch1",
          { enabled: false },
          "safety.safe_state.setpoints[0]",
        ),
      ],
    },
  });
  try {
    assert.deepEqual(unresolved(r), [], "start-up: the ladder resolves");
  } catch (err) {
    await r[Symbol.asyncDispose]();
    throw err;
  }
  return r;
}

Deno.test("A reload whose restart of a provider fails says no ladder call to it does not resolve: it is down, not misconfigured", async () => {
  await using r = await sim1LadderRig();
  const rt = r.kernel;
  const sim1 = rt.config.providers.find((p) => p.id === "sim1")!;
  const report = await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...sim1, command: "/nonexistent/provider" }],
    // The same reload changes the ladder (a call to sim0 added): the calls in force are checked.
    safety: {
      ...rt.config.safety,
      safeState: {
        ...rt.config.safety.safeState,
        setpoints: [
          ...rt.config.safety.safeState.setpoints,
          call(
            "sim0/relayio0",
            "set_relay_ch1",
            { enabled: false },
            "safety.safe_state.setpoints[1]",
          ),
        ],
      },
    },
  });
  assert.match(report.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  assert.ok(report.applied.includes("safety"), JSON.stringify(report));
  // Before: "declared call does not resolve: safety.safe_state.setpoints[0]: device not found:
  // sim1/relayio0" -- a call to a device sim1 listed, its process down, read as a typo (the e-stop
  // plan log judges an expectation on it once it lists its inventory: docs/safety.md).
  assert.deepEqual(unresolved(r), [], r.lines.join("\n"));
  // Once a reload brings it back, listing its inventory, the calls to it are judged again: a typo
  // in its ladder call is said then.
  const typo = call(
    "sim1/relayio0",
    "set_relay_ch9",
    { enabled: false },
    "safety.safe_state.setpoints[0]",
  );
  await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, sim1],
    safety: {
      ...rt.config.safety,
      safeState: { ...rt.config.safety.safeState, setpoints: [typo] },
    },
  });
  assert.ok(rt.registry.host("sim1")?.available, "sim1 is up");
  const said = unresolved(r);
  assert.equal(said.length, 1, r.lines.join("\n"));
  assert.match(said[0]!, /setpoints\[0\].*set_relay_ch9/);
});

Deno.test("A reload that fails to register a provider's replacement says no ladder call to it names a provider not found: it is configured", async () => {
  await using r = await sim1LadderRig();
  const rt = r.kernel;
  // A host listener that fails refuses the registration of sim1's replacement.
  refuseRegistration(rt.registry, "sim1");
  const sim1 = rt.config.providers.find((p) => p.id === "sim1")!;
  const report = await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...sim1, timeoutMs: sim1.timeoutMs + 1 }],
    // The same reload changes the ladder (a call to sim0 added): the calls in force are checked.
    safety: {
      ...rt.config.safety,
      safeState: {
        ...rt.config.safety.safeState,
        setpoints: [
          ...rt.config.safety.safeState.setpoints,
          call(
            "sim0/relayio0",
            "set_relay_ch1",
            { enabled: false },
            "safety.safe_state.setpoints[1]",
          ),
        ],
      },
    },
  });
  assert.match(
    report.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);
  // Before: "declared call does not resolve: safety.safe_state.setpoints[0]: provider not found:
  // sim1" -- sim1 is in the file; its process is not registered.
  assert.deepEqual(unresolved(r), [], r.lines.join("\n"));
});

Deno.test("A provider that listed no devices (its host check unmet) and then went down has a known inventory: a reload's ladder call to a device of it does not resolve", async () => {
  // The simulated provider needing a device node that does not exist: up, listing nothing.
  const dir = tempDir("inventory-empty-");
  const yaml = `${dir}/sim1.yaml`;
  await Deno.writeTextFile(
    yaml,
    `simulation: { mode: inert }\ndevices: [{ id: relayio0, type: relayio }]\n` +
      `host:\n  device_nodes: [${JSON.stringify(`${dir}/missing-node`)}]\n`,
  );
  await using r = await rig({
    programs: false,
    providers: [
      inertSim("sim0"),
      inertSim("sim1", { yaml, restart: { backoffMs: [60_000, 60_000, 60_000] } }),
    ],
  });
  const rt = r.kernel;
  const sim1 = rt.registry.host("sim1")!;
  assert.equal(sim1.hostCheck()?.status, "unmet", "sim1 is up with its host check unmet");
  assert.deepEqual(sim1.devices, []);
  // It goes down, having listed its inventory: none; its restart is a minute away (a reload
  // retries a provider whose circuit is open, not one in backoff).
  r.kill("sim1");
  await waitFor("sim1 in backoff", () => sim1.state.phase === "BACKOFF");
  await rt.reload({
    ...rt.config,
    safety: {
      ...rt.config.safety,
      safeState: {
        ...rt.config.safety.safeState,
        setpoints: [
          call(
            "sim1/relayio0",
            "set_relay_ch1",
            { enabled: false },
            "safety.safe_state.setpoints[0]",
          ),
        ],
      },
    },
  });
  // Before: nothing said -- sim1 read as "inventory unknown" (down, listing nothing), as if a
  // reload's start of it had failed; the call named a device it does not list, and an e-stop's
  // ladder would fail on it.
  const said = unresolved(r);
  assert.equal(said.length, 1, r.lines.join("\n"));
  assert.match(said[0]!, /^ERROR .*setpoints\[0\].*sim1\/relayio0/);
});
