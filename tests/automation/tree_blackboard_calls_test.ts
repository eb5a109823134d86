/**
 * Calls whose device, function or args a tree takes from the blackboard (`{var}` ports): the AUTO
 * gate cannot check them (their values exist only once the tree runs), so they are checked at the
 * call. A refusal there is the tree's own error: it names where the CallDevice node is written
 * (`FILE:LINE:COL`) and is listed in automation status `refused_calls`, never as a device outage.
 * Over a real kernel with the simulated providers sim0 and sim1 (in-process).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { automationConfig, cached, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** Every CallDevice runs at each pass: a refused one does not stop the others. */
const TREE = treeXml(`<Sequence>
      <Script code="fn := 'no_such_fn'; bad_json := 'not json'; dev := 'simX/motorctl0'" />
      <Script code="too_fast := '{&quot;motor_index&quot;: 1, &quot;duty&quot;: 2.0}'" />
      <ForceSuccess>
        <CallDevice name="by_fn" device_handle="sim0/motorctl0" function_name="{fn}" />
      </ForceSuccess>
      <ForceSuccess>
        <CallDevice name="by_json" device_handle="sim0/tempctl0" function_name="set_setpoint"
          args="{bad_json}" />
      </ForceSuccess>
      <ForceSuccess>
        <CallDevice name="by_args" device_handle="sim1/motorctl0" function_name="set_motor_duty"
          args="{too_fast}" />
      </ForceSuccess>
      <ForceSuccess>
        <CallDevice name="by_dev" device_handle="{dev}" function_name="set_motor_duty"
          args='json:{"motor_index": 1, "duty": 0.1}' />
      </ForceSuccess>
      <ForceSuccess>
        <CallDevice name="unset" device_handle="sim1/tempctl0" function_name="{never_set}" />
      </ForceSuccess>
      <!-- Written only in a branch never taken: the tree loads, the call finds no value. -->
      <Script code="never_set := 'set_mode'" _skipIf="true" />
    </Sequence>`);

/** `FILE:LINE:COL` of the CallDevice named `name` in `text` (COL: its `<`, 1-based). */
function placeOf(file: string, text: string, name: string): string {
  const lines = text.split("\n");
  const line = lines.findIndex((l) => l.includes(`<CallDevice name="${name}"`));
  assert.ok(line >= 0, name);
  return `${file}:${line + 1}:${lines[line]!.indexOf("<CallDevice") + 1}`;
}

Deno.test("AutomationEngine: a tree call whose names or args come from the blackboard and are refused at the call names its node's FILE:LINE:COL and is listed in refused_calls", async () => {
  const dir = await TreeDir.create();
  try {
    const path = await dir.write("bb_calls.xml", TREE);
    await using r = await rig({
      config: automationConfig(path, {
        config: { providers: [simProvider("sim0"), simProvider("sim1")] },
      }),
      arm: true,
    });
    const rt = r.kernel;
    const engine = rt.automation!;
    // Nothing the gate can judge before the tree runs: AUTO is entered.
    assert.equal(engine.autoProblem(), null);
    await rt.modes.request("AUTO");
    const handles = [
      "sim0/motorctl0",
      "sim0/tempctl0",
      "sim1/motorctl0",
      "simX/motorctl0",
      "sim1/tempctl0",
    ];
    // Every call refused twice, or passes enough for that (about 4 ticks each) have run.
    await waitFor("every call refused twice", () => {
      const listed = engine.status().refused_calls.map((c) => c.device_handle);
      return handles.every((h) => listed.includes(h)) || engine.tickCounts().ticks >= 60;
    });
    await rt.modes.request("MANUAL");
    const s = engine.status();
    assert.deepEqual(s.device_outages, [], "the tree's errors are no device outage");
    const at = (name: string) => `(CallDevice at ${placeOf(path, TREE, name)})`;
    const refused = Object.fromEntries(
      s.refused_calls.map((c) => [c.device_handle, [c.refused_by, c.last_refusal]]),
    );
    assert.deepEqual(refused, {
      "sim0/motorctl0": [
        "unknown_function",
        `Function not found: sim0/motorctl0 "no_such_fn" ${at("by_fn")}`,
      ],
      "sim0/tempctl0": [
        "validation",
        `invalid JSON in args: ${jsonError("not json")} ${at("by_json")}`,
      ],
      "sim1/motorctl0": ["validation", `args.duty: 2 is above the maximum 1 ${at("by_args")}`],
      "simX/motorctl0": ["unknown_provider", `Provider not found: simX ${at("by_dev")}`],
      "sim1/tempctl0": [
        "validation",
        `port 'function_name': blackboard entry "never_set" has no value yet ${at("unset")}`,
      ],
    });
  } finally {
    await dir.dispose();
  }
});

/** JSON.parse's message for `text`. */
function jsonError(text: string): string {
  try {
    JSON.parse(text);
  } catch (err) {
    return (err as Error).message;
  }
  throw new Error(`${text} parses`);
}

Deno.test("AutomationEngine: a CallDevice refused because its device_handle entry had no value is no longer listed once that node calls its device", async () => {
  const dir = await TreeDir.create();
  try {
    // `dev` is set once the test raises motor_duty: until then the call is refused, listed under
    // its port's text `{dev}`.
    const path = await dir.write(
      "late_dev.xml",
      treeXml(`<Sequence>
      <GetParameter param="motor_duty" value="{duty}" />
      <Script code="dev := 'sim0/motorctl0'" _skipIf="duty &lt; 0.5" />
      <ForceSuccess>
        <CallDevice name="late" device_handle="{dev}" function_name="set_motor_duty"
          args='json:{"motor_index": 1, "duty": 0.1}' />
      </ForceSuccess>
    </Sequence>`),
    );
    await using r = await rig({ config: automationConfig(path), arm: true });
    const rt = r.kernel;
    const engine = rt.automation!;
    await rt.modes.request("AUTO");
    await waitFor(
      "the unset handle listed",
      () => engine.status().refused_calls.some((c) => c.device_handle === "{dev}"),
    );
    rt.parameters!.set("motor_duty", 0.6);
    await waitFor(
      "the node's call made",
      () => cached(rt, "sim0/motorctl0", "motor1_duty") === 0.1,
    );
    assert.deepEqual(
      engine.status().refused_calls.map((c) => c.device_handle),
      [],
      "the node now calls its device, yet its earlier refusal is still listed",
    );
    assert.equal(rt.modes.current(), "AUTO");
  } finally {
    await dir.dispose();
  }
});
