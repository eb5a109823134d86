import { deepStrictEqual as deepEqual, ok, strictEqual as equal } from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { RUN_SAFETY_RESERVE_BYTES, RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";

const T0 = 1760000000000;

function logger(lines: string[]): Logger {
  const l: Logger = {
    debug: (m) => lines.push(`debug ${m}`),
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => l,
  };
  return l;
}

const call = (i: number) => ({
  first_time_epoch_ms: T0 + i,
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: i / 1000 } },
  outcome: "accepted",
  note: "x".repeat(200),
});

Deno.test("RunRegistry records e-stop, FAULT mode changes, failed hooks into FAULT and config changes past runs.max_run_bytes, within RUN_SAFETY_RESERVE_BYTES; other events stay counted", async () => {
  const root = await Deno.makeTempDir({ prefix: "runs_reserve_" });
  const logs: string[] = [];
  const clock = new ManualClock(0, T0);
  const maxRunBytes = 64 * 1024;
  const registry = new RunRegistry({
    dataDir: `${root}/data`,
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files: journalFiles,
    clock,
    logger: logger(logs),
    maxRunBytes,
    random: (b) => b.fill(7),
  });
  try {
    await registry.start();
    const bus = new EventBus();
    registry.attach(bus);
    const { run } = await registry.open({});
    // A tree in AUTO calling every tick: the bound is reached, calls are counted from now on.
    for (let i = 0; i < 1000; i++) registry.recordCall(call(i));
    bus.publish({
      kind: "estop_change",
      latched: true,
      reason: "leak",
      cause: "api",
      timestamp_ms: T0 + 2000,
    });
    bus.publish({
      kind: "mode_change",
      previous_mode: "AUTO",
      new_mode: "FAULT",
      timestamp_ms: T0 + 2001,
    });
    const hook = (transition: string) => ({
      kind: "hook_failure" as const,
      transition,
      phase: "after" as const,
      hook: "h",
      device_handle: "p/d",
      function: "f",
      error: "e",
      timestamp_ms: T0 + 2001,
    });
    bus.publish(hook("AUTO->FAULT"));
    bus.publish(hook("IDLE->MANUAL")); // counted
    bus.publish({
      kind: "estop_verification",
      outcome: "verified",
      elapsed_ms: 1,
      checks_total: 1,
      checks_verified: 1,
      failed_signals: [],
      timestamp_ms: T0 + 2001,
    });
    registry.recordConfigChange("safety", {
      added: [],
      removed: [],
      changed: ["safety.safe_state.zero_is_safe"],
      omitted: 0,
    });
    registry.recordCall(call(2002)); // still counted
    bus.publish({
      kind: "estop_change",
      latched: false,
      reason: null,
      cause: null,
      timestamp_ms: T0 + 2003,
    });
    bus.publish({
      kind: "mode_change",
      previous_mode: "FAULT",
      new_mode: "MANUAL",
      timestamp_ms: T0 + 2004,
    });
    bus.publish({
      kind: "mode_change",
      previous_mode: "MANUAL",
      new_mode: "IDLE",
      timestamp_ms: T0 + 2005,
    }); // counted
    const events = (await registry.listEvents(run.run_id, { limit: 1000 })).events;
    const calls = events.filter((e) => e.category === "call").length;
    deepEqual(
      events.filter((e) => e.category !== "call" && e.category !== "run_opened").map((e) =>
        `${e.category} ${e.type}`
      ),
      [
        "estop trigger",
        "mode_change ",
        "hook_failure AUTO->FAULT",
        "estop verification",
        "config_change safety",
        "estop clear",
        "mode_change ",
      ],
    );
    deepEqual(events.map((e) => e.sequence), events.map((_, i) => i + 1), "no holes");

    // The reserve is bounded: a flood of e-stop events past it is counted too.
    let flood = 0;
    for (let i = 0; i < 20_000; i++) {
      bus.publish({
        kind: "estop_change",
        latched: i % 2 === 0,
        reason: "r".repeat(100),
        cause: "api",
        timestamp_ms: T0 + 3000 + i,
      });
      flood++;
      if (i % 500 === 499) await registry.listEvents(run.run_id, { limit: 1 }); // drain the queue
    }
    await registry.listEvents(run.run_id, { limit: 1 });
    const size = (await Deno.stat(`${root}/data/runs/${run.run_id.slice(-26)}.jsonl`)).size;
    ok(size <= maxRunBytes + RUN_SAFETY_RESERVE_BYTES, `event file of ${size} bytes`);
    ok(size > maxRunBytes + RUN_SAFETY_RESERVE_BYTES - 1024, `the reserve is used: ${size} bytes`);
    equal(logs.filter((l) => /safety reserve/.test(l)).length, 1, logs.join("\n"));

    await registry.close(run.run_id, { close_reason: "completed" });
    const all = await allEvents(registry, run.run_id);
    const recordedEstops = all.filter((e) => e.category === "estop").length;
    const closed = all.at(-1)!;
    equal(closed.category, "run_closed");
    // Left out: the calls past the bound, the hook out of IDLE, the call and the mode change to
    // IDLE, the flood past the reserve.
    deepEqual(closed.payload, {
      events_not_recorded: (1000 - calls) + 1 + 1 + 1 + (flood + 3 - recordedEstops),
    });
  } finally {
    await registry.shutdown();
    await Deno.remove(root, { recursive: true });
  }
});

async function allEvents(registry: RunRegistry, runId: string) {
  const out = [];
  for (let offset = 0;; offset += 1000) {
    const { events } = await registry.listEvents(runId, { limit: 1000, offset });
    out.push(...events);
    if (events.length < 1000) return out;
  }
}
