import { deepStrictEqual, strictEqual as equal } from "node:assert/strict";
import type { NodeStatus } from "../../../src/automation/bt/mod.ts";
import { buildXml, ManualClock, StubWorld, xmlRoot } from "./_helpers.ts";

/** A case: tree body, stub plans, clock advance before each tick, expected `STATUS: log` lines. */
interface Case {
  name: string;
  body: string;
  plans: Record<string, NodeStatus[]>;
  advanceMs?: number[];
  expect: string[];
}

function runCase(c: Case): string[] {
  const world = new StubWorld();
  const clock = new ManualClock();
  for (const [id, plan] of Object.entries(c.plans)) world.plan(id, ...plan);
  const tree = buildXml(xmlRoot(`<BehaviorTree ID="M">${c.body}</BehaviorTree>`), {
    world,
    clock,
  });
  const out: string[] = [];
  for (let i = 0; i < c.expect.length; i++) {
    clock.advance(c.advanceMs?.[i] ?? 0);
    const s = tree.tickRoot();
    out.push(`${s}: ${world.log.splice(0).join(",")}`);
  }
  return out;
}

const CASES: Case[] = [
  {
    name: "Inverter swaps SUCCESS and FAILURE and passes RUNNING",
    body: `<Inverter><Stub id="a"/></Inverter>`,
    plans: { a: ["SUCCESS", "FAILURE", "RUNNING"] },
    expect: ["FAILURE: tick a", "SUCCESS: tick a", "RUNNING: tick a"],
  },
  {
    name: "ForceSuccess turns a FAILURE into SUCCESS and passes RUNNING",
    body: `<ForceSuccess><Stub id="a"/></ForceSuccess>`,
    plans: { a: ["FAILURE", "RUNNING"] },
    expect: ["SUCCESS: tick a", "RUNNING: tick a"],
  },
  {
    name: "ForceFailure turns a SUCCESS into FAILURE",
    body: `<ForceFailure><Stub id="a"/></ForceFailure>`,
    plans: {},
    expect: ["FAILURE: tick a"],
  },
  {
    name: "Repeat runs one synchronous cycle per tick and succeeds after num_cycles",
    body: `<Repeat num_cycles="3"><Stub id="a"/></Repeat>`,
    plans: {},
    expect: ["RUNNING: tick a", "RUNNING: tick a", "SUCCESS: tick a", "RUNNING: tick a"],
  },
  {
    name: "Repeat continues in the same tick after an asynchronous child finished",
    body: `<Repeat num_cycles="2"><Stub id="a"/></Repeat>`,
    plans: { a: ["RUNNING", "SUCCESS"] },
    expect: ["RUNNING: tick a", "SUCCESS: tick a,tick a"],
  },
  {
    name: "Repeat fails as soon as the child fails",
    body: `<Repeat num_cycles="5"><Stub id="a"/></Repeat>`,
    plans: { a: ["SUCCESS", "FAILURE"] },
    expect: ["RUNNING: tick a", "FAILURE: tick a"],
  },
  {
    name: "Repeat num_cycles=-1 repeats forever",
    body: `<Repeat num_cycles="-1"><Stub id="a"/></Repeat>`,
    plans: {},
    expect: ["RUNNING: tick a", "RUNNING: tick a", "RUNNING: tick a"],
  },
  {
    name: "RetryUntilSuccessful retries a failing child up to num_attempts",
    body: `<RetryUntilSuccessful num_attempts="3"><Stub id="a"/></RetryUntilSuccessful>`,
    plans: { a: ["FAILURE"] },
    expect: ["RUNNING: tick a", "RUNNING: tick a", "FAILURE: tick a"],
  },
  {
    name: "RetryUntilSuccessful succeeds when an attempt succeeds",
    body: `<RetryUntilSuccessful num_attempts="3"><Stub id="a"/></RetryUntilSuccessful>`,
    plans: { a: ["FAILURE", "SUCCESS"] },
    expect: ["RUNNING: tick a", "SUCCESS: tick a"],
  },
  {
    name: "KeepRunningUntilFailure turns SUCCESS into RUNNING until the child fails",
    body: `<KeepRunningUntilFailure><Stub id="a"/></KeepRunningUntilFailure>`,
    plans: { a: ["SUCCESS", "SUCCESS", "FAILURE"] },
    expect: ["RUNNING: tick a", "RUNNING: tick a", "FAILURE: tick a"],
  },
  {
    name: "Delay waits delay_msec on the clock before ticking the child",
    body: `<Delay delay_msec="100"><Stub id="a"/></Delay>`,
    plans: {},
    advanceMs: [0, 99, 1, 0],
    expect: ["RUNNING: ", "RUNNING: ", "SUCCESS: tick a", "RUNNING: "],
  },
  {
    name: "Timeout halts a child still RUNNING after msec and fails",
    body: `<Timeout msec="100"><Stub id="a"/></Timeout>`,
    plans: { a: ["RUNNING"] },
    advanceMs: [0, 50, 50, 0],
    expect: ["RUNNING: tick a", "RUNNING: tick a", "FAILURE: halt a", "RUNNING: tick a"],
  },
  {
    name: "Timeout passes the child result when it finishes in time",
    body: `<Timeout msec="100"><Stub id="a"/></Timeout>`,
    plans: { a: ["RUNNING", "SUCCESS"] },
    advanceMs: [0, 99],
    expect: ["RUNNING: tick a", "SUCCESS: tick a"],
  },
  {
    name: "RunOnce runs the child once and is SKIPPED afterwards",
    body: `<RunOnce><Stub id="a"/></RunOnce>`,
    plans: { a: ["RUNNING", "FAILURE"] },
    expect: ["RUNNING: tick a", "FAILURE: tick a", "SKIPPED: ", "SKIPPED: "],
  },
  {
    name: "RunOnce then_skip=false repeats the first result without ticking",
    body: `<RunOnce then_skip="false"><Stub id="a"/></RunOnce>`,
    plans: { a: ["SUCCESS"] },
    expect: ["SUCCESS: tick a", "SUCCESS: "],
  },
  {
    name: "Precondition ticks the child only when `if` is true, else returns `else`",
    body: `<Sequence><Script code="x := 5"/>` +
      `<Precondition if="x &gt; 1"><Stub id="a"/></Precondition>` +
      `<Precondition if="x &gt; 10" else="SUCCESS"><Stub id="b"/></Precondition>` +
      `<Precondition if="x == 0"><Stub id="c"/></Precondition></Sequence>`,
    plans: {},
    expect: ["FAILURE: tick a"],
  },
  {
    name: "Precondition keeps ticking a RUNNING child even when `if` turns false",
    body: `<Sequence><Script code="n := 0"/><Precondition if="n == 0">` +
      `<Sequence><Script code="n := 1"/><Stub id="a"/></Sequence></Precondition></Sequence>`,
    plans: { a: ["RUNNING", "SUCCESS"] },
    expect: ["RUNNING: tick a", "SUCCESS: tick a"],
  },
];

for (const c of CASES) {
  Deno.test(`DecoratorNode ${c.name}`, () => {
    deepStrictEqual(runCase(c), c.expect);
  });
}

Deno.test("DecoratorNode halting a RUNNING Delay restarts the delay", () => {
  const world = new StubWorld();
  const clock = new ManualClock();
  const tree = buildXml(
    xmlRoot(`<BehaviorTree ID="M"><Delay delay_msec="100"><Stub id="a"/></Delay></BehaviorTree>`),
    { world, clock },
  );
  equal(tree.tickRoot(), "RUNNING");
  clock.advance(80);
  tree.haltTree();
  clock.advance(80);
  equal(tree.tickRoot(), "RUNNING");
  clock.advance(100);
  equal(tree.tickRoot(), "SUCCESS");
});

Deno.test("DecoratorNode halting Repeat resets its cycle count", () => {
  const world = new StubWorld();
  const tree = buildXml(
    xmlRoot(`<BehaviorTree ID="M"><Repeat num_cycles="2"><Stub id="a"/></Repeat></BehaviorTree>`),
    { world },
  );
  equal(tree.tickRoot(), "RUNNING");
  tree.haltTree();
  equal(tree.tickRoot(), "RUNNING");
  equal(tree.tickRoot(), "SUCCESS");
});

Deno.test("DecoratorNode Repeat reads num_cycles from the blackboard", () => {
  const tree = buildXml(
    xmlRoot(
      `<BehaviorTree ID="M"><Sequence><Script code="n := 2"/>` +
        `<Repeat num_cycles="{n}"><AlwaysSuccess/></Repeat></Sequence></BehaviorTree>`,
    ),
  );
  deepStrictEqual([tree.tickRoot(), tree.tickRoot()], ["RUNNING", "SUCCESS"]);
});
