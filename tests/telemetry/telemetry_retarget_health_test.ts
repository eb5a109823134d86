/**
 * A health snapshot under way when a reload retargets the writer (a `telemetry:` change: a new
 * token, a new database) is written, not lost: it was taken before the reload, so its rows join
 * the rows waiting, as the events published before it do (kept for the same database, or flushed
 * to the old one). Before, the writer dropped it as if stopped (its rows counted nowhere), and the
 * reload's new health timer took the next one a whole interval later: a gap in the health rows at
 * every such reload while a provider's GetHealth was slow. Nor does a reload move the snapshots'
 * schedule: each reload restarted the health timer from its own instant, so reloads more frequent
 * than the interval wrote no health row at all. Against an injected transport on one manual clock
 * (_scripted_db.ts).
 */
import assert from "node:assert/strict";
import type { ProviderHealthView } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { TelemetryWriter, type TelemetryWriterOptions } from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { providerHealthView, publishUpdates, ScriptedDb, SETTINGS } from "./_scripted_db.ts";

function health(): ProviderHealthView[] {
  return [providerHealthView()];
}

/**
 * A writer whose health snapshots wait for the test (`answer()`), every 1000 ms, with a write in
 * flight that hangs when the first snapshot begins; returns the rig.
 */
async function slowHealthRig() {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  const bus = new EventBus();
  const waiting: (() => void)[] = [];
  const options: TelemetryWriterOptions = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 1000,
    healthSnapshot: () => {
      const { promise, resolve } = Promise.withResolvers<ProviderHealthView[]>();
      waiting.push(() => resolve(health()));
      return promise;
    },
    clock,
    logger: { debug() {}, info() {}, warn() {}, error() {}, child: () => options.logger },
    influx: SETTINGS,
    transport: db,
    // A write that hangs is aborted within the reload's budget (below).
    tuning: { retryInitialMs: 100, retryMaxMs: 400, writeTimeoutMs: 100, tickMs: 10 },
  };
  const writer = new TelemetryWriter(options);
  writer.start(bus);
  await clock.advanceAsync(1000); // a snapshot begins: GetHealth of the providers under way
  assert.equal(waiting.length, 1);
  const takenAt = clock.nowMs();
  db.script("hang"); // the database is slow: a write in flight when the reload comes
  publishUpdates(bus, 0, 4);
  await clock.advanceAsync(20);
  assert.equal(db.requests.length, 1, "a write is in flight");
  const answer = () => waiting.shift()!();
  const healthRows = () =>
    db.requests.flat().filter((l) => l.startsWith("runtime_provider_health,"));
  return { clock, db, writer, options, takenAt, answer, healthRows };
}

for (
  const [what, influx] of [
    ["a new token for the same database", { ...SETTINGS, token: "rotated" }],
    ["a new database", { ...SETTINGS, url: "http://db2.invalid:8086" }],
  ] as const
) {
  Deno.test(`TelemetryWriter.retarget to ${what} writes the health snapshot under way, taken before it`, async () => {
    const { clock, writer, options, takenAt, answer, healthRows } = await slowHealthRig();
    try {
      const reloaded = writer.retarget({ ...options, influx }, 400);
      await clock.advanceAsync(50);
      answer(); // the snapshot's GetHealth answers while the reload waits for the write
      // In steps: each write's end is seen before the next timer.
      for (let i = 0; i < 40; i++) await clock.advanceAsync(10);
      await reloaded;
      await clock.advanceAsync(500); // before the reload's next snapshot
      const rows = healthRows();
      assert.equal(rows.length, 1, "the snapshot's one provider row, written once");
      assert.ok(rows[0]!.endsWith(` ${takenAt}`), "at the time it was taken");
      assert.equal(writer.status().last_health_snapshot_at_epoch_ms, takenAt);
      assert.equal(writer.status().total_failed, 0);
      assert.equal(writer.status().total_written, 4 + 1, "the signal rows and the health row");
    } finally {
      await writer.stop(0);
    }
  });
}

Deno.test("TelemetryWriter.retarget to telemetry off drops a health snapshot that answers after it", async () => {
  const { clock, writer, options, answer, healthRows } = await slowHealthRig();
  try {
    const reloaded = writer.retarget({ ...options, enabled: false }, 200);
    await clock.advanceAsync(250);
    await reloaded;
    answer(); // after the reload turned telemetry off
    await clock.advanceAsync(500);
    assert.deepEqual(healthRows(), []);
    assert.equal(writer.status().pending_batch, 0);
  } finally {
    await writer.stop(0);
  }
});

/**
 * A started writer on a ScriptedDb whose health snapshots answer at once, every `intervalMs`
 * from mono 1000 (wall 1_760_000_000_000) on; `healthAt()` gives the monotonic time of each
 * health row written (its wall timestamp less the wall clock's offset).
 */
function promptHealthRig(intervalMs: number) {
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = new ScriptedDb();
  const bus = new EventBus();
  const options: TelemetryWriterOptions = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: intervalMs,
    healthSnapshot: () => Promise.resolve(health()),
    clock,
    logger: { debug() {}, info() {}, warn() {}, error() {}, child: () => options.logger },
    influx: SETTINGS,
    transport: db,
    tuning: { retryInitialMs: 100, retryMaxMs: 400, writeTimeoutMs: 100, tickMs: 10 },
  };
  const writer = new TelemetryWriter(options);
  writer.start(bus);
  const healthAt = () =>
    db.requests.flat().filter((l) => l.startsWith("runtime_provider_health,")).map((l) =>
      Number(l.slice(l.lastIndexOf(" ") + 1)) - (1_760_000_000_000 - 1_000)
    );
  return { clock, writer, options, healthAt };
}

for (
  const [what, influxOf] of [
    ["a new token for the same database", (i: number) => ({ ...SETTINGS, token: `token${i}` })],
    [
      "a new database",
      (i: number) => ({ ...SETTINGS, url: `http://db${i % 2}.invalid:8086` }),
    ],
  ] as const
) {
  Deno.test(`TelemetryWriter.retarget to ${what} every 0.6 health interval keeps the snapshots' phase: one every interval`, async () => {
    const { clock, writer, options, healthAt } = promptHealthRig(1000);
    try {
      for (let i = 1; i <= 10; i++) {
        await clock.advanceAsync(600); // a reload at 1600, 2200, ..., 7000
        const reloaded = writer.retarget({ ...options, influx: influxOf(i) }, 400);
        await clock.advanceAsync(0);
        await reloaded;
      }
      await clock.advanceAsync(100); // the last snapshot's rows written
      assert.deepEqual(healthAt(), [2000, 3000, 4000, 5000, 6000, 7000]);
      assert.equal(writer.status().total_failed, 0);
    } finally {
      await writer.stop(0);
    }
  });
}

Deno.test("TelemetryWriter.retarget with a new health interval takes the next snapshot that long after the last one, at once when that is past", async () => {
  const { clock, writer, options, healthAt } = promptHealthRig(1000);
  try {
    await clock.advanceAsync(1600); // a snapshot at 2000
    await writer.retarget({ ...options, healthIntervalMs: 2000 }, 400); // at 2600
    await clock.advanceAsync(1900); // at 4500: a snapshot at 2000 + 2000
    await writer.retarget({ ...options, healthIntervalMs: 300 }, 400); // 4000 + 300 is past
    await clock.advanceAsync(700);
    assert.deepEqual(healthAt(), [2000, 4000, 4500, 4800, 5100]);
  } finally {
    await writer.stop(0);
  }
});
