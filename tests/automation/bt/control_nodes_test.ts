import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import type { NodeStatus } from "../../../src/automation/bt/mod.ts";
import { RuntimeError } from "../../../src/common/mod.ts";
import { buildXml, FakeServices, flush, StubWorld, xmlRoot } from "./_helpers.ts";

/**
 * One case: a tree body, per-stub status plans (one status per tick, last repeats) and the
 * expected `STATUS: log` line per tick (ticks and halts of the stubs, in order).
 */
interface Case {
  name: string;
  body: string;
  plans: Record<string, NodeStatus[]>;
  expect: string[];
}

function runCase(c: Case): string[] {
  const world = new StubWorld();
  for (const [id, plan] of Object.entries(c.plans)) world.plan(id, ...plan);
  const tree = buildXml(xmlRoot(`<BehaviorTree ID="M">${c.body}</BehaviorTree>`), { world });
  const out: string[] = [];
  for (let i = 0; i < c.expect.length; i++) {
    const s = tree.tickRoot();
    out.push(`${s}: ${world.log.splice(0).join(",")}`);
  }
  return out;
}

const CASES: Case[] = [
  {
    name: "Sequence ticks children in order and succeeds when all succeed",
    body: `<Sequence><Stub id="a"/><Stub id="b"/></Sequence>`,
    plans: {},
    expect: ["SUCCESS: tick a,tick b", "SUCCESS: tick a,tick b"],
  },
  {
    name: "Sequence keeps its position while a child is RUNNING (earlier children not re-ticked)",
    body: `<Sequence><Stub id="a"/><Stub id="b"/></Sequence>`,
    plans: { a: ["SUCCESS", "FAILURE"], b: ["RUNNING", "RUNNING", "SUCCESS"] },
    expect: ["RUNNING: tick a,tick b", "RUNNING: tick b", "SUCCESS: tick b"],
  },
  {
    name: "Sequence restarts from the first child after a FAILURE",
    body: `<Sequence><Stub id="a"/><Stub id="b"/><Stub id="c"/></Sequence>`,
    plans: { b: ["FAILURE"] },
    expect: ["FAILURE: tick a,tick b", "FAILURE: tick a,tick b"],
  },
  {
    name: "SequenceWithMemory resumes at the failed child",
    body: `<SequenceWithMemory><Stub id="a"/><Stub id="b"/></SequenceWithMemory>`,
    plans: { b: ["FAILURE", "SUCCESS"] },
    expect: ["FAILURE: tick a,tick b", "SUCCESS: tick b", "SUCCESS: tick a,tick b"],
  },
  {
    name: "ReactiveSequence re-ticks earlier children every tick",
    body: `<ReactiveSequence><Stub id="a"/><Stub id="b"/></ReactiveSequence>`,
    plans: { b: ["RUNNING"] },
    expect: ["RUNNING: tick a,tick b", "RUNNING: tick a,tick b"],
  },
  {
    name: "ReactiveSequence halts the RUNNING child when a condition fails",
    body: `<ReactiveSequence><Stub id="a"/><Stub id="b"/></ReactiveSequence>`,
    plans: { a: ["SUCCESS", "FAILURE"], b: ["RUNNING"] },
    expect: ["RUNNING: tick a,tick b", "FAILURE: tick a,halt b"],
  },
  {
    name: "ReactiveSequence halts a later RUNNING child when an earlier one starts RUNNING",
    body: `<ReactiveSequence><Stub id="a"/><Stub id="b"/></ReactiveSequence>`,
    plans: { a: ["SUCCESS", "RUNNING"], b: ["RUNNING"] },
    expect: ["RUNNING: tick a,tick b", "RUNNING: tick a,halt b"],
  },
  {
    name: "Fallback stops at the first SUCCESS",
    body: `<Fallback><Stub id="a"/><Stub id="b"/></Fallback>`,
    plans: { a: ["SUCCESS"] },
    expect: ["SUCCESS: tick a"],
  },
  {
    name: "Fallback keeps its position while a child is RUNNING and fails when all fail",
    body: `<Fallback><Stub id="a"/><Stub id="b"/></Fallback>`,
    plans: { a: ["FAILURE"], b: ["RUNNING", "FAILURE"] },
    expect: ["RUNNING: tick a,tick b", "FAILURE: tick b", "FAILURE: tick a,tick b"],
  },
  {
    name: "ReactiveFallback halts the RUNNING child when an earlier child succeeds",
    body: `<ReactiveFallback><Stub id="a"/><Stub id="b"/></ReactiveFallback>`,
    plans: { a: ["FAILURE", "SUCCESS"], b: ["RUNNING"] },
    expect: ["RUNNING: tick a,tick b", "SUCCESS: tick a,halt b"],
  },
  {
    name: "Parallel (default: all must succeed) does not re-tick completed children",
    body: `<Parallel><Stub id="a"/><Stub id="b"/></Parallel>`,
    plans: { b: ["RUNNING", "SUCCESS"] },
    expect: ["RUNNING: tick a,tick b", "SUCCESS: tick b"],
  },
  {
    name: "Parallel success_count=1 succeeds on the first SUCCESS and halts the others",
    body: `<Parallel success_count="1"><Stub id="a"/><Stub id="b"/></Parallel>`,
    plans: { a: ["RUNNING"] },
    expect: ["SUCCESS: tick a,tick b,halt a"],
  },
  {
    name: "Parallel fails on the first FAILURE by default (failure_count=1)",
    body: `<Parallel><Stub id="a"/><Stub id="b"/></Parallel>`,
    plans: { a: ["FAILURE"], b: ["RUNNING"] },
    expect: ["FAILURE: tick a"],
  },
  {
    name: "Parallel failure_count=2 waits for the second FAILURE",
    body: `<Parallel success_count="1" failure_count="2"><Stub id="a"/><Stub id="b"/></Parallel>`,
    plans: { a: ["FAILURE"], b: ["RUNNING", "FAILURE"] },
    expect: ["RUNNING: tick a,tick b", "FAILURE: tick b"],
  },
  {
    name: "Parallel success_count=-1 with three children needs all three",
    body: `<Parallel success_count="-1" failure_count="3">` +
      `<Stub id="a"/><Stub id="b"/><Stub id="c"/></Parallel>`,
    plans: { c: ["RUNNING", "RUNNING", "SUCCESS"] },
    expect: ["RUNNING: tick a,tick b,tick c", "RUNNING: tick c", "SUCCESS: tick c"],
  },
  {
    name: "IfThenElse runs the then-branch without re-ticking the condition",
    body: `<IfThenElse><Stub id="c"/><Stub id="t"/><Stub id="e"/></IfThenElse>`,
    plans: { t: ["RUNNING", "SUCCESS"] },
    expect: ["RUNNING: tick c,tick t", "SUCCESS: tick t"],
  },
  {
    name: "IfThenElse runs the else-branch on a failed condition",
    body: `<IfThenElse><Stub id="c"/><Stub id="t"/><Stub id="e"/></IfThenElse>`,
    plans: { c: ["FAILURE"], e: ["FAILURE"] },
    expect: ["FAILURE: tick c,tick e"],
  },
  {
    name: "IfThenElse with two children fails on a failed condition",
    body: `<IfThenElse><Stub id="c"/><Stub id="t"/></IfThenElse>`,
    plans: { c: ["FAILURE"] },
    expect: ["FAILURE: tick c"],
  },
  {
    name: "WhileDoElse re-checks the condition and halts the other branch when it flips",
    body: `<WhileDoElse><Stub id="c"/><Stub id="d"/><Stub id="e"/></WhileDoElse>`,
    plans: { c: ["SUCCESS", "FAILURE"], d: ["RUNNING"], e: ["SUCCESS"] },
    expect: ["RUNNING: tick c,tick d", "SUCCESS: tick c,halt d,tick e"],
  },
  {
    name: "WhileDoElse with two children fails when the condition fails",
    body: `<WhileDoElse><Stub id="c"/><Stub id="d"/></WhileDoElse>`,
    plans: { c: ["SUCCESS", "FAILURE"], d: ["RUNNING"] },
    expect: ["RUNNING: tick c,tick d", "FAILURE: tick c,halt d"],
  },
  {
    name: "Sequence skips SKIPPED children and is SKIPPED when all are",
    body: `<Sequence><Stub id="a" _skipIf="true"/><Stub id="b" _skipIf="true"/></Sequence>`,
    plans: {},
    expect: ["SKIPPED: "],
  },
];

for (const c of CASES) {
  Deno.test(`ControlNode ${c.name}`, () => {
    deepStrictEqual(runCase(c), c.expect);
  });
}

Deno.test("BuiltTree haltTree halts only RUNNING nodes, down the tree, and resets all to IDLE", () => {
  const world = new StubWorld();
  world.plan("b", "FAILURE");
  world.plan("c", "RUNNING");
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><Sequence><Stub id="a"/>` +
        `<Fallback><Stub id="b"/><Stub id="c"/></Fallback></Sequence></BehaviorTree>`,
    ),
    { world },
  );
  equal(tree.tickRoot(), "RUNNING");
  equal(tree.runningPath(), "M/Sequence[0]/Fallback[1]/Stub[1]");
  world.log.length = 0;
  tree.haltTree();
  deepStrictEqual(world.log, ["halt c"]);
  const statuses: string[] = [];
  const walk = (n: typeof tree.root) => {
    statuses.push(n.status);
    n.children.forEach(walk);
  };
  walk(tree.root);
  deepStrictEqual(new Set(statuses), new Set(["IDLE"]));
  equal(tree.runningPath(), null);
  // After a halt the Sequence starts over from its first child.
  equal(tree.tickRoot(), "RUNNING");
  deepStrictEqual(world.log.slice(1), ["tick a", "tick b", "tick c"]);
});

Deno.test("ControlNode whose children were all SKIPPED is IDLE: it runs nothing, and the running node is the one that runs", () => {
  const world = new StubWorld();
  world.plan("c", "RUNNING");
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><Parallel success_count="-1">` +
        `<Sequence><Stub id="a" _skipIf="true"/><Stub id="b" _skipIf="true"/></Sequence>` +
        `<Stub id="c"/></Parallel></BehaviorTree>`,
    ),
    { world },
  );
  equal(tree.tickRoot(), "RUNNING");
  equal(tree.root.children[0]!.status, "IDLE", "the skipped Sequence is not RUNNING");
  equal(tree.runningPath(), "M/Parallel[0]/Stub[1]", "not the Sequence that ran nothing");
});

Deno.test("ControlNode whose children were all SKIPPED evaluates its own _skipIf again on the next tick", () => {
  const world = new StubWorld();
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><Sequence _skipIf="skip"><Stub id="a" _skipIf="hold"/></Sequence>` +
        `</BehaviorTree>`,
    ),
    { world },
  );
  tree.blackboard.set("skip", { type: "bool", value: false });
  tree.blackboard.set("hold", { type: "bool", value: true });
  deepStrictEqual([tree.tickRoot(), world.log.splice(0)], ["SKIPPED", []]);
  tree.blackboard.set("skip", { type: "bool", value: true });
  tree.blackboard.set("hold", { type: "bool", value: false });
  // The root is skipped by its own _skipIf: its child, no longer held, is not ticked.
  deepStrictEqual([tree.tickRoot(), world.log.splice(0)], ["SKIPPED", []]);
});

Deno.test("ControlNode a finished root restarts from scratch on the next tick", () => {
  const world = new StubWorld();
  world.plan("a", "RUNNING", "SUCCESS");
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><Sequence><Stub id="a"/><Stub id="b"/></Sequence></BehaviorTree>`,
    ),
    { world },
  );
  deepStrictEqual([tree.tickRoot(), tree.tickRoot(), tree.tickRoot()], [
    "RUNNING",
    "SUCCESS",
    "SUCCESS",
  ]);
  equal(tree.root.status, "IDLE");
  deepStrictEqual(world.log, ["tick a", "tick a", "tick b", "tick a", "tick b"]);
});

Deno.test("ControlNode a SequenceWithMemory keeps its position across haltTree (as BT.CPP; docs/automation.md, State): it resumes at the halted step", () => {
  const world = new StubWorld();
  world.plan("b", "RUNNING");
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><SequenceWithMemory><Stub id="a"/><Stub id="b"/></SequenceWithMemory></BehaviorTree>`,
    ),
    { world },
  );
  equal(tree.tickRoot(), "RUNNING");
  tree.haltTree(); // leaving AUTO, an e-stop's FAULT
  world.log.length = 0;
  equal(tree.tickRoot(), "RUNNING");
  deepStrictEqual(world.log, ["tick b"], "step a is not run again");
});

Deno.test("IfThenElse with two children makes its failed CallDevice condition's call again on the next run", async () => {
  // The condition's FAILURE was left as its status: a stateful node answers that status without
  // running, so the tree never called the device again.
  const services = new FakeServices();
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><IfThenElse>` +
        `<CallDevice device_handle="sim0/motorctl0" function_name="start"/><AlwaysSuccess/>` +
        `</IfThenElse></BehaviorTree>`,
    ),
    { services },
  );
  const statuses: NodeStatus[] = [];
  for (let run = 0; run < 2; run++) {
    statuses.push(tree.tickRoot());
    services.calls.at(-1)!.reject(new RuntimeError("UNAVAILABLE", "Provider unavailable: sim0"));
    await flush();
    statuses.push(tree.tickRoot());
  }
  deepStrictEqual(statuses, ["RUNNING", "FAILURE", "RUNNING", "FAILURE"]);
  equal(services.calls.length, 2);
});
