/**
 * TelemetryWriter.stop(budgetMs) during a reload's flush keeps to its own budget: the reload's flush
 * (which has a budget of its own, here longer) is cut short when the stop's budget ends, and the
 * rows it could not write are counted and said in the "could not be written" WARN. The InfluxDB
 * client's real transport against a real loopback database that accepts every request and never
 * answers (reloading to the same database: the scripted one of _scripted_db.ts, a unit test); the
 * writer's timers on one manual clock, so no assertion depends on how fast anything is.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import {
  loadInfluxClient,
  TelemetryWriter,
  type TelemetryWriterOptions,
} from "../../src/telemetry/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { hungDatabase } from "../helpers/hung_database.ts";
import { publishUpdates, scriptedRig, signalRowsOf } from "./_scripted_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

/**
 * What a stop(300) that cut a reload's flush short says and counts: the request it aborted names
 * the stop's budget, and the 4 rows published are said lost in one WARN (`said`: how it starts,
 * the flush that lost them) and counted.
 */
function assertCutByStop(lines: string[], writer: TelemetryWriter, said: string): void {
  const aborted = lines.filter((l) => l.includes("write aborted"));
  assert.equal(aborted.length, 1, lines.join("\n"));
  assert.match(
    aborted[0]!,
    /^ERROR\b.*write aborted: no answer within the stop's budget \(300 ms\)$/,
  );
  const lost = lines.filter((l) => l.includes("telemetry rows could not be written"));
  assert.equal(lost.length, 1, lines.join("\n"));
  assert.match(
    lost[0]!,
    new RegExp(
      `^WARN\\b.* ${said}: 4 telemetry rows could not be written to .*org=\\S+ bucket=\\S+ and are lost$`,
    ),
  );
  assert.equal(writer.status().total_failed, 4);
}

/** Whether `p` has settled once the host ran the work under way for `ms` (real time). */
async function settledWithin(p: Promise<unknown>, ms: number): Promise<boolean> {
  let settled = false;
  p.then(() => (settled = true), () => (settled = true));
  let timer: ReturnType<typeof setTimeout> | undefined;
  await Promise.race([
    p.catch(() => {}),
    new Promise((resolve) => (timer = setTimeout(resolve, ms))),
  ]);
  clearTimeout(timer);
  return settled;
}

Deno.test("TelemetryWriter.stop during a reload's flush to a database that never answers ends with the stop's budget, not the reload's, and says the rows lost", async () => {
  const { log, lines } = capturingLogger();
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const db = hungDatabase();
  const bus = new EventBus();
  const options: TelemetryWriterOptions = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: log,
    influx: {
      url: db.url,
      org: "lab",
      bucket: "old",
      token: "t0k3n",
      batchSize: 4,
      flushIntervalMs: 50,
      maxRetryBufferSize: 1000,
      queueSize: 10000,
    },
    tuning: { writeTimeoutMs: 60_000, tickMs: 10 },
  };
  const writer = new TelemetryWriter(options);
  writer.start(bus);
  let stopping: Promise<void> | null = null;
  try {
    publishUpdates(bus, 0, 4);
    await clock.advanceAsync(10);
    await waitFor(
      "the write reached the database",
      () => signalRowsOf(db.received()) === 4,
      10_000,
    );
    // Another bucket: the old target's rows are flushed to it first, within the reload's 5000 ms.
    const reloading = writer.retarget(
      { ...options, influx: { ...options.influx, bucket: "new" } },
      5000,
    );
    reloading.catch(() => {});
    stopping = writer.stop(300);
    await clock.advanceAsync(300);
    // Before: the stop waited for the reload's flush, which ended only at 5000 ms.
    assert.ok(
      await settledWithin(stopping, 5_000),
      `stop(300) had not returned with the manual clock 300 ms on:\n${lines.join("\n")}`,
    );
    await stopping;
    await reloading;
    assert.equal(writer.running, false);
    // The old database's rows, lost by the reload's flush the stop cut short.
    assertCutByStop(lines, writer, "reload cut short by the stop");
    assert.equal(writer.status().total_written, 0);
  } finally {
    if (stopping === null) await writer.stop(0);
    else {
      // Before the fix the stop still waits for the reload's flush: let it end.
      await clock.advanceAsync(5000);
      await stopping.catch(() => {});
    }
    await db.close();
  }
});

Deno.test("TelemetryWriter.stop during a reload to the same database (waiting for the write in flight) ends with the stop's budget and counts the rows kept for the retry", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish, options } = scriptedRig({ logger: log });
  db.script("hang");
  publish(0, 4);
  await clock.advanceAsync(10);
  assert.equal(db.requests.length, 1);
  // The same database: the reload waits for the write in flight, up to its own 5000 ms.
  const reloading = writer.retarget(
    { ...options, logger: log, influx: { ...options.influx, batchSize: 8 } },
    5000,
  );
  reloading.catch(() => {});
  const stopping = writer.stop(300);
  await clock.advanceAsync(300);
  const settled = await settledWithin(stopping, 5_000);
  if (!settled) await clock.advanceAsync(5000); // before: the stop ended with the reload's budget
  await stopping;
  await reloading;
  assert.ok(settled, `stop(300) had not returned with the manual clock 300 ms on:\n${lines}`);
  // The same database: the reload flushed nothing, the rows kept are the stop's to lose.
  assertCutByStop(lines, writer, "shutdown");
  assert.equal(db.requests.length, 1, "nothing sent after the stop's budget ended");
});

Deno.test("TelemetryWriter.stop hurried during a reload's flush to a database that never answers ends with the hurried budget, not the stop's or the reload's", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish, options } = scriptedRig({ logger: log });
  db.script("hang");
  publish(0, 4);
  await clock.advanceAsync(10);
  assert.equal(db.requests.length, 1);
  // Another bucket: the old target's rows are flushed first, within the reload's 5000 ms.
  const reloading = writer.retarget(
    { ...options, logger: log, influx: { ...options.influx, bucket: "other" } },
    5000,
  );
  reloading.catch(() => {});
  const hurry = Promise.withResolvers<number>();
  const stopping = writer.stop(3000, hurry.promise);
  await clock.advanceAsync(100);
  hurry.resolve(300); // a second stop signal: 300 ms left of the stop
  await clock.advanceAsync(300);
  const settled = await settledWithin(stopping, 5_000);
  if (!settled) await clock.advanceAsync(5000);
  await stopping;
  await reloading;
  assert.ok(settled, `stop hurried to 300 ms had not returned 300 ms on:\n${lines.join("\n")}`);
  assert.equal(writer.running, false);
  const aborted = lines.filter((l) => l.includes("write aborted"));
  assert.equal(aborted.length, 1, lines.join("\n"));
  assert.match(aborted[0]!, /no answer within the stop's hurried budget \(300 ms\)$/);
  assert.equal(
    lines.filter((l) => /telemetry rows could not be written/.test(l)).length,
    1,
    lines.join("\n"),
  );
  assert.equal(writer.status().total_failed, 4);
  assert.deepEqual(clock.pendingDueTimes(), [], "no timer of the stop left behind");
});
