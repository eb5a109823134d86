import { deepStrictEqual, strictEqual as equal, throws } from "node:assert/strict";
import { buildXml, ManualClock, StubWorld, xmlRoot } from "./_helpers.ts";

function tree(body: string, opts: { world?: StubWorld; clock?: ManualClock } = {}) {
  return buildXml(xmlRoot(`<BehaviorTree ID="M">${body}</BehaviorTree>`), opts);
}

Deno.test("AlwaysSuccess and AlwaysFailure return their status", () => {
  equal(tree(`<AlwaysSuccess/>`).tickRoot(), "SUCCESS");
  equal(tree(`<AlwaysFailure/>`).tickRoot(), "FAILURE");
});

Deno.test("Sleep is RUNNING until msec elapsed on the monotonic clock", () => {
  const clock = new ManualClock();
  const t = tree(`<Sleep msec="100"/>`, { clock });
  equal(t.tickRoot(), "RUNNING");
  clock.advance(99);
  equal(t.tickRoot(), "RUNNING");
  clock.advance(1);
  equal(t.tickRoot(), "SUCCESS");
  equal(t.tickRoot(), "RUNNING");
});

Deno.test("Sleep with msec 0 succeeds at once", () => {
  equal(tree(`<Sleep msec="0"/>`).tickRoot(), "SUCCESS");
});

Deno.test("SetBlackboard stores a literal that typed readers convert", () => {
  const t = tree(
    `<Sequence><SetBlackboard value="42" output_key="k"/>` +
      `<ScriptCondition code="k == 42"/><Repeat num_cycles="{k}"><AlwaysSuccess/></Repeat>` +
      `</Sequence>`,
  );
  equal(t.tickRoot(), "RUNNING");
  deepStrictEqual(t.blackboard.get("k"), { type: "int64", value: 42 });
});

Deno.test("SetBlackboard copies another entry with its type", () => {
  const t = tree(
    `<Sequence><Script code="src := 2.5"/><SetBlackboard value="{src}" output_key="dst"/>` +
      `</Sequence>`,
  );
  equal(t.tickRoot(), "SUCCESS");
  deepStrictEqual(t.blackboard.get("dst"), { type: "double", value: 2.5 });
});

Deno.test("Script always succeeds and writes the blackboard", () => {
  const t = tree(`<Script code="a := 1; b := a + 1; c := 'x'"/>`);
  equal(t.tickRoot(), "SUCCESS");
  deepStrictEqual(t.blackboard.get("b"), { type: "double", value: 2 });
  deepStrictEqual(t.blackboard.get("c"), { type: "string", value: "x" });
});

Deno.test("ScriptCondition succeeds when the expression is true", () => {
  equal(
    tree(`<Sequence><Script code="t := 3"/><ScriptCondition code="t &lt; 5"/></Sequence>`)
      .tickRoot(),
    "SUCCESS",
  );
  equal(
    tree(`<Sequence><Script code="t := 7"/><ScriptCondition code="t &lt; 5"/></Sequence>`)
      .tickRoot(),
    "FAILURE",
  );
});

Deno.test("Script throws (tagged with the node path) on an unknown variable", () => {
  const t = tree(`<Sequence><AlwaysSuccess/><Script code="y := nope + 1"/></Sequence>`);
  throws(() => t.tickRoot(), (err: Error & { nodePath?: string }) => {
    equal(err.nodePath, "M/Sequence[0]/Script[1]");
    return /nope/.test(err.message);
  });
});

Deno.test("TreeNode _skipIf/_successIf/_failureIf short-circuit the node", () => {
  const world = new StubWorld();
  const t = tree(
    `<Sequence><Script code="f := true"/>` +
      `<Stub id="a" _skipIf="f"/><Stub id="b" _successIf="f"/><Stub id="c"/>` +
      `<Stub id="d" _failureIf="f"/></Sequence>`,
    { world },
  );
  equal(t.tickRoot(), "FAILURE");
  deepStrictEqual(world.log, ["tick c"]);
});

Deno.test("TreeNode _while halts the RUNNING node and skips it when the condition turns false", () => {
  const world = new StubWorld();
  world.plan("a", "RUNNING");
  const t = tree(`<Sequence><Stub id="a" _while="go"/><Stub id="b"/></Sequence>`, { world });
  t.blackboard.set("go", { type: "bool", value: true });
  equal(t.tickRoot(), "RUNNING");
  t.blackboard.set("go", { type: "bool", value: false });
  equal(t.tickRoot(), "SUCCESS");
  deepStrictEqual(world.log, ["tick a", "halt a", "tick b"]);
});

Deno.test("TreeNode _onSuccess/_onFailure/_post/_onHalted run their scripts", () => {
  const world = new StubWorld();
  world.plan("r", "RUNNING");
  const t = tree(
    `<Parallel success_count="3" failure_count="2">` +
      `<AlwaysSuccess _onSuccess="s := 1" _post="p := 'ok'"/>` +
      `<AlwaysFailure _onFailure="f := 1"/>` +
      `<Stub id="r" _onHalted="h := 1"/><AlwaysSuccess/></Parallel>`,
    { world },
  );
  equal(t.tickRoot(), "RUNNING");
  equal(t.blackboard.get("s")?.value, 1);
  equal(t.blackboard.get("f")?.value, 1);
  equal(t.blackboard.get("p")?.value, "ok");
  equal(t.blackboard.get("h"), undefined);
  t.haltTree();
  equal(t.blackboard.get("h")?.value, 1);
});
