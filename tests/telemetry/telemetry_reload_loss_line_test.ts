/**
 * The WARN that says telemetry rows were lost names what lost them and where: a reload's flush to
 * its old database says "reload:" (not "shutdown:", no stop is involved) and names that database;
 * a stop that cuts a reload's flush short says it, and its own flush of what came during the
 * reload says "shutdown:" naming the new database: two lines, each counting its own rows. The
 * InfluxDB client's real transport against real loopback databases that never answer
 * (hung_database.ts); the writer's timers on one manual clock.
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
import { publishUpdates, signalRowsOf } from "./_scripted_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

function escaped(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\/]/g, "\\$&");
}

/** A writer to `url` (bucket "old") with its 4 rows in a write the database never answers. */
async function writerWithRowsInFlight(url: string) {
  const { log, lines } = capturingLogger();
  const clock = new ManualClock(1_000, 1_760_000_000_000);
  const bus = new EventBus();
  const options: TelemetryWriterOptions = {
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock,
    logger: log,
    influx: {
      url,
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
  publishUpdates(bus, 0, 4);
  await clock.advanceAsync(10);
  return { lines, clock, bus, options, writer };
}

Deno.test("TelemetryWriter.retarget says the rows its old database never took as lost by the reload, naming that database, not as a shutdown", async () => {
  const oldDb = hungDatabase();
  const newDb = hungDatabase();
  const { lines, clock, options, writer } = await writerWithRowsInFlight(oldDb.url);
  try {
    await waitFor(
      "the write reached the database",
      () => signalRowsOf(oldDb.received()) === 4,
      10_000,
    );
    const reloading = writer.retarget(
      { ...options, influx: { ...options.influx, url: newDb.url, bucket: "new" } },
      300,
    );
    await clock.advanceAsync(300);
    await reloading;
    assert.equal(writer.running, true, "the writer goes on with the new database");
    const lost = lines.filter((l) => l.includes("telemetry rows could not be written"));
    assert.equal(lost.length, 1, lines.join("\n"));
    assert.match(
      lost[0]!,
      new RegExp(
        `^WARN\\b.* reload: 4 telemetry rows could not be written to the old database ` +
          `${escaped(oldDb.url)} org=lab bucket=old and are lost$`,
      ),
    );
    assert.ok(!lines.some((l) => l.includes("shutdown")), lines.join("\n"));
    assert.equal(writer.status().total_failed, 4);
  } finally {
    await writer.stop(0);
    await oldDb.close();
    await newDb.close();
  }
});

Deno.test("TelemetryWriter.stop during a reload's flush says the old database's rows and the new one's in one line each, naming its database", async () => {
  const oldDb = hungDatabase();
  const newDb = hungDatabase();
  const { lines, clock, bus, options, writer } = await writerWithRowsInFlight(oldDb.url);
  let stopping: Promise<void> | null = null;
  try {
    await waitFor(
      "the write reached the database",
      () => signalRowsOf(oldDb.received()) === 4,
      10_000,
    );
    const reloading = writer.retarget(
      { ...options, influx: { ...options.influx, url: newDb.url, bucket: "new" } },
      5000,
    );
    reloading.catch(() => {});
    publishUpdates(bus, 4, 3); // during the reload: for the new database
    stopping = writer.stop(300);
    await clock.advanceAsync(300);
    await stopping;
    await reloading;
    const lost = lines.filter((l) => l.includes("telemetry rows could not be written"));
    assert.equal(lost.length, 2, lines.join("\n"));
    assert.match(
      lost[0]!,
      new RegExp(
        `^WARN\\b.* reload cut short by the stop: 4 telemetry rows could not be written to the ` +
          `old database ${escaped(oldDb.url)} org=lab bucket=old and are lost$`,
      ),
    );
    assert.match(
      lost[1]!,
      new RegExp(
        `^WARN\\b.* shutdown: 3 telemetry rows could not be written to ` +
          `${escaped(newDb.url)} org=lab bucket=new and are lost$`,
      ),
    );
    assert.equal(writer.status().total_failed, 7);
  } finally {
    if (stopping === null) await writer.stop(0);
    await stopping?.catch(() => {});
    await oldDb.close();
    await newDb.close();
  }
});
