import { deepStrictEqual, ok, strictEqual as equal, throws } from "node:assert/strict";
import { RuntimeError } from "../../../src/common/mod.ts";
import { EventBus, type RuntimeEvent } from "../../../src/events/mod.ts";
import {
  BtRunner,
  loadBehaviorTree,
  type ParsedTree,
  type TickScheduler,
} from "../../../src/automation/bt/mod.ts";
import { waitFor } from "../../helpers/kernel.ts";
import { openTimerLedger } from "../../helpers/timers.ts";
import { FakeServices, flush, memFiles, xmlRoot } from "./_helpers.ts";

/** Scheduler whose interval the test fires by hand. */
class ManualScheduler implements TickScheduler {
  readonly timers = new Map<number, { fn: () => void; ms: number }>();
  #next = 1;
  setInterval(fn: () => void, ms: number): unknown {
    const id = this.#next++;
    this.timers.set(id, { fn, ms });
    return id;
  }
  clearInterval(handle: unknown): void {
    this.timers.delete(handle as number);
  }
  fire(): void {
    for (const t of [...this.timers.values()]) t.fn();
  }
}

function parse(body: string, path = "/bt/demo.xml"): ParsedTree {
  const r = loadBehaviorTree(path, memFiles({ [path]: xmlRoot(body) }));
  if (!r.tree) throw new Error(JSON.stringify(r.diagnostics));
  return r.tree;
}

function setup(body: string, opts: { tickRateHz?: number } = {}) {
  const services = new FakeServices();
  const events = new EventBus();
  const seen: RuntimeEvent[] = [];
  events.subscribe((e) => seen.push(e.event));
  const scheduler = new ManualScheduler();
  const faults: string[] = [];
  const runner = new BtRunner({
    parsed: parse(body),
    services,
    events,
    tickRateHz: opts.tickRateHz ?? 10,
    scheduler,
    onFault: (e) => faults.push(e),
  });
  return { services, events, seen, scheduler, faults, runner };
}

const CALL_TREE = `<BehaviorTree ID="Demo"><Sequence><AlwaysSuccess/>` +
  `<CallDevice device_handle="sim0/motor0" function_name="stop"/></Sequence></BehaviorTree>`;

Deno.test("BtRunner ticks only while started and active, on a floor(1000/rate) interval", async () => {
  const { runner, scheduler, services } = setup(CALL_TREE, { tickRateHz: 3 });
  await runner.ready;
  equal(runner.periodMs, 333);
  equal(runner.tickOnce(), null);
  runner.start();
  equal(scheduler.timers.size, 0);
  equal(runner.tickOnce(), null);
  runner.setActive(true);
  deepStrictEqual([...scheduler.timers.values()].map((t) => t.ms), [333]);
  scheduler.fire();
  equal(services.calls.length, 1);
  equal(runner.status().engine_diagnostics.total_ticks, 1);
  runner.setActive(false);
  equal(scheduler.timers.size, 0);
  runner.stop();
});

Deno.test("BtRunner leaving AUTO halts the tree and aborts a running device call", async () => {
  const { runner, services } = setup(CALL_TREE);
  await runner.ready;
  runner.start();
  runner.setActive(true);
  equal(runner.tickOnce(), "RUNNING");
  equal(runner.status().engine_diagnostics.current_running_node, "Demo/Sequence[0]/CallDevice[1]");
  runner.setActive(false);
  equal(services.calls[0]!.signal.aborted, true);
  equal(runner.status().engine_diagnostics.current_running_node, null);
  await flush();
  // Back in AUTO the tree starts over and issues a fresh call.
  runner.setActive(true);
  equal(runner.tickOnce(), "RUNNING");
  equal(services.calls.length, 2);
  services.calls[1]!.resolve();
  await flush();
  equal(runner.tickOnce(), "SUCCESS");
  runner.stop();
});

Deno.test("BtRunner restarts a finished tree on the next tick", async () => {
  const { runner, services } = setup(
    `<BehaviorTree ID="Demo"><CallDevice device_handle="d/x" function_name="f"/></BehaviorTree>`,
  );
  services.autoSettle = "resolve";
  await runner.ready;
  runner.start();
  runner.setActive(true);
  const statuses = [];
  for (let i = 0; i < 4; i++) {
    statuses.push(runner.tickOnce());
    await flush();
  }
  deepStrictEqual(statuses, ["RUNNING", "SUCCESS", "RUNNING", "SUCCESS"]);
  equal(services.calls.length, 2);
  runner.stop();
});

Deno.test("BtRunner emits bt_error on the first FAILURE after progress only", async () => {
  const { runner, seen, services } = setup(
    `<BehaviorTree ID="Demo"><Sequence><AlwaysSuccess/><CheckBool value="{ok}"/>` +
      `<Script code="ok := false" _skipIf="true"/></Sequence>` +
      `</BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  const set = (v: boolean) => runner.tree.blackboard.set("ok", { type: "bool", value: v });
  set(false);
  runner.tickOnce();
  services.clock.advance(100);
  runner.tickOnce();
  set(true);
  runner.tickOnce();
  set(false);
  runner.tickOnce();
  deepStrictEqual(seen, [
    {
      kind: "bt_error",
      node: "Demo/Sequence[0]/CheckBool[1]",
      error: "BT returned FAILURE",
      timestamp_ms: 1_700_000_000_000,
    },
    {
      kind: "bt_error",
      node: "Demo/Sequence[0]/CheckBool[1]",
      error: "BT returned FAILURE",
      timestamp_ms: 1_700_000_000_100,
    },
  ]);
  equal(runner.status().engine_diagnostics.ticks_since_progress, 1);
  runner.stop();
});

Deno.test("BtRunner reports blocked/waiting after more than 10 consecutive FAILURE ticks", async () => {
  const { runner } = setup(`<BehaviorTree ID="Demo"><AlwaysFailure/></BehaviorTree>`);
  await runner.ready;
  runner.start();
  runner.setActive(true);
  for (let i = 0; i < 10; i++) runner.tickOnce();
  equal(runner.status().execution_status, "running");
  runner.tickOnce();
  const s = runner.status();
  deepStrictEqual([s.execution_status, s.execution_reason], ["blocked", "waiting"]);
  equal(s.engine_diagnostics.stall_suspected, true);
  equal(s.engine_diagnostics.ticks_since_progress, 11);
  runner.stop();
});

Deno.test("BtRunner re-armed (out of AUTO and back) starts its failure streak over: a fresh bt_error, no stall before it ticks", async () => {
  const { runner, seen } = setup(`<BehaviorTree ID="Demo"><AlwaysFailure/></BehaviorTree>`);
  await runner.ready;
  runner.start();
  runner.setActive(true);
  for (let i = 0; i < 11; i++) runner.tickOnce();
  equal(runner.status().execution_status, "blocked");
  equal(seen.filter((e) => e.kind === "bt_error").length, 1);
  // The operator leaves AUTO (FAULT -> MANUAL) and re-arms (-> AUTO).
  runner.setActive(false);
  runner.setActive(true);
  const s = runner.status();
  deepStrictEqual(
    [s.execution_status, s.engine_diagnostics.stall_suspected],
    ["running", false],
    "not stalled before the re-armed tree has ticked",
  );
  runner.tickOnce();
  equal(
    seen.filter((e) => e.kind === "bt_error").length,
    2,
    "the re-armed tree's first FAILURE is reported",
  );
  runner.stop();
});

Deno.test("BtRunner reports a throwing tick as bt_error + automation_fault and calls onFault", async () => {
  const { runner, seen, faults, services } = setup(
    `<BehaviorTree ID="Demo"><Parallel success_count="2">` +
      `<CallDevice device_handle="d/x" function_name="f"/>` +
      `<Sequence><AlwaysSuccess/><Script code="x := missing + 1; missing := 0"/></Sequence>` +
      `</Parallel></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  equal(runner.tickOnce(), null);
  // The tree was halted: the call it had just started is aborted.
  equal(services.calls[0]!.signal.aborted, true);
  const path = "Demo/Parallel[0]/Sequence[1]/Script[1]";
  equal(seen.length, 2);
  const [btError, fault] = seen;
  equal(btError!.kind, "bt_error");
  equal(fault!.kind, "automation_fault");
  if (btError!.kind !== "bt_error" || fault!.kind !== "automation_fault") return;
  equal(btError!.node, path);
  ok(/variable "missing" not found/.test(btError!.error));
  deepStrictEqual([fault!.locus, fault!.error], ["tick", btError!.error]);
  equal(faults.length, 1);
  ok(faults[0]!.includes(path));
  const s = runner.status();
  deepStrictEqual([s.execution_status, s.execution_reason], ["failed", "terminal_failure"]);
  equal(s.engine_diagnostics.error_count, 1);
  equal(s.last_error, faults[0]);
  equal(s.engine_diagnostics.last_tick_status, "THROWN");
  runner.stop();
});

Deno.test("BtRunner a throwing tick aborts the call it started under a Precondition", async () => {
  // Precondition does not mark itself RUNNING before ticking its child: when the tick throws, the
  // nodes below it are RUNNING under an IDLE ancestor, and the halt must still reach them.
  const { runner, services, faults } = setup(
    `<BehaviorTree ID="Demo"><Sequence><Precondition if="true">` +
      `<Parallel success_count="2"><CallDevice device_handle="d/x" function_name="f"/>` +
      `<Script code="x := missing + 1; missing := 0"/></Parallel></Precondition></Sequence></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  equal(runner.tickOnce(), null);
  equal(faults.length, 1);
  equal(services.calls.length, 1);
  equal(services.calls[0]!.signal.aborted, true, "the call the faulted tick started is aborted");
  equal(runner.status().engine_diagnostics.current_running_node, null);
  runner.stop();
});

Deno.test("BtRunner leaving AUTO aborts every running call even when an _onHalted script throws", async () => {
  const { runner, services } = setup(
    `<BehaviorTree ID="Demo"><Parallel success_count="2">` +
      `<CallDevice device_handle="d/x" function_name="f" _onHalted="y := missing + 1; missing := 0"/>` +
      `<CallDevice device_handle="d/x" function_name="g"/>` +
      `</Parallel></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  equal(runner.tickOnce(), "RUNNING");
  equal(services.calls.length, 2);
  runner.setActive(false);
  deepStrictEqual(
    services.calls.map((c) => [c.fn, c.signal.aborted]),
    [["f", true], ["g", true]],
    "both calls abandoned: the second one must not go out after AUTO was left",
  );
  equal(runner.status().engine_diagnostics.current_running_node, null);
  runner.stop();
});

Deno.test("BtRunner status carries the tree identity and the mode gate", async () => {
  const body = `<BehaviorTree ID="Demo"><AlwaysSuccess/></BehaviorTree>`;
  const { runner, services } = setup(body);
  await runner.ready;
  const bytes = new TextEncoder().encode(xmlRoot(body));
  const hash = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
  const digest = [...hash].map((b) => b.toString(16).padStart(2, "0")).join("");
  const stopped = runner.status();
  deepStrictEqual([stopped.execution_status, stopped.execution_reason], ["idle", "stopped"]);
  runner.start();
  deepStrictEqual(runner.status(), {
    execution_status: "running",
    execution_reason: "mode_gate",
    automation_version: {
      engine_kind: "behavior_tree",
      id: "demo",
      digest,
      digest_scope: "top_level_file",
    },
    last_evaluation_at_epoch_ms: 0,
    engine_diagnostics: {
      total_ticks: 0,
      ticks_since_progress: 0,
      error_count: 0,
      stall_suspected: false,
      current_running_node: null,
      last_tick_status: null,
    },
    run_id: null,
    last_error: null,
  });
  runner.setActive(true);
  services.clock.advance(5);
  runner.tickOnce();
  const s = runner.status("run-1");
  equal(s.execution_reason, undefined);
  equal(s.last_evaluation_at_epoch_ms, 1_700_000_000_005);
  equal(s.run_id, "run-1");
  equal(s.engine_diagnostics.last_tick_status, "SUCCESS");
  runner.stop();
});

Deno.test("BtRunner keeps node state (PeriodicPulseWindow clock) across AUTO exits", async () => {
  const { runner, services } = setup(
    `<BehaviorTree ID="Demo"><PeriodicPulseWindow interval_s="10" pulse_s="1" ` +
      `pulse_index="{i}"/></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  runner.tickOnce();
  runner.setActive(false);
  services.clock.advance(25_000);
  runner.setActive(true);
  runner.tickOnce();
  equal(runner.tree.blackboard.get("i")?.value, 2);
  runner.stop();
});

Deno.test("BtRunner with the default timers ticks and stops cleanly", async () => {
  const services = new FakeServices();
  const runner = new BtRunner({
    parsed: parse(`<BehaviorTree ID="Demo"><AlwaysSuccess/></BehaviorTree>`),
    services,
    events: new EventBus(),
    tickRateHz: 1000,
  });
  await runner.ready;
  runner.start();
  runner.setActive(true);
  // Wait for at least one real timer tick without asserting on timing (bounded: a runner that
  // never ticks fails here instead of hanging the suite).
  try {
    await waitFor(
      "a tick of the real timer",
      () => runner.status().engine_diagnostics.total_ticks > 0,
    );
  } finally {
    runner.stop();
  }
  equal(runner.status().execution_status, "idle");
});

Deno.test("BtRunner's default timers tick on a grid: one timer per period, none left when inactive", async () => {
  // setInterval stretched every period by its callback's lateness (48.3-48.6 ticks/s at 50 Hz in
  // bench workload 8); the grid (common/grid.ts) arms one setTimeout aimed at the next instant.
  const runner = new BtRunner({
    parsed: parse(`<BehaviorTree ID="Demo"><AlwaysSuccess/></BehaviorTree>`),
    services: new FakeServices(),
    events: new EventBus(),
    tickRateHz: 50,
  });
  await runner.ready;
  const ledger = openTimerLedger();
  try {
    runner.start();
    runner.setActive(true);
    deepStrictEqual(ledger.pending(), [20]);
    runner.setActive(false);
    deepStrictEqual(ledger.pending(), []);
  } finally {
    runner.stop();
    ledger.close();
  }
});

Deno.test("BtRunner refuses an out-of-range tick rate", () => {
  throws(
    () =>
      new BtRunner({
        parsed: parse(`<BehaviorTree ID="Demo"><AlwaysSuccess/></BehaviorTree>`),
        services: new FakeServices(),
        events: new EventBus(),
        tickRateHz: 0,
        version: {
          engine_kind: "behavior_tree",
          id: "x",
          digest: "",
          digest_scope: "top_level_file",
        },
      }),
    RangeError,
  );
});

Deno.test("BtRunner treats a CallDevice that keeps failing as stalled, not as progress", async () => {
  const { runner, seen, services } = setup(CALL_TREE);
  services.autoSettle = new RuntimeError("FAILED_PRECONDITION", "e-stop latched");
  await runner.ready;
  runner.start();
  runner.setActive(true);
  const statuses = [];
  for (let i = 0; i < 30; i++) {
    statuses.push(runner.tickOnce());
    await flush();
  }
  // The asynchronous call alternates RUNNING (started) and FAILURE (rejected).
  ok(statuses.includes("RUNNING") && statuses.includes("FAILURE"));
  equal(seen.filter((e) => e.kind === "bt_error").length, 1, "one bt_error for the whole streak");
  equal(runner.status().execution_status, "blocked");
  runner.stop();
});

Deno.test("BtRunner does not count SKIPPED root ticks as progress: a job that fails at every attempt between skipped ticks is blocked", async () => {
  // A periodic job: skipped between its attempts, and every attempt fails.
  const { runner, seen } = setup(
    `<BehaviorTree ID="Demo"><Sequence><Script code="idle := false" _skipIf="true"/>` +
      `<AlwaysFailure _skipIf="idle"/></Sequence></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  const idle = (v: boolean) => runner.tree.blackboard.set("idle", { type: "bool", value: v });
  const statuses = [];
  for (let attempt = 0; attempt < 11; attempt++) {
    idle(false);
    statuses.push(runner.tickOnce());
    idle(true);
    statuses.push(runner.tickOnce(), runner.tickOnce(), runner.tickOnce());
  }
  equal(statuses.filter((s) => s === "FAILURE").length, 11);
  equal(statuses.filter((s) => s === "SKIPPED").length, 33);
  const s = runner.status();
  equal(s.engine_diagnostics.ticks_since_progress, 11);
  deepStrictEqual([s.execution_status, s.execution_reason], ["blocked", "waiting"]);
  equal(s.engine_diagnostics.stall_suspected, true);
  equal(seen.filter((e) => e.kind === "bt_error").length, 1, "one bt_error: nothing succeeded");
  runner.stop();
});

Deno.test("BtRunner names no running node after a tick whose root Sequence skipped every child", async () => {
  const { runner } = setup(
    `<BehaviorTree ID="Demo"><Sequence><AlwaysFailure _skipIf="true"/>` +
      `<CallDevice device_handle="sim0/motor0" function_name="stop" _skipIf="true"/>` +
      `</Sequence></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  for (let i = 0; i < 2; i++) {
    equal(runner.tickOnce(), "SKIPPED");
    equal(runner.status().engine_diagnostics.current_running_node, null, `tick ${i + 1}`);
  }
  runner.stop();
});

Deno.test("BtRunner a root that is always SKIPPED is neither progress nor a stall", async () => {
  const { runner, seen } = setup(
    `<BehaviorTree ID="Demo"><AlwaysFailure _skipIf="true"/></BehaviorTree>`,
  );
  await runner.ready;
  runner.start();
  runner.setActive(true);
  for (let i = 0; i < 20; i++) equal(runner.tickOnce(), "SKIPPED");
  const s = runner.status();
  deepStrictEqual(
    [
      s.execution_status,
      s.engine_diagnostics.stall_suspected,
      s.engine_diagnostics.ticks_since_progress,
    ],
    ["running", false, 0],
  );
  equal(seen.length, 0);
  runner.stop();
});
