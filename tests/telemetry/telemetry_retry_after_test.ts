/**
 * TelemetryWriter and a database that says when to come back: a 429 or 503 with `Retry-After`
 * (InfluxDB Cloud's rate limit, a proxy in front of a database that is restarting). The answers
 * are the InfluxDB client's own HttpError, built as its fetch transport builds it from a response
 * (status, text, body, the Retry-After header, content type, headers).
 */
import assert from "node:assert/strict";
import { HttpError } from "@influxdata/influxdb-client";
import { MAX_RETRY_AFTER_MS } from "../../src/telemetry/mod.ts";
import { scriptedRig } from "./_scripted_db.ts";

/** The client's error for an HTTP answer with a Retry-After header. */
function answerWith(status: number, retryAfter: string) {
  return {
    reject: new HttpError(
      status,
      "Too Many Requests",
      "rate limited",
      retryAfter,
      "text/plain",
      undefined,
      {
        "retry-after": retryAfter,
      },
    ),
  };
}

Deno.test("TelemetryWriter (injected transport) waits the Retry-After of a 429 before it writes again, then writes the rows in order", async () => {
  // The writer's own back-off (100 ms doubling to 400 ms) is far shorter than what the database asks.
  const { clock, db, writer, publish } = scriptedRig();
  try {
    db.script(answerWith(429, "5"));
    publish(0, 4); // a full batch: written now, and answered at once
    await clock.advanceAsync(0);
    assert.equal(db.requests.length, 1, "the first write");
    assert.equal(writer.status().write_failures, 1);
    // 4.99 s after the answer: still waiting, the rows published meanwhile parked behind the failed ones.
    publish(4, 4);
    await clock.advanceAsync(4_990);
    assert.equal(db.requests.length, 1, "no write before the 5 s the database asked for");
    assert.equal(writer.status().retry_buffer_depth, 8);
    await clock.advanceAsync(20);
    assert.equal(db.requests.length, 2, "written once the 5 s are over");
    assert.deepEqual(db.valuesOf(1), [0, 1, 2, 3, 4, 5, 6, 7]);
    assert.equal(writer.status().total_written, 8);
    assert.equal(writer.status().write_failures, 1);
  } finally {
    await writer.stop(0);
  }
});

Deno.test("TelemetryWriter (injected transport) reads a Retry-After date, and cuts one far ahead to MAX_RETRY_AFTER_MS", async () => {
  const { clock, db, writer, publish } = scriptedRig();
  try {
    // 503 until 3 s from now (an HTTP-date, whole seconds), then a day ahead (cut to the bound).
    const inThree = new Date(clock.nowMs() + 3_000).toUTCString();
    db.script(answerWith(503, inThree), answerWith(429, "86400"));
    publish(0, 4);
    await clock.advanceAsync(0);
    assert.equal(db.requests.length, 1);
    await clock.advanceAsync(2_900);
    assert.equal(db.requests.length, 1, "no write before the date");
    await clock.advanceAsync(100);
    assert.equal(db.requests.length, 2, "written again at the date");
    await clock.advanceAsync(MAX_RETRY_AFTER_MS - 10);
    assert.equal(db.requests.length, 2, "no write within MAX_RETRY_AFTER_MS");
    await clock.advanceAsync(20);
    assert.equal(db.requests.length, 3, "written again once MAX_RETRY_AFTER_MS is over");
    assert.equal(writer.status().total_written, 4);
  } finally {
    await writer.stop(0);
  }
});
