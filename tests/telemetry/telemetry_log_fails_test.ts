/**
 * A failed write is retried whatever the writer's logger does: its ERROR line was said from the
 * write's own catch, before the rows were put back in the retry buffer and the back-off begun, so
 * a logger that throws on it (a custom one: the process logger swallows its own write failures)
 * lost the batch's rows uncounted and rejected the flush loop's write, an unhandled rejection
 * (main.ts ends the runtime on one). The writer takes its logger (start and every retarget)
 * wrapped in neverThrowing, as the run registry does. Against an injected transport on one
 * manual clock (_scripted_db.ts); a rejection that escapes fails the test (Deno's sanitizer).
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import { scriptedRig } from "./_scripted_db.ts";

/** A logger whose WARN and ERROR lines throw while `fails.on`. */
function failingLogger(fails: { on: boolean; lines: number }): LineLogger {
  return new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (_line, level) => {
      if (fails.on && (level === "warn" || level === "error")) {
        fails.lines++;
        throw new Error("log sink failed");
      }
    },
  });
}

Deno.test("TelemetryWriter keeps a failed write's rows for retry, and rejects nothing, when its logger throws on ERROR lines", async () => {
  const fails = { on: true, lines: 0 };
  const { clock, db, writer, publish } = scriptedRig({ logger: failingLogger(fails) });
  try {
    db.script(503);
    publish(0, 4);
    await clock.advanceAsync(10); // the write of the 4 rows fails
    await clock.advanceAsync(0);
    const afterFailure = writer.status();
    fails.on = false;
    await clock.advanceAsync(200); // past the back-off: retried, and the database takes them
    assert.ok(fails.lines > 0, "the failed write's ERROR line was attempted and failed");
    assert.equal(afterFailure.retry_buffer_depth, 4, "the rows wait in the retry buffer");
    assert.equal(afterFailure.write_failures, 1, "the failure counted, the back-off begun");
    assert.deepEqual(db.values(), [0, 1, 2, 3], "the rows are written on the retry");
    assert.equal(writer.status().total_written, 4);
  } finally {
    fails.on = false;
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.retarget wraps the new logger too: a failed write's rows are kept when it throws", async () => {
  const fails = { on: true, lines: 0 };
  const { clock, db, writer, publish, options } = scriptedRig();
  try {
    await writer.retarget(
      { ...options, logger: failingLogger(fails), influx: { ...options.influx, batchSize: 2 } },
      100,
    );
    db.script(503);
    publish(0, 2);
    await clock.advanceAsync(10);
    await clock.advanceAsync(0);
    const afterFailure = writer.status();
    fails.on = false;
    assert.ok(fails.lines > 0, "the failed write's ERROR line was attempted and failed");
    assert.equal(afterFailure.retry_buffer_depth, 2, "the rows wait in the retry buffer");
    assert.equal(afterFailure.write_failures, 1);
  } finally {
    fails.on = false;
    await writer.stop(0);
  }
});
