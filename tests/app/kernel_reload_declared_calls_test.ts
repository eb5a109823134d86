/**
 * The declared-call preflight (contract config.md sec. 6: hook and safety calls that do not
 * resolve against the discovered devices, logged at ERROR) across a reload: a reload that puts in
 * force a ladder or a hook whose call does not resolve says so, as start-up does, naming the
 * call's key and its line:column in the file; said once per reload.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { inertSim } from "../safety/_fixture.ts";
import { load } from "../config/_helpers.ts";

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
