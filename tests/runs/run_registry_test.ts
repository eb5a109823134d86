import {
  deepStrictEqual as deepEqual,
  match,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import type { Logger, StatusCode } from "../../src/common/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import {
  type AutomationVersion,
  type ClientCloseReason,
  MAX_RUN_JSON_DEPTH,
  type Run,
  type RunEvent,
  RunRegistry,
  type RunRegistryOptions,
  type RunStartInput,
} from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";

const T0 = 1760000000000;

function logger(lines: string[] = []): Logger {
  const l: Logger = {
    debug: (m) => lines.push(`debug ${m}`),
    info: (m) => lines.push(`info ${m}`),
    warn: (m) => lines.push(`warn ${m}`),
    error: (m) => lines.push(`error ${m}`),
    child: () => l,
  };
  return l;
}

const VERSION: AutomationVersion = {
  engine_kind: "behavior_tree",
  id: "demo",
  digest: "ab".repeat(32),
  digest_scope: "top_level_file",
};

interface Harness {
  registry: RunRegistry;
  clock: ManualClock;
  sunk: { event: RunEvent; run: Run }[];
  logs: string[];
}

async function harness(
  dataDir: string,
  over: Partial<RunRegistryOptions> = {},
  clock = new ManualClock(0, T0),
  startInput: RunStartInput = {},
): Promise<Harness> {
  const sunk: { event: RunEvent; run: Run }[] = [];
  const logs: string[] = [];
  let seed = 1;
  const registry = new RunRegistry({
    dataDir,
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files: journalFiles,
    clock,
    logger: logger(logs),
    automationVersion: () => VERSION,
    telemetrySink: (event, run) => sunk.push({ event, run }),
    random: (b) => b.fill(seed++),
    ...over,
  });
  await registry.start(startInput);
  return { registry, clock, sunk, logs };
}

async function withDir(fn: (dir: string) => Promise<void>): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "runs_test_" });
  try {
    await fn(`${dir}/data`);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** A registry on a fresh data dir (harness(dir, over)), given to `fn`, shut down after. */
async function withRegistry(
  fn: (h: Harness, dir: string) => Promise<void>,
  over: Partial<RunRegistryOptions> = {},
): Promise<void> {
  await withDir(async (dir) => {
    const h = await harness(dir, over);
    try {
      await fn(h, dir);
    } finally {
      await h.registry.shutdown();
    }
  });
}

async function rejectsWith(p: Promise<unknown>, code: StatusCode, message?: RegExp) {
  await rejects(p, (err: unknown) => {
    ok(err instanceof RuntimeError, `expected RuntimeError, got ${err}`);
    equal(err.code, code, err.message);
    if (message) match(err.message, message);
    return true;
  });
}

Deno.test("RunRegistry opens, marks and closes a run with the contract's fields", async () => {
  await withRegistry(async ({ registry, clock, sunk }) => {
    const { run } = await registry.open({
      experiment_label: "trial-3",
      params: { setpoint: 30 },
      tag_scope: { provider_ids: ["sim0"] },
    });
    match(run.run_id, /^lab1-[0-9A-HJKMNP-TV-Z]{26}$/);
    deepEqual(run, {
      schema_version: 1,
      run_id: run.run_id,
      state: "open",
      close_reason: null,
      started_at_epoch_ms: T0,
      ended_at_epoch_ms: null,
      automation_version: VERSION,
      runtime_version: "0.2.0",
      polling_interval_ms: 500,
      params: { setpoint: 30 },
      tag_scope: { provider_ids: ["sim0"], device_ids: [], signal_ids: [] },
      experiment_label: "trial-3",
    });
    equal(registry.openRunId(), run.run_id);

    clock.wall = T0 + 100;
    const { event } = await registry.addMarker(run.run_id, {
      type: "valve_open",
      payload: { valve: 2 },
    });
    deepEqual(event, {
      schema_version: 1,
      run_id: run.run_id,
      sequence: 2,
      category: "annotation",
      type: "valve_open",
      occurred_at_epoch_ms: T0 + 100,
      recorded_at_epoch_ms: T0 + 100,
      payload: { valve: 2 },
    });
    const m2 = await registry.addMarker(run.run_id, {
      type: "late",
      occurred_at_epoch_ms: T0 + 50,
    });
    equal(m2.event.occurred_at_epoch_ms, T0 + 50);
    equal(m2.event.recorded_at_epoch_ms, T0 + 100);

    clock.wall = T0 + 200;
    const closed = await registry.close(run.run_id, { close_reason: "completed" });
    equal(closed.run.state, "closed");
    equal(closed.run.close_reason, "completed");
    equal(closed.run.ended_at_epoch_ms, T0 + 200);
    equal(registry.openRunId(), null);

    clock.wall = T0 + 300;
    deepEqual(await registry.close(run.run_id, {}), closed, "close is idempotent");
    deepEqual((await registry.get(run.run_id)).run, closed.run);

    const { events, count } = await registry.listEvents(run.run_id, {});
    equal(count, 4);
    deepEqual(events.map((e) => [e.sequence, e.category, e.type]), [
      [1, "run_opened", ""],
      [2, "annotation", "valve_open"],
      [3, "annotation", "late"],
      [4, "run_closed", "completed"],
    ]);
    deepEqual(sunk.map((s) => s.event.category), [
      "run_opened",
      "annotation",
      "annotation",
      "run_closed",
    ]);
    equal(sunk[0]!.run.experiment_label, "trial-3");
  });
});

Deno.test("RunRegistry closes with operator_stop by default and records a null automation version", async () => {
  await withRegistry(async ({ registry }) => {
    const { run } = await registry.open(undefined);
    match(run.run_id, /^default-[0-9A-HJKMNP-TV-Z]{26}$/);
    equal(run.automation_version, null);
    equal(run.experiment_label, null);
    deepEqual(run.params, {});
    const closed = await registry.close(run.run_id, undefined);
    equal(closed.run.close_reason, "operator_stop");
  }, { automationVersion: () => null, runtimeName: "" });
});

Deno.test("RunRegistry allows one open run at a time", async () => {
  await withRegistry(async ({ registry }) => {
    const first = await registry.open({});
    await rejectsWith(registry.open({}), "FAILED_PRECONDITION", /Run already open/);
    await registry.close(first.run.run_id, {});
    const second = await registry.open({});
    ok(second.run.run_id > first.run.run_id, "run ids sort by time");
  });
});

Deno.test("RunRegistry counts a marker's type and marker_id in characters (code points), not UTF-16 units", async () => {
  await withRegistry(async ({ registry }) => {
    const { run } = await registry.open({});
    const emoji = "\u{1F600}"; // one character, two UTF-16 units
    const { event } = await registry.addMarker(run.run_id, {
      type: emoji.repeat(256),
      marker_id: emoji.repeat(128),
    });
    equal(event.type, emoji.repeat(256));
    await rejectsWith(
      registry.addMarker(run.run_id, { type: emoji.repeat(257) }),
      "INVALID_ARGUMENT",
      /^type: longer than 256 characters$/,
    );
    await rejectsWith(
      registry.addMarker(run.run_id, { type: "t", marker_id: emoji.repeat(129) }),
      "INVALID_ARGUMENT",
      /^marker_id: must be a string of 1 to 128 characters$/,
    );
    await registry.close(run.run_id, {});
  });
});

Deno.test("RunRegistry rejects invalid requests with the contract's codes", async () => {
  await withRegistry(async ({ registry }) => {
    await rejectsWith(registry.open({ params: { big: "x".repeat(70000) } }), "INVALID_ARGUMENT");
    const { run } = await registry.open({});
    const id = run.run_id;
    await rejectsWith(
      // Only the runtime closes a run as abandoned (the type allows it; the registry checks).
      registry.close(id, { close_reason: "abandoned" as ClientCloseReason }),
      "INVALID_ARGUMENT",
      /close_reason/,
    );
    await rejectsWith(registry.addMarker(id, { type: "" }), "INVALID_ARGUMENT", /^type/);
    await rejectsWith(
      registry.addMarker(id, { type: "x".repeat(257) }),
      "INVALID_ARGUMENT",
      /^type: longer than 256/,
    );
    await rejectsWith(
      registry.addMarker(id, { type: "t", occurred_at_epoch_ms: -1 }),
      "INVALID_ARGUMENT",
      /^occurred_at_epoch_ms/,
    );
    await rejectsWith(
      registry.addMarker(id, { type: "t", occurred_at_epoch_ms: 1.5 }),
      "INVALID_ARGUMENT",
      /^occurred_at_epoch_ms/,
    );
    const unknown = "lab1-01JB0Z8Q6M5S2K7T9V3W4X5Y6Z";
    await rejectsWith(registry.get(unknown), "NOT_FOUND", /Run not found/);
    await rejectsWith(registry.close(unknown, {}), "NOT_FOUND");
    await rejectsWith(registry.listEvents(unknown, {}), "NOT_FOUND");
    await rejectsWith(registry.addMarker(unknown, { type: "t" }), "NOT_FOUND");
    await registry.close(id, {});
    await rejectsWith(registry.addMarker(id, { type: "t" }), "FAILED_PRECONDITION", /closed/);
    // The failed calls left no trace in the log of events.
    equal((await registry.listEvents(id, {})).count, 2);
  });
});

Deno.test("RunRegistry pages runs newest first and events oldest first", async () => {
  await withRegistry(async ({ registry, clock }) => {
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      clock.wall = T0 + i * 1000;
      const { run } = await registry.open({ experiment_label: `r${i}` });
      ids.push(run.run_id);
      if (i < 4) await registry.close(run.run_id, {});
    }
    const all = await registry.list({});
    equal(all.count, 5);
    deepEqual(all.runs.map((r) => r.run_id), [...ids].reverse());
    const page = await registry.list({ limit: 2, offset: 1 });
    deepEqual(page.runs.map((r) => r.experiment_label), ["r3", "r2"]);
    equal(page.count, 2);
    equal((await registry.list({ limit: -1, offset: -4 })).count, 5);
    equal((await registry.list({ limit: 900 })).count, 5);
    equal((await registry.list({ offset: 5 })).count, 0);

    const open = ids[4];
    for (let i = 0; i < 10; i++) await registry.addMarker(open!, { type: `m${i}` });
    const events = await registry.listEvents(open!, { limit: 3, offset: 2 });
    deepEqual(events.events.map((e) => e.sequence), [3, 4, 5]);
    equal(events.count, 3);
    equal((await registry.listEvents(open!, { limit: 0 })).count, 11);
    equal((await registry.listEvents(open!, { limit: 5000, offset: 10 })).count, 1);
  });
});

Deno.test("RunRegistry replays the journal after a restart", async () => {
  await withDir(async (dir) => {
    const a = await harness(dir);
    const { run } = await a.registry.open({ experiment_label: "kept", params: { n: 1 } });
    await a.registry.addMarker(run.run_id, { type: "m" });
    const closed = await a.registry.close(run.run_id, { close_reason: "failed" });
    await a.registry.shutdown();

    const b = await harness(dir);
    try {
      deepEqual(b.registry.startupReport(), {
        corruptLines: [],
        corruptLineCount: 0,
        abandonedRunIds: [],
        orphanedEventFiles: [],
      });
      deepEqual((await b.registry.get(run.run_id)).run, closed.run);
      deepEqual(
        (await b.registry.listEvents(run.run_id, {})).events.map((e) => e.category),
        ["run_opened", "annotation", "run_closed"],
      );
      equal(b.registry.openRunId(), null);
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry names event files no run of runs.jsonl names at start, in one WARN, and keeps them", async () => {
  await withDir(async (dir) => {
    const a = await harness(dir);
    const { run } = await a.registry.open({});
    await a.registry.close(run.run_id, {});
    await a.registry.shutdown();
    // A crash between an event file's first line and its open record; an operator's note.
    const orphan = `${dir}/runs/01ARZ3NDEKTSV4RRFFQ69G5FAV.jsonl`;
    await Deno.writeTextFile(orphan, '{"sequence":1}\n');
    await Deno.writeTextFile(`${dir}/runs/README.txt`, "not an event file\n");

    const b = await harness(dir);
    try {
      deepEqual(b.registry.startupReport().orphanedEventFiles, [orphan]);
      const warned = b.logs.filter((l) => l.includes("name no run of"));
      deepEqual(warned, [
        `warn runs: 1 event file(s) name no run of ${dir}/runs.jsonl: not served, not counted by retention, kept: ${orphan}`,
      ]);
      equal((await Deno.stat(orphan)).isFile, true, "kept");
      deepEqual((await b.registry.list()).runs.map((r) => r.run_id), [run.run_id]);
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry closes a run left open by a crash as abandoned", async () => {
  await withDir(async (dir) => {
    const a = await harness(dir);
    const { run } = await a.registry.open({});
    await a.registry.addMarker(run.run_id, { type: "before crash" });
    // The process ends without closing the run: the journal holds an open record only.
    await a.registry.shutdown();

    const clock = new ManualClock(0, T0);
    clock.wall = T0 + 60000;
    const b = await harness(dir, {}, clock);
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      const got = (await b.registry.get(run.run_id)).run;
      equal(got.state, "closed");
      equal(got.close_reason, "abandoned");
      equal(got.ended_at_epoch_ms, T0, "ended at its last event (the marker), not at the start");
      const events = (await b.registry.listEvents(run.run_id, {})).events;
      deepEqual(events.map((e) => [e.sequence, e.category, e.type]), [
        [1, "run_opened", ""],
        [2, "annotation", "before crash"],
        [3, "run_closed", "abandoned"],
      ]);
      deepEqual(b.sunk.map((s) => s.event.type), ["abandoned"]);
      await b.registry.close((await b.registry.open({})).run.run_id, {});
    } finally {
      await b.registry.shutdown();
    }

    // The abandonment was journaled: a third start finds nothing to abandon.
    const c = await harness(dir);
    try {
      deepEqual(c.registry.startupReport().abandonedRunIds, []);
      equal((await c.registry.get(run.run_id)).run.close_reason, "abandoned");
    } finally {
      await c.registry.shutdown();
    }
  });
});

/** A call the previous process left in flight, recorded at `at` (epoch ms). */
const interruptedCall = (at: number, fn: string) => ({
  first_time_epoch_ms: at,
  device_handle: "sim0/motorctl0",
  function: fn,
  outcome: "interrupted",
});

/**
 * A process that closed a run (`earlier`, T0 .. T0 + 10) and opened another (`run`, T0 + 100) left
 * open as by a crash; the next start, at T0 + 60000, is given the calls `interrupted` names. The
 * caller shuts `b` down.
 */
async function restartWithInterruptedCalls(
  dir: string,
  interrupted: (runs: { earlier: Run; run: Run }) => NonNullable<RunStartInput["interruptedCalls"]>,
): Promise<{ b: Harness; earlier: Run; run: Run }> {
  const clock = new ManualClock(0, T0);
  const a = await harness(dir, {}, clock);
  const { run: earlier } = await a.registry.open({});
  clock.wall = T0 + 10;
  await a.registry.close(earlier.run_id, {});
  clock.wall = T0 + 100;
  const { run } = await a.registry.open({});
  await a.registry.shutdown(); // left open, as by a crash
  const b = await harness(dir, {}, new ManualClock(0, T0 + 60000), {
    interruptedCalls: interrupted({ earlier, run }),
  });
  return { b, earlier, run };
}

Deno.test("RunRegistry ends a run abandoned by a crash at its last recorded event, not at the next start hours later, and says so in its run_closed", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(0, T0);
    const a = await harness(dir, {}, clock);
    const { run } = await a.registry.open({});
    clock.wall = T0 + 5000;
    await a.registry.addMarker(run.run_id, { type: "last words" });
    await a.registry.shutdown();
    // As by a crash: the journal holds the open record only, not the save a shutdown makes.
    const journal = `${dir}/runs.jsonl`;
    const lines = (await Deno.readTextFile(journal)).split("\n");
    await Deno.writeTextFile(
      journal,
      lines.filter((l) => !l.includes('"shutdown":true')).join("\n"),
    );

    const later = T0 + 3 * 3_600_000; // the next start, three hours on
    const b = await harness(dir, {}, new ManualClock(0, later), {
      // A call in flight at the crash, made after the marker: the process lived until then.
      interruptedCalls: [{
        call: {
          first_time_epoch_ms: T0 + 7000,
          device_handle: "sim0/motorctl0",
          function: "set_duty",
          outcome: "interrupted",
        },
        runId: run.run_id,
      }],
    });
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      const got = (await b.registry.get(run.run_id)).run;
      equal(got.close_reason, "abandoned");
      equal(got.ended_at_epoch_ms, T0 + 7000, "the run ends at its last known activity");
      const closed = (await b.registry.listEvents(run.run_id, {})).events.at(-1)!;
      deepEqual(
        [closed.category, closed.type, closed.occurred_at_epoch_ms, closed.recorded_at_epoch_ms],
        ["run_closed", "abandoned", T0 + 7000, later],
      );
      deepEqual(closed.payload, { end_basis: "last_event" });
    } finally {
      await b.registry.shutdown();
    }
    // Replayed as written: a third start reads the same end.
    const c = await harness(dir, {}, new ManualClock(0, later + 1000));
    try {
      equal((await c.registry.get(run.run_id)).run.ended_at_epoch_ms, T0 + 7000);
    } finally {
      await c.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry closes a run abandoned by a crash no earlier than its last event when the wall clock stepped back before the next start", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(0, T0);
    const a = await harness(dir, {}, clock);
    const { run } = await a.registry.open({});
    clock.wall = T0 + 5000; // the run's last event, in what the next start's clock calls the future
    await a.registry.addMarker(run.run_id, { type: "last words" });
    await a.registry.shutdown();
    // As by a crash: the journal holds the open record only, not the save a shutdown makes.
    const journal = `${dir}/runs.jsonl`;
    const lines = (await Deno.readTextFile(journal)).split("\n");
    await Deno.writeTextFile(
      journal,
      lines.filter((l) => !l.includes('"shutdown":true')).join("\n"),
    );

    // NTP stepped the clock back 4 s: the next start reads T0 + 1000.
    const b = await harness(dir, {}, new ManualClock(0, T0 + 1000), {
      interruptedCalls: [{
        call: {
          first_time_epoch_ms: T0 + 3000,
          device_handle: "sim0/motorctl0",
          function: "set_duty",
          outcome: "interrupted",
        },
        runId: run.run_id,
      }],
    });
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      equal((await b.registry.get(run.run_id)).run.ended_at_epoch_ms, T0 + 5000);
      const events = (await b.registry.listEvents(run.run_id, {})).events;
      deepEqual(
        events.map((e) => [
          e.sequence,
          e.category,
          e.occurred_at_epoch_ms - T0,
          e.recorded_at_epoch_ms - T0,
        ]),
        [
          [1, "run_opened", 0, 0],
          [2, "annotation", 5000, 5000],
          [3, "call", 3000, 5000],
          [4, "run_closed", 5000, 5000],
        ],
        "recorded at the run's last known activity, not at the stepped-back clock's T0 + 1000",
      );
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry.start writes the calls interrupted by a crash into the run it abandons, before run_closed; none into a closed run", async () => {
  await withDir(async (dir) => {
    const { b, earlier, run } = await restartWithInterruptedCalls(dir, () =>
      [
        interruptedCall(T0 + 150, "set_duty"),
        interruptedCall(T0 + 5, "in_closed"),
        interruptedCall(T0 - 1, "x"),
      ].map((c) => ({ call: c })));
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      const events = (await b.registry.listEvents(run.run_id, {})).events;
      deepEqual(events.map((e) => [e.sequence, e.category, e.type, e.occurred_at_epoch_ms]), [
        [1, "run_opened", "", T0 + 100],
        [2, "call", "sim0/motorctl0 set_duty", T0 + 150],
        [3, "run_closed", "abandoned", T0 + 150],
      ]);
      equal(events[1]!.payload.outcome, "interrupted");
      const before = (await b.registry.listEvents(earlier.run_id, {})).events;
      deepEqual(before.map((e) => e.category), ["run_opened", "run_closed"]);
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry.start gives an interrupted call to the run it names, not by wall time: a clock stepped back after the run opened does not drop it", async () => {
  await withDir(async (dir) => {
    // The host clock stepped back after the run opened: its call reads earlier than the run.
    const { b, earlier, run } = await restartWithInterruptedCalls(dir, ({ earlier, run }) => [
      { call: interruptedCall(T0 + 50, "set_duty"), runId: run.run_id },
      // Decided while no run was open (after the clock stepped): no run's event.
      { call: interruptedCall(T0 + 150, "none"), runId: null },
      // Decided in the closed run (its close recorded it in flight): not written again.
      { call: interruptedCall(T0 + 120, "in_closed"), runId: earlier.run_id },
    ]);
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      const events = (await b.registry.listEvents(run.run_id, {})).events;
      deepEqual(events.map((e) => [e.sequence, e.category, e.type, e.occurred_at_epoch_ms]), [
        [1, "run_opened", "", T0 + 100],
        [2, "call", "sim0/motorctl0 set_duty", T0 + 50],
        [3, "run_closed", "abandoned", T0 + 100],
      ]);
      const before = (await b.registry.listEvents(earlier.run_id, {})).events;
      deepEqual(before.map((e) => e.category), ["run_opened", "run_closed"]);
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry ids keep sorting by opening order across a restart whose clock is behind the previous process's, and the before cursor of a removed run pages on", async () => {
  await withDir(async (dir) => {
    const a = await harness(dir, { maxRuns: 2 }, new ManualClock(0, T0 + 3_600_000));
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const { run } = await a.registry.open({});
      await a.registry.close(run.run_id, {});
      ids.push(run.run_id);
    }
    await a.registry.shutdown();
    // The host clock was an hour ahead and NTP stepped it back before this start.
    const b = await harness(dir, { maxRuns: 2 }, new ManualClock(0, T0));
    try {
      const { run } = await b.registry.open({});
      await b.registry.close(run.run_id, {});
      ids.push(run.run_id);
      const ulids = ids.map((id) => id.slice(-26));
      deepEqual([...ulids].sort(), ulids, "ids sort in the order the runs opened");
      // Retention removed the oldest (ids[0]): a client paging with it as cursor gets the runs
      // opened before it (none), not the newer ones again.
      await rejects(b.registry.get(ids[0]!), /not found/i);
      deepEqual((await b.registry.list({ before: ids[0]! })).runs.map((r) => r.run_id), []);
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry skips corrupt journal lines and keeps appending cleanly", async () => {
  await withDir(async (dir) => {
    const a = await harness(dir);
    const { run } = await a.registry.open({ experiment_label: "x" });
    await a.registry.addMarker(run.run_id, { type: "m1" });
    await a.registry.close(run.run_id, {});
    await a.registry.shutdown();
    // A garbage line in the middle and a partial trailing line (torn write at a crash).
    const journal = `${dir}/runs.jsonl`;
    const text = await Deno.readTextFile(journal);
    const [first, ...rest] = text.split("\n");
    await Deno.writeTextFile(journal, [first, "not json", ...rest].join("\n") + '{"v":1,"op":"clo');
    const eventsFile = `${dir}/runs/${run.run_id.slice(-26)}.jsonl`;
    await Deno.writeTextFile(eventsFile, '{"broken\n', { append: true });

    const b = await harness(dir);
    try {
      deepEqual(b.registry.startupReport().corruptLines, [`${journal}:2`, `${journal}:4`]);
      ok(b.logs.some((l) => l.startsWith(`warn ${journal}:4: corrupt run journal line skipped`)));
      equal((await b.registry.get(run.run_id)).run.state, "closed");
      equal((await b.registry.listEvents(run.run_id, {})).count, 3, "corrupt event line skipped");
      const next = await b.registry.open({ experiment_label: "after" });
      await b.registry.close(next.run.run_id, {});
    } finally {
      await b.registry.shutdown();
    }

    const c = await harness(dir);
    try {
      // The torn line stays reported, but the records appended after it are intact.
      deepEqual(c.registry.startupReport().corruptLines, [`${journal}:2`, `${journal}:4`]);
      equal((await c.registry.list({})).count, 2);
      equal(
        (await c.registry.get(runIdOf(await c.registry.list({}), "after"))).run.state,
        "closed",
      );
    } finally {
      await c.registry.shutdown();
    }
  });
});

/** An array value nested `depth` levels deep (`[[[]]]` is 3). */
function nested(depth: number): unknown {
  let v: unknown = [];
  for (let i = 1; i < depth; i++) v = [v];
  return v;
}

Deno.test("RunRegistry replay skips a record nested too deep and keeps serving the rest", async () => {
  await withDir(async (dir) => {
    const a = await harness(dir);
    const kept = (await a.registry.open({ experiment_label: "kept" })).run;
    await a.registry.close(kept.run_id, {});
    await a.registry.shutdown();
    // What an earlier version journaled for `POST /v0/runs` with 4,000 nested arrays in params.
    const deepRun = {
      ...kept,
      run_id: "lab1-01JB0Z8Q6M5S2K7T9V3W4X5Y6Z",
      state: "open",
      close_reason: null,
      ended_at_epoch_ms: null,
      params: { p: nested(4000) },
    };
    const journal = `${dir}/runs.jsonl`;
    await Deno.writeTextFile(journal, JSON.stringify({ v: 1, op: "open", run: deepRun }) + "\n", {
      append: true,
    });

    for (let start = 0; start < 2; start++) {
      const b = await harness(dir);
      try {
        deepEqual(b.registry.startupReport().corruptLines, [`${journal}:3`]);
        ok(b.logs.some((l) => l.includes(`${journal}:3: corrupt run journal line skipped`)));
        deepEqual(b.registry.startupReport().abandonedRunIds, []);
        const list = await b.registry.list({});
        deepEqual(
          list.runs.map((r) => r.experiment_label),
          start === 0 ? ["kept"] : [
            "again",
            "kept",
          ],
        );
        await rejectsWith(b.registry.get(deepRun.run_id), "NOT_FOUND");
        equal((await b.registry.get(kept.run_id)).run.state, "closed");
        if (start === 0) {
          const again = await b.registry.open({ experiment_label: "again" });
          await b.registry.close(again.run.run_id, {});
        }
      } finally {
        await b.registry.shutdown();
      }
    }
  });
});

Deno.test("RunRegistry refuses params and payloads nested deeper than MAX_RUN_JSON_DEPTH before writing", async () => {
  await withRegistry(async ({ registry, sunk }, dir) => {
    const journal = `${dir}/runs.jsonl`;
    const before = await Deno.readTextFile(journal);
    // params itself is level 1: {a: nested(32)} is 33 levels.
    await rejectsWith(
      registry.open({ params: { a: nested(MAX_RUN_JSON_DEPTH) } }),
      "INVALID_ARGUMENT",
      /^params: nested deeper than 32 levels/,
    );
    equal(await Deno.readTextFile(journal), before, "nothing journaled");
    equal(registry.openRunId(), null);
    equal((await registry.list({})).count, 0);
    equal(sunk.length, 0);

    const { run } = await registry.open({ params: { a: nested(MAX_RUN_JSON_DEPTH - 1) } });
    await rejectsWith(
      registry.addMarker(run.run_id, { type: "t", payload: { a: nested(MAX_RUN_JSON_DEPTH) } }),
      "INVALID_ARGUMENT",
      /^payload: nested deeper than 32 levels/,
    );
    await registry.addMarker(run.run_id, {
      type: "t",
      payload: { a: nested(MAX_RUN_JSON_DEPTH - 1) },
    });
    deepEqual(sunk.map((s) => s.event.category), ["run_opened", "annotation"]);
    deepEqual(
      (await registry.listEvents(run.run_id, {})).events.map((e) => e.sequence),
      [1, 2],
    );
  });
});

function runIdOf(list: { runs: Run[] }, label: string): string {
  const r = list.runs.find((x) => x.experiment_label === label);
  ok(r, `run ${label}`);
  return r.run_id;
}

Deno.test("RunRegistry journals mode, parameter and automation fault events into the open run", async () => {
  await withDir(async (dir) => {
    const { registry, clock } = await harness(dir);
    const bus = new EventBus();
    const detach = registry.attach(bus);
    try {
      bus.publish({
        kind: "mode_change",
        previous_mode: "IDLE",
        new_mode: "MANUAL",
        timestamp_ms: 1,
      });
      const { run } = await registry.open({});
      clock.wall = T0 + 5;
      bus.publish({
        kind: "mode_change",
        previous_mode: "MANUAL",
        new_mode: "AUTO",
        timestamp_ms: T0 + 1,
      });
      bus.publish({
        kind: "parameter_change",
        parameter_name: "sp",
        old_value: "25.000000",
        new_value: "30.000000",
        timestamp_ms: T0 + 2,
      });
      bus.publish({ kind: "automation_fault", locus: "tick", error: "boom", timestamp_ms: T0 + 3 });
      bus.publish({ kind: "bt_error", node: "n", error: "ignored", timestamp_ms: T0 + 4 });
      const { events } = await registry.listEvents(run.run_id, {});
      deepEqual(
        events.slice(1).map((e) => ({ ...e, schema_version: undefined, run_id: undefined })),
        [
          {
            schema_version: undefined,
            run_id: undefined,
            sequence: 2,
            category: "mode_change",
            type: "",
            occurred_at_epoch_ms: T0 + 1,
            recorded_at_epoch_ms: T0 + 5,
            payload: { previous_mode: "MANUAL", new_mode: "AUTO" },
          },
          {
            schema_version: undefined,
            run_id: undefined,
            sequence: 3,
            category: "parameter_change",
            type: "sp",
            occurred_at_epoch_ms: T0 + 2,
            recorded_at_epoch_ms: T0 + 5,
            payload: { parameter_name: "sp", old_value: "25.000000", new_value: "30.000000" },
          },
          {
            schema_version: undefined,
            run_id: undefined,
            sequence: 4,
            category: "automation_fault",
            type: "tick",
            occurred_at_epoch_ms: T0 + 3,
            recorded_at_epoch_ms: T0 + 5,
            payload: { message: "boom" },
          },
        ],
      );
      equal(events.length, 4);
      detach();
      bus.publish({
        kind: "mode_change",
        previous_mode: "AUTO",
        new_mode: "IDLE",
        timestamp_ms: T0 + 9,
      });
      equal((await registry.listEvents(run.run_id, {})).count, 4, "detached");
    } finally {
      await registry.shutdown();
    }
  });
});

Deno.test("RunRegistry journals alarm transitions and interlock engage/release, a 64-bit value beyond 2^53 as its digits", async () => {
  await withDir(async (dir) => {
    const { registry, clock } = await harness(dir);
    const bus = new EventBus();
    registry.attach(bus);
    try {
      const { run } = await registry.open({});
      clock.wall = T0 + 5;
      bus.publish({
        kind: "alarm",
        alarm_id: "count_high",
        transition: "raise",
        state: "active",
        level: "MAJOR",
        cause: "hihi",
        limit: 100,
        signal: "p/d/count",
        value: { type: "uint64", uint64: 2n ** 60n },
        quality: "OK",
        action: "none",
        message: "",
        shelved_until_epoch_ms: null,
        timestamp_ms: T0 + 1,
      });
      bus.publish({
        kind: "interlock",
        interlock_id: "hot",
        blocking: true,
        reason: "p/d/t = 81",
        message: "m",
        block: ["p/d/f"],
        timestamp_ms: T0 + 2,
      });
      bus.publish({
        kind: "interlock",
        interlock_id: "hot",
        blocking: false,
        reason: null,
        message: "m",
        block: ["p/d/f"],
        timestamp_ms: T0 + 3,
      });
      const { events } = await registry.listEvents(run.run_id, {});
      deepEqual(
        events.slice(1).map((e) => [e.category, e.type, e.occurred_at_epoch_ms, e.payload]),
        [
          ["alarm", "raise", T0 + 1, {
            alarm_id: "count_high",
            state: "active",
            level: "MAJOR",
            cause: "hihi",
            limit: 100,
            signal: "p/d/count",
            value: { type: "uint64", uint64: "1152921504606846976" },
            quality: "OK",
            action: "none",
            message: "",
            shelved_until_epoch_ms: null,
          }],
          ["interlock", "engage", T0 + 2, {
            interlock_id: "hot",
            blocking: true,
            reason: "p/d/t = 81",
            message: "m",
          }],
          ["interlock", "release", T0 + 3, {
            interlock_id: "hot",
            blocking: false,
            reason: null,
            message: "m",
          }],
        ],
      );
    } finally {
      await registry.shutdown();
    }
  });
});

Deno.test("RunRegistry answers UNAVAILABLE when its data dir cannot be used", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runs_test_" });
  try {
    await Deno.writeTextFile(`${dir}/file`, "not a directory");
    const { registry, logs } = await harness(`${dir}/file/data`);
    const info = registry.info();
    equal(info.available, false);
    ok(info.unavailable_reason !== null);
    ok(logs.some((l) => l.startsWith("error run registry unavailable")));
    await rejectsWith(registry.open({}), "UNAVAILABLE");
    await rejectsWith(registry.list({}), "UNAVAILABLE");
    await registry.shutdown();
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("RunRegistry stops recording an open run's events at runs.max_run_bytes: counted, markers refused, the close says how many", async () => {
  await withDir(async (dir) => {
    const maxRunBytes = 64 * 1024;
    const { registry, logs } = await harness(dir, { maxRunBytes });
    const { run } = await registry.open({});
    const call = (i: number) => ({
      first_time_epoch_ms: T0 + i,
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      args: { duty: { type: "double", double: i / 1000 } },
      outcome: "accepted",
      note: "x".repeat(200),
    });
    // A tree in AUTO calling with a new value every tick: far more than the bound holds.
    for (let i = 0; i < 1000; i++) registry.recordCall(call(i));
    const marker = registry.addMarker(run.run_id, { type: "late" });
    await rejectsWith(marker, "FAILED_PRECONDITION", /reached runs\.max_run_bytes \(65536 bytes\)/);
    // A read waits for the appends queued before it: then the file holds them.
    const recorded = (await registry.listEvents(run.run_id, { limit: 1000 })).events;
    const size = (await Deno.stat(eventFile(dir, run.run_id))).size;
    ok(size <= maxRunBytes, `event file of ${size} bytes`);
    ok(size > maxRunBytes - 1024, `the bound is used: ${size} bytes`);
    const calls = recorded.filter((e) => e.category === "call").length;
    ok(calls > 100 && calls < 1000, `${calls} calls recorded`);
    deepEqual(recorded.map((e) => e.sequence), recorded.map((_, i) => i + 1), "no holes");
    equal(logs.filter((l) => /reached runs\.max_run_bytes/.test(l)).length, 1, logs.join("\n"));

    await registry.close(run.run_id, { close_reason: "completed" });
    const all = (await registry.listEvents(run.run_id, { limit: 1000 })).events;
    const closed = all.at(-1)!;
    equal(closed.category, "run_closed");
    equal(closed.sequence, calls + 2);
    deepEqual(closed.payload, { events_not_recorded: 1000 - calls });
    // The next run starts with the whole bound again.
    const next = (await registry.open({})).run;
    registry.recordCall(call(0));
    equal((await registry.listEvents(next.run_id, {})).events.length, 2);
    await registry.shutdown();
  });
});

async function openAndClose(
  registry: RunRegistry,
  label: string,
  markerBytes = 0,
): Promise<string> {
  const { run } = await registry.open({ experiment_label: label });
  if (markerBytes > 0) {
    await registry.addMarker(run.run_id, { type: "big", payload: { x: "x".repeat(markerBytes) } });
  }
  await registry.close(run.run_id, { close_reason: "completed" });
  return run.run_id;
}

const eventFile = (dir: string, runId: string) => `${dir}/runs/${runId.slice(-26)}.jsonl`;

async function exists(path: string): Promise<boolean> {
  try {
    await Deno.stat(path);
    return true;
  } catch {
    return false;
  }
}

Deno.test("RunRegistry keeps runs.max_runs closed runs: the oldest go with their event files, never the open one; a restart rewrites runs.jsonl with the kept runs", async () => {
  await withDir(async (dir) => {
    const h = await harness(dir, { maxRuns: 3 });
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) ids.push(await openAndClose(h.registry, `r${i}`));
    const open = (await h.registry.open({ experiment_label: "open" })).run.run_id;
    const listed = (await h.registry.list({})).runs.map((r) => r.experiment_label);
    deepEqual(listed, ["open", "r4", "r3", "r2"]);
    equal(await exists(eventFile(dir, ids[0]!)), false);
    equal(await exists(eventFile(dir, ids[1]!)), false);
    equal(await exists(eventFile(dir, ids[2]!)), true);
    await rejectsWith(h.registry.get(ids[0]!), "NOT_FOUND");
    ok(h.logs.some((l) => /^info runs: 1 oldest closed run removed \(runs\.max_runs 3/.test(l)));
    // Closing the open run removes the oldest kept one.
    await h.registry.close(open, { close_reason: "completed" });
    deepEqual((await h.registry.list({})).runs.map((r) => r.experiment_label), [
      "open",
      "r4",
      "r3",
    ]);
    await h.registry.shutdown();
    const lines = async () =>
      (await Deno.readTextFile(`${dir}/runs.jsonl`)).split("\n").filter(Boolean).length;
    equal(await lines(), 12, "the journal holds every record until a start rewrites it");
    // Each close record gives its event file's final size: a start need not look at the files.
    const closes = (await Deno.readTextFile(`${dir}/runs.jsonl`)).split("\n").filter(Boolean)
      .map((l) => JSON.parse(l)).filter((r) => r.op === "close");
    equal(closes.length, 6);
    const last = closes.at(-1)!;
    equal(last.run_id, open);
    equal(last.event_bytes, (await Deno.stat(eventFile(dir, open))).size);

    // A start with a smaller bound: the oldest go, and runs.jsonl keeps only the rest.
    const again = await harness(dir, { maxRuns: 2 });
    deepEqual((await again.registry.list({})).runs.map((r) => r.experiment_label), ["open", "r4"]);
    equal(await exists(eventFile(dir, ids[3]!)), false);
    equal(await lines(), 4);
    deepEqual((await again.registry.listEvents(open, {})).events.map((e) => e.category), [
      "run_opened",
      "run_closed",
    ]);
    await again.registry.shutdown();
    const third = await harness(dir, { maxRuns: 2 });
    const kept = (await third.registry.list({})).runs;
    deepEqual(kept.map((r) => [r.experiment_label, r.state, r.close_reason]), [
      ["open", "closed", "completed"],
      ["r4", "closed", "completed"],
    ]);
    deepEqual(third.registry.startupReport().corruptLines, []);
    await third.registry.shutdown();
  });
});

Deno.test("RunRegistry keeps the closed runs' event files within runs.max_total_bytes, oldest first, never the newest", async () => {
  await withDir(async (dir) => {
    const { registry } = await harness(dir, { maxTotalBytes: 64 * 1024 });
    const a = await openAndClose(registry, "a", 40_000);
    const b = await openAndClose(registry, "b", 20_000);
    equal(await exists(eventFile(dir, a)), true, "60 KB together: both kept");
    const c = await openAndClose(registry, "c", 30_000);
    equal(await exists(eventFile(dir, a)), false, "a went first");
    equal(await exists(eventFile(dir, b)), true, "b and c fit together");
    deepEqual((await registry.list({})).runs.map((r) => r.experiment_label), ["c", "b"]);
    // A run larger than the bound on its own is still kept while it is the newest.
    const { run } = await registry.open({ experiment_label: "d" });
    for (let i = 0; i < 2; i++) {
      await registry.addMarker(run.run_id, { type: "big", payload: { x: "x".repeat(40_000) } });
    }
    await registry.close(run.run_id, {});
    deepEqual((await registry.list({})).runs.map((r) => r.experiment_label), ["d"]);
    equal(await exists(eventFile(dir, c)), false);
    equal((await registry.listEvents(run.run_id, {})).events.length, 4);
    await registry.shutdown();
  });
});

Deno.test("RunRegistry sizes closed runs from their files when the close records do not say (an older version's journal), and prunes and rewrites it at start", async () => {
  await withDir(async (dir) => {
    const first = await harness(dir);
    const ids: string[] = [];
    for (const label of ["a", "b", "c"]) {
      ids.push(await openAndClose(first.registry, label, 40_000));
    }
    await first.registry.shutdown();
    const journal = `${dir}/runs.jsonl`;
    const older = (await Deno.readTextFile(journal)).split("\n").filter(Boolean).map((l) => {
      const { event_bytes: _, ...rec } = JSON.parse(l);
      return JSON.stringify(rec);
    });
    await Deno.writeTextFile(journal, older.join("\n") + "\n");

    const again = await harness(dir, { maxTotalBytes: 64 * 1024 });
    deepEqual((await again.registry.list({})).runs.map((r) => r.experiment_label), ["c"]);
    equal(await exists(eventFile(dir, ids[0]!)), false);
    equal(await exists(eventFile(dir, ids[1]!)), false);
    const records = (await Deno.readTextFile(journal)).split("\n").filter(Boolean)
      .map((l) => JSON.parse(l));
    deepEqual(records.map((r) => r.op), ["open", "close"]);
    equal(records[1].event_bytes, (await Deno.stat(eventFile(dir, ids[2]!))).size);
    await again.registry.shutdown();
  });
});

Deno.test("RunRegistry records the runs of a process whose start rewrote runs.jsonl (the journal is reopened on the rewritten file)", async () => {
  await withDir(async (dir) => {
    const first = await harness(dir, { maxRuns: 5 });
    for (let i = 0; i < 4; i++) await openAndClose(first.registry, `r${i}`);
    await first.registry.shutdown();
    // A start with a smaller bound prunes and rewrites runs.jsonl; the runs of this process are
    // then appended to the rewritten file, not to the one it replaced.
    const second = await harness(dir, { maxRuns: 2 });
    const after = await openAndClose(second.registry, "after");
    const open = (await second.registry.open({ experiment_label: "left open" })).run.run_id;
    await second.registry.shutdown();
    const third = await harness(dir, { maxRuns: 2 });
    deepEqual(
      (await third.registry.list({})).runs.map((r) => [r.run_id, r.experiment_label, r.state]),
      [[open, "left open", "closed"], [after, "after", "closed"]],
    );
    deepEqual(third.registry.startupReport().abandonedRunIds, [open]);
    await third.registry.shutdown();
  });
});

Deno.test("RunRegistry rewrites runs.jsonl while it runs once it holds twice the lines its kept runs need, and keeps appending to the rewritten file", async () => {
  await withDir(async (dir) => {
    const { registry } = await harness(dir, { maxRuns: 2 });
    const lines = async () =>
      (await Deno.readTextFile(`${dir}/runs.jsonl`)).split("\n").filter(Boolean).length;
    let most = 0;
    const ids: string[] = [];
    for (let i = 0; i < 100; i++) {
      ids.push(await openAndClose(registry, `r${i}`));
      most = Math.max(most, await lines());
    }
    // Two kept runs need 4 lines: rewritten past 4 x 2 + 64, never the 200 lines of 100 runs.
    ok(most <= 4 * 2 + 64 + 2, `runs.jsonl reached ${most} lines`);
    ok(most > 4 * 2 + 64 - 2, `runs.jsonl was rewritten early, at ${most} lines`);
    const open = (await registry.open({ experiment_label: "open" })).run.run_id;
    await registry.shutdown();
    const again = await harness(dir, { maxRuns: 2 });
    deepEqual(
      (await again.registry.list({})).runs.map((r) => [r.run_id, r.state, r.close_reason]),
      [[open, "closed", "abandoned"], [ids[99]!, "closed", "completed"]],
    );
    deepEqual(again.registry.startupReport().corruptLines, []);
    await again.registry.shutdown();
  });
});

Deno.test("RunRegistry answers NOT_FOUND, not an I/O failure, for a page of events of a run retention removed while the read waited for a close", async () => {
  await withDir(async (dir) => {
    const h = await harness(dir, { maxRuns: 1 });
    try {
      const old = await openAndClose(h.registry, "old");
      const { run } = await h.registry.open({ experiment_label: "new" });
      // The read is asked while the close (which removes the oldest run) is queued before it.
      const closing = h.registry.close(run.run_id, {});
      const read = h.registry.listEvents(old, {});
      await closing;
      await rejectsWith(read, "NOT_FOUND", /Run not found/);
      ok(!h.logs.some((l) => l.startsWith("error ")), h.logs.join("\n"));
    } finally {
      await h.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry records an e-stop's trigger, its reason arriving later and its clear as estop events of the open run", async () => {
  await withDir(async (dir) => {
    const { registry, clock } = await harness(dir);
    const bus = new EventBus();
    registry.attach(bus);
    try {
      const { run } = await registry.open({});
      let give = (_r: string | null) => {};
      const reason = new Promise<string | null>((r) => (give = r));
      bus.publish({
        kind: "estop_change",
        latched: true,
        reason: null,
        cause: "api",
        timestamp_ms: T0 + 1,
      });
      registry.recordEstopReason(reason, "api");
      clock.wall = T0 + 2;
      give("coolant leak");
      await reason;
      await Promise.resolve();
      bus.publish({
        kind: "estop_change",
        latched: false,
        reason: null,
        cause: null,
        timestamp_ms: T0 + 3,
      });
      const { events } = await registry.listEvents(run.run_id, {});
      deepEqual(
        events.slice(1).map((e) => [e.category, e.type, e.occurred_at_epoch_ms, e.payload]),
        [
          ["estop", "trigger", T0 + 1, { latched: true, reason: null, cause: "api" }],
          ["estop", "reason", T0 + 2, { reason: "coolant leak", cause: "api" }],
          ["estop", "clear", T0 + 3, { latched: false, reason: null, cause: null }],
        ],
      );
    } finally {
      await registry.shutdown();
    }
  });
});

Deno.test("RunRegistry records an e-stop's read-back and a failed hook into FAULT as events of the open run", async () => {
  await withDir(async (dir) => {
    const { registry } = await harness(dir);
    const bus = new EventBus();
    registry.attach(bus);
    try {
      const { run } = await registry.open({});
      bus.publish({
        kind: "hook_failure",
        transition: "AUTO->FAULT",
        phase: "after",
        hook: "automation.hooks.on_fault[0]",
        device_handle: "sim0/valve0",
        function: "close",
        error: "DEADLINE_EXCEEDED: no answer within 2000 ms",
        timestamp_ms: T0 + 1,
      });
      bus.publish({
        kind: "estop_verification",
        outcome: "mismatch",
        elapsed_ms: 12,
        checks_total: 2,
        checks_verified: 1,
        failed_signals: ["sim0/valve0/open"],
        timestamp_ms: T0 + 2,
      });
      const { events } = await registry.listEvents(run.run_id, {});
      deepEqual(
        events.slice(1).map((e) => [e.category, e.type, e.occurred_at_epoch_ms, e.payload]),
        [
          ["hook_failure", "AUTO->FAULT", T0 + 1, {
            transition: "AUTO->FAULT",
            phase: "after",
            hook: "automation.hooks.on_fault[0]",
            device_handle: "sim0/valve0",
            function: "close",
            error: "DEADLINE_EXCEEDED: no answer within 2000 ms",
          }],
          ["estop", "verification", T0 + 2, {
            outcome: "mismatch",
            elapsed_ms: 12,
            checks_total: 2,
            checks_verified: 1,
            failed_signals: ["sim0/valve0/open"],
          }],
        ],
      );
    } finally {
      await registry.shutdown();
    }
  });
});

Deno.test("RunRegistry never ends a run before it started: after a wall-clock step back its end is the start plus the monotonic time since, and a restart whose clock is behind closes the abandoned run at its start", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(0, T0);
    const { registry } = await harness(dir, {}, clock);
    const { run } = await registry.open({});
    clock.advance(5_000);
    clock.wall = T0 - 60_000; // the host clock corrected back by a minute
    const { run: closed } = await registry.close(run.run_id, {});
    const { events } = await registry.listEvents(run.run_id, {});
    const { run: left } = await registry.open({});
    await registry.shutdown();
    equal(closed.ended_at_epoch_ms, T0 + 5_000, "ended 5 s (monotonic) after it started");
    equal(events.at(-1)!.occurred_at_epoch_ms, T0 + 5_000, "run_closed at the same time");
    // The next process's clock is further behind: the run it abandons ends at its start.
    const later = await harness(dir, {}, new ManualClock(0, T0 - 120_000));
    try {
      const { run: abandoned } = await later.registry.get(left.run_id);
      equal(abandoned.close_reason, "abandoned");
      ok(
        abandoned.ended_at_epoch_ms! >= abandoned.started_at_epoch_ms,
        `ended ${abandoned.ended_at_epoch_ms} before it started ${abandoned.started_at_epoch_ms}`,
      );
    } finally {
      await later.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry starts a run no earlier than the run before it ended: after a wall-clock step back between them, that end plus the monotonic time since", async () => {
  await withRegistry(async ({ registry, clock }) => {
    const { run: first } = await registry.open({});
    clock.advance(5_000);
    clock.wall = T0 + 5_000;
    const { run: closed } = await registry.close(first.run_id, {});
    clock.advance(2_000);
    clock.wall = T0 - 60_000; // NTP corrects the host clock back by a minute between the runs
    const { run: next } = await registry.open({});
    const { events } = await registry.listEvents(next.run_id, {});
    equal(closed.ended_at_epoch_ms, T0 + 5_000);
    equal(next.started_at_epoch_ms, T0 + 7_000, "the first run's end plus 2 s (monotonic)");
    equal(events[0]!.occurred_at_epoch_ms, T0 + 7_000, "its run_opened at its start");
    const { runs } = await registry.list({});
    deepEqual(runs.map((r) => r.run_id), [next.run_id, first.run_id], "newest first");
    // Once the wall clock is past it again, its own time.
    clock.advance(1_000);
    clock.wall = T0 + 60_000;
    await registry.close(next.run_id, {});
    const { run: third } = await registry.open({});
    equal(third.started_at_epoch_ms, T0 + 60_000);
  });
});

Deno.test("RunRegistry starts a run no earlier than the safety events between runs its run_opened lists: after a wall-clock step back since them, at the latest; a previous process's are no reference", async () => {
  await withDir(async (dir) => {
    const { registry, clock } = await harness(dir);
    const bus = new EventBus();
    registry.attach(bus);
    try {
      // An e-stop between runs (no run open yet), then FAULT.
      clock.advance(5_000);
      clock.wall = T0 + 5_000;
      bus.publish({
        kind: "estop_change",
        latched: true,
        reason: "leak",
        cause: "api",
        timestamp_ms: T0 + 5_000,
      });
      bus.publish({
        kind: "mode_change",
        previous_mode: "AUTO",
        new_mode: "FAULT",
        timestamp_ms: T0 + 5_001,
      });
      clock.advance(2_000);
      clock.wall = T0 - 60_000; // NTP corrects the host clock back by a minute before the open
      const { run: opened } = await registry.open({});
      const { events } = await registry.listEvents(opened.run_id, {});
      deepEqual(events[0]!.payload.safety_events_between_runs, {
        count: 2,
        estop_triggers: 1,
        first_at_epoch_ms: T0 + 5_000,
        last_at_epoch_ms: T0 + 5_001,
      });
      equal(opened.started_at_epoch_ms, T0 + 5_001, "no earlier than the events it lists");
      equal(events[0]!.occurred_at_epoch_ms, T0 + 5_001, "its run_opened at its start");
      await registry.close(opened.run_id, {});
      // Another e-stop between runs, saved for the next process, whose clock is an hour behind.
      bus.publish({
        kind: "estop_change",
        latched: true,
        reason: "leak",
        cause: "api",
        timestamp_ms: T0 + 9_000,
      });
    } finally {
      await registry.shutdown();
    }
    const later = await harness(dir, {}, new ManualClock(0, T0 - 3_600_000));
    try {
      const { run } = await later.registry.open({});
      const { events } = await later.registry.listEvents(run.run_id, {});
      equal(
        (events[0]!.payload.safety_events_between_runs as { last_at_epoch_ms: number })
          .last_at_epoch_ms,
        T0 + 9_000,
      );
      equal(
        run.started_at_epoch_ms,
        T0 - 3_600_000,
        "its own clock: the previous one may be ahead",
      );
    } finally {
      await later.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry records a run's events and its run_closed no earlier than the events before them when the wall clock steps back while the run is open", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(0, T0);
    const { registry } = await harness(dir, {}, clock);
    try {
      const { run } = await registry.open({});
      clock.wall = T0 + 5_000;
      await registry.addMarker(run.run_id, { type: "before the step" });
      // NTP steps the clock back 4 s while the run is open.
      clock.wall = T0 + 1_000;
      await registry.addMarker(run.run_id, { type: "after the step" });
      registry.recordCall({
        first_time_epoch_ms: T0 + 1_000,
        device_handle: "sim0/motorctl0",
        function: "set_duty",
        outcome: "accepted",
      });
      const { run: closed } = await registry.close(run.run_id, {});
      const { events } = await registry.listEvents(run.run_id, {});
      deepEqual(
        events.map((e) => [
          e.sequence,
          e.category,
          e.occurred_at_epoch_ms - T0,
          e.recorded_at_epoch_ms - T0,
        ]),
        [
          [1, "run_opened", 0, 0],
          [2, "annotation", 5_000, 5_000],
          [3, "annotation", 1_000, 5_000],
          [4, "call", 1_000, 5_000],
          [5, "run_closed", 5_000, 5_000],
        ],
        "recorded at the latest time recorded before them, not at the stepped-back clock's T0 + 1000",
      );
      equal(closed.ended_at_epoch_ms, T0 + 5_000, "ended no earlier than its events' recording");
    } finally {
      await registry.shutdown();
    }
  });
});

Deno.test("RunRegistry closes a run abandoned by a crash at its latest recorded time when the wall clock stepped back while it was open", async () => {
  await withDir(async (dir) => {
    const clock = new ManualClock(0, T0);
    const a = await harness(dir, {}, clock);
    const { run } = await a.registry.open({});
    clock.wall = T0 + 5_000;
    await a.registry.addMarker(run.run_id, { type: "before the step" });
    clock.wall = T0 + 1_000; // NTP steps the clock back 4 s while the run is open
    await a.registry.addMarker(run.run_id, { type: "last words" });
    await a.registry.shutdown();
    // As by a crash: the journal holds the open record only, not the save a shutdown makes.
    const journal = `${dir}/runs.jsonl`;
    const lines = (await Deno.readTextFile(journal)).split("\n");
    await Deno.writeTextFile(
      journal,
      lines.filter((l) => !l.includes('"shutdown":true')).join("\n"),
    );

    const b = await harness(dir, {}, new ManualClock(0, T0 + 2_000));
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      equal(
        (await b.registry.get(run.run_id)).run.ended_at_epoch_ms,
        T0 + 5_000,
        "its last event's recorded time is the latest of its events'",
      );
      const closed = (await b.registry.listEvents(run.run_id, {})).events.at(-1)!;
      deepEqual(
        [closed.category, closed.occurred_at_epoch_ms - T0, closed.recorded_at_epoch_ms - T0],
        ["run_closed", 5_000, 5_000],
      );
    } finally {
      await b.registry.shutdown();
    }
  });
});

Deno.test("RunRegistry: after a crash of a run past runs.max_run_bytes, the next start's run_closed still says how many events were left out (saved to runs.jsonl as they were)", async () => {
  await withDir(async (dir) => {
    const maxRunBytes = 64 * 1024;
    const clock = new ManualClock(0, T0);
    const a = await harness(dir, { maxRunBytes }, clock);
    const { run } = await a.registry.open({});
    const call = (i: number) => ({
      first_time_epoch_ms: T0 + i,
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      args: { duty: { type: "double", double: i / 1000 } },
      outcome: "accepted",
      note: "x".repeat(200),
    });
    for (let i = 0; i < 1000; i++) a.registry.recordCall(call(i));
    const calls = (await a.registry.listEvents(run.run_id, { limit: 1000 })).events
      .filter((e) => e.category === "call").length;
    ok(calls < 1000, `${calls} calls recorded`);
    // The count is saved at most every RUN_NOT_RECORDED_SAVE_MS (10 s): then it is on disk.
    clock.advance(10_000); // the wall clock with it
    const saved = `"count":${1000 - calls}`;
    await waitFor("the count saved", async () => {
      return (await Deno.readTextFile(`${dir}/runs.jsonl`)).includes(saved);
    });
    // The process dies here: its files as they are now, nothing written at shutdown.
    const crashed = `${dir}-crashed`;
    await Deno.mkdir(`${crashed}/runs`, { recursive: true });
    await Deno.copyFile(`${dir}/runs.jsonl`, `${crashed}/runs.jsonl`);
    await Deno.copyFile(eventFile(dir, run.run_id), eventFile(crashed, run.run_id));
    await a.registry.shutdown();

    const b = await harness(crashed, {}, new ManualClock(0, T0 + 3_600_000));
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      const closed = (await b.registry.listEvents(run.run_id, { limit: 1000 })).events.at(-1)!;
      equal(closed.category, "run_closed");
      equal(
        closed.payload.events_not_recorded,
        1000 - calls,
        "the events its process left out past the bound are still counted",
      );
      equal(closed.payload.events_not_recorded_saved_at_epoch_ms, T0 + 10_000);
      equal((await b.registry.get(run.run_id)).run.ended_at_epoch_ms, T0 + 10_000);
    } finally {
      await b.registry.shutdown();
      await Deno.remove(crashed, { recursive: true });
    }
  });
});

Deno.test("RunRegistry dates each save of a run's count of events left out no earlier than the one before it when the wall clock steps back, so a crash's close ends no earlier than a save on disk", async () => {
  await withDir(async (dir) => {
    const maxRunBytes = 64 * 1024;
    const clock = new ManualClock(0, T0);
    const a = await harness(dir, { maxRunBytes }, clock);
    const { run } = await a.registry.open({});
    const call = (i: number) => ({
      first_time_epoch_ms: T0 + i,
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      args: { duty: { type: "double", double: i / 1000 } },
      outcome: "accepted",
      note: "x".repeat(200),
    });
    const saves = async () =>
      (await Deno.readTextFile(`${dir}/runs.jsonl`)).split("\n").filter((l) =>
        l.includes('"op":"not_recorded"')
      ).map((l) => JSON.parse(l) as { count: number; at_epoch_ms: number });
    for (let i = 0; i < 1000; i++) a.registry.recordCall(call(i));
    const lastEvent = (await a.registry.listEvents(run.run_id, { limit: 1000 })).events.at(-1)!;
    // Past the bound: the next losses are saved RUN_NOT_RECORDED_SAVE_MS (10 s) after the first.
    a.registry.recordCall(call(1000));
    clock.advance(10_000); // the wall clock with it: saved at T0 + 10 s
    await waitFor("the second save", async () => (await saves()).length === 2);
    // NTP steps the clock back an hour; more losses, saved 10 s later.
    clock.stepWall(-3_600_000);
    a.registry.recordCall(call(1001));
    clock.advance(10_000);
    await waitFor("the third save", async () => (await saves()).length === 3);
    deepEqual(
      (await saves()).map((r) => r.at_epoch_ms - T0),
      [0, 10_000, 10_000],
      "never earlier than the save before it, not the stepped-back clock's T0 + 20 s - 1 h",
    );
    // The process dies here: its files as they are now, nothing written at shutdown.
    const crashed = `${dir}-crashed`;
    await Deno.mkdir(`${crashed}/runs`, { recursive: true });
    await Deno.copyFile(`${dir}/runs.jsonl`, `${crashed}/runs.jsonl`);
    await Deno.copyFile(eventFile(dir, run.run_id), eventFile(crashed, run.run_id));
    await a.registry.shutdown();

    const b = await harness(crashed, {}, new ManualClock(0, T0 + 3_600_000));
    try {
      deepEqual(b.registry.startupReport().abandonedRunIds, [run.run_id]);
      const closed = (await b.registry.listEvents(run.run_id, { limit: 1000 })).events.at(-1)!;
      equal(closed.category, "run_closed");
      equal(lastEvent.recorded_at_epoch_ms, T0, "its last event recorded before the saves");
      equal(closed.payload.events_not_recorded_saved_at_epoch_ms, T0 + 10_000);
      equal(
        (await b.registry.get(run.run_id)).run.ended_at_epoch_ms,
        T0 + 10_000,
        "at its last known activity: the save at T0 + 10 s, not its last event's T0",
      );
    } finally {
      await b.registry.shutdown();
      await Deno.remove(crashed, { recursive: true });
    }
  });
});

Deno.test("RunRegistry alarm events carry the action, the message (a long one cut) and shelved_until_epoch_ms, so a shelve says how long", async () => {
  await withDir(async (dir) => {
    const { registry } = await harness(dir);
    const bus = new EventBus();
    registry.attach(bus);
    try {
      const { run } = await registry.open({});
      const alarm = {
        kind: "alarm",
        alarm_id: "tc1_high",
        state: "shelved",
        level: "MINOR",
        cause: "hi",
        limit: 50,
        signal: "p/d/t",
        value: { type: "double", double: 51 },
        quality: "OK",
        action: "none",
      } as const;
      bus.publish({
        ...alarm,
        transition: "shelve",
        message: "Heater above 50 C",
        shelved_until_epoch_ms: T0 + 600_000,
        timestamp_ms: T0 + 1,
      });
      bus.publish({
        ...alarm,
        state: "active",
        transition: "raise",
        message: "m".repeat(100 * 1024),
        shelved_until_epoch_ms: null,
        timestamp_ms: T0 + 2,
      });
      const { events } = await registry.listEvents(run.run_id, {});
      const [shelve, raise] = events.slice(1);
      deepEqual(
        [shelve!.type, shelve!.payload.action, shelve!.payload.message],
        ["shelve", "none", "Heater above 50 C"],
      );
      // Before: undefined -- the run did not say how long the alarm was hidden.
      equal(shelve!.payload.shelved_until_epoch_ms, T0 + 600_000);
      equal(raise!.type, "raise");
      equal(raise!.payload.shelved_until_epoch_ms, null);
      equal(raise!.payload.truncated, true);
      match(String(raise!.payload.message), /^m+\.\.\.\[cut\]$/);
    } finally {
      await registry.shutdown();
    }
  });
});

Deno.test("RunRegistry dates an e-stop's reason arriving after a step back of the wall clock no earlier than its trigger", async () => {
  await withDir(async (dir) => {
    const { registry, clock } = await harness(dir);
    const bus = new EventBus();
    registry.attach(bus);
    try {
      const { run } = await registry.open({});
      let give = (_r: string | null) => {};
      const reason = new Promise<string | null>((r) => (give = r));
      bus.publish({
        kind: "estop_change",
        latched: true,
        reason: null,
        cause: "api",
        timestamp_ms: T0 + 10,
      });
      registry.recordEstopReason(reason, "api", T0 + 10);
      // NTP steps the wall clock back an hour while the body with the reason arrives.
      clock.wall = T0 - 3_600_000;
      give("coolant leak");
      await reason;
      await Promise.resolve();
      const { events } = await registry.listEvents(run.run_id, {});
      deepEqual(
        events.slice(1).map((e) => [e.category, e.type, e.occurred_at_epoch_ms]),
        [["estop", "trigger", T0 + 10], ["estop", "reason", T0 + 10]],
      );
    } finally {
      await registry.shutdown();
    }
  });
});
