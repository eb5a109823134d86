/**
 * A write that gets no answer is said with the bound that ended it: the write timeout
 * (WRITE_TIMEOUT_MS), or the stop's budget -- never a timeout that did not apply, nor "will retry"
 * for rows the stop gives up. Against an injected transport on one manual clock (_scripted_db.ts,
 * whose writer has writeTimeoutMs 2000).
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { scriptedRig } from "./_scripted_db.ts";

Deno.test("TelemetryWriter names WRITE_TIMEOUT_MS when a write gets no answer within it, and retries", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  try {
    db.script("hang");
    publish(0, 4);
    await clock.advanceAsync(10);
    await clock.advanceAsync(2000);
    const failed = lines.filter((l) => l.includes("write failed"));
    assert.equal(failed.length, 1, lines.join("\n"));
    assert.match(
      failed[0]!,
      /^ERROR\b.*will retry: no answer within 2000 ms \(WRITE_TIMEOUT_MS\)$/,
    );
    assert.equal(writer.status().retry_buffer_depth, 4);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter.stop says the write it aborts ended with its budget, not a write timeout, and retries nothing", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  db.script("hang");
  publish(0, 4);
  await clock.advanceAsync(10);
  const stopping = writer.stop(200);
  await clock.advanceAsync(200);
  await stopping;
  const said = lines.filter((l) => /write|telemetry rows/.test(l)).slice(-2);
  assert.equal(said.length, 2, lines.join("\n"));
  assert.match(said[0]!, /^ERROR\b.*write aborted: no answer within the stop's budget \(200 ms\)$/);
  assert.match(
    said[1]!,
    /^WARN\b.*shutdown: 4 telemetry rows could not be written to \S+ org=\S+ bucket=\S+ and are lost$/,
  );
  assert.ok(!lines.some((l) => /will retry|2000 ms/.test(l)), lines.join("\n"));
});

Deno.test("TelemetryWriter.stop names its budget when the final write gets no answer within it", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish } = scriptedRig({ logger: log });
  db.script(503, "hang");
  publish(0, 4);
  await clock.advanceAsync(10); // the first write fails: backing off, nothing in flight
  assert.equal(writer.status().write_failures, 1);
  const stopping = writer.stop(300);
  await clock.advanceAsync(300);
  await stopping;
  const aborted = lines.filter((l) => l.includes("write aborted"));
  assert.equal(aborted.length, 1, lines.join("\n"));
  assert.match(
    aborted[0]!,
    /^ERROR\b.*write aborted: no answer within the stop's budget \(300 ms\)$/,
  );
  assert.equal(writer.status().total_failed, 4);
});

Deno.test("TelemetryWriter.retarget to the same database says the write it aborts ended with the reload's budget, and keeps its rows", async () => {
  const { log, lines } = capturingLogger();
  const { clock, db, writer, publish, options } = scriptedRig({ logger: log });
  try {
    db.script("hang");
    publish(0, 4);
    await clock.advanceAsync(10);
    const reloading = writer.retarget(
      { ...options, logger: log, influx: { ...options.influx, batchSize: 8 } },
      300,
    );
    await clock.advanceAsync(300);
    await reloading;
    const aborted = lines.filter((l) => l.includes("write aborted"));
    assert.equal(aborted.length, 1, lines.join("\n"));
    assert.match(
      aborted[0]!,
      /^ERROR\b.*write aborted: no answer within the reload's budget \(300 ms\); its rows will be retried$/,
    );
    assert.equal(writer.status().retry_buffer_depth, 4);
    await clock.advanceAsync(200); // past the back-off: the kept rows are written
    assert.equal(writer.status().total_written, 4);
  } finally {
    await writer.stop(0);
  }
});
