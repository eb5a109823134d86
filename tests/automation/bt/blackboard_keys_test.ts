/**
 * A blackboard key a tree reads that nothing writes: only the tree writes its blackboard (output
 * ports, scripts, SubTree ports; parameters are not mirrored onto it), so the read has no value
 * at every tick. Refused at load (start-up, reload, --check-config) naming the key and the node's
 * FILE:LINE:COL; a warning where the node goes on without the value.
 */
import { deepStrictEqual, ok, strictEqual as equal } from "node:assert/strict";
import { loadBehaviorTree } from "../../../src/automation/bt/mod.ts";
import { memFiles, xmlRoot } from "./_helpers.ts";

function load(body: string) {
  const path = "/bt/main.xml";
  return loadBehaviorTree(path, memFiles({ [path]: xmlRoot(body, "Main") }));
}

Deno.test("loadBehaviorTree refuses a tree reading a blackboard key nothing writes, naming the key and FILE:LINE:COL", () => {
  const { tree, diagnostics } = load(`<BehaviorTree ID="Main">
  <Sequence>
    <CallDevice device_handle="sim0/motorctl0" function_name="{never_set}" />
    <Script code="x := also_never + 1" />
  </Sequence>
</BehaviorTree>`);
  equal(tree, undefined, "the tree is refused");
  deepStrictEqual(
    diagnostics.map((d) => [d.severity, `${d.file}:${d.line}:${d.column}`, d.path]),
    [
      ["error", "/bt/main.xml:4:5", "Main/Sequence[0]/CallDevice[0]"],
      ["error", "/bt/main.xml:5:5", "Main/Sequence[0]/Script[1]"],
    ],
  );
  ok(
    /port 'function_name': blackboard entry "never_set" is read but nothing/.test(
      diagnostics[0]!.message,
    ),
    diagnostics[0]!.message,
  );
  ok(/port 'code': blackboard entry "also_never" is read/.test(diagnostics[1]!.message));
});

Deno.test("loadBehaviorTree: a key written by an output port, a script, a SubTree port or through a SubTree remap loads", () => {
  const { tree, diagnostics } = load(`<BehaviorTree ID="Main">
  <Sequence>
    <GetParameter param="p" value="{target}" />
    <Script code="@fn := 'set_mode'" />
    <SubTree ID="Inner" _autoremap="true" dev="sim0/motorctl0" out="{written_inside}" />
    <CheckBool value="{written_inside}" />
    <CallDevice device_handle="sim0/tempctl0" function_name="{fn}" _skipIf="target > 100" />
  </Sequence>
</BehaviorTree>
<BehaviorTree ID="Inner">
  <Sequence>
    <SetBlackboard value="true" output_key="{out}" />
    <ReadSignal device_handle="{dev}" signal_id="x" value="{v}" _skipIf="@fn == ''" />
  </Sequence>
</BehaviorTree>`);
  deepStrictEqual(diagnostics, []);
  ok(tree);
});

Deno.test("loadBehaviorTree only warns where the node goes on without the value (now_ms: the clock)", () => {
  const { tree, diagnostics } = load(`<BehaviorTree ID="Main">
  <PeriodicPulseWindow now_ms="{never_set}" active="{a}" />
</BehaviorTree>`);
  ok(tree, "the tree loads");
  deepStrictEqual(diagnostics.map((d) => [d.severity, d.line]), [["warning", 3]]);
  ok(/"never_set".*goes on without it/.test(diagnostics[0]!.message));
});

Deno.test("loadBehaviorTree: a tree nothing runs (an included library's) reads nothing", () => {
  const path = "/bt/main.xml";
  const { tree, diagnostics } = loadBehaviorTree(
    path,
    memFiles({
      [path]: xmlRoot(
        `<include path="lib.xml"/>\n<BehaviorTree ID="Main"><SubTree ID="Used" v="1"/></BehaviorTree>`,
        "Main",
      ),
      "/bt/lib.xml": xmlRoot(
        `<BehaviorTree ID="Used"><CheckBool value="{v}"/></BehaviorTree>\n` +
          `<BehaviorTree ID="Unused"><CheckBool value="{caller_sets}"/></BehaviorTree>`,
      ),
    }),
  );
  deepStrictEqual(diagnostics, []);
  ok(tree);
});
