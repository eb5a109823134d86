/**
 * What the writer reads of a database's answer is bounded (MAX_ANSWER_BODY_BYTES): a database or a
 * proxy answering a write with a huge error body costs that much at most, the rest is cancelled
 * unread, and the error line stays one short line. The InfluxDB client's real transport against a
 * real HTTP server on loopback.
 */
import assert from "node:assert/strict";
import { systemClock } from "../../src/host/mod.ts";
import {
  influxTransport,
  loadInfluxClient,
  MAX_ANSWER_BODY_BYTES,
} from "../../src/telemetry/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { waitFor } from "../helpers/kernel.ts";
import { loopbackDatabase, loopbackWriter } from "./_loopback_db.ts";

await loadInfluxClient(); // as the service does when telemetry is enabled

/** Streamed in pieces of this size, made as the client pulls them. */
const PIECE = 16 * 1024;

/**
 * A loopback server answering every request with `status` and a body of `bytes` letters `x`,
 * streamed as it is read; `sent()`: bytes the client pulled so far.
 */
function erroringDatabase(status: number, bytes: number, headers: Record<string, string> = {}) {
  let sent = 0;
  const db = loopbackDatabase(() => {
    let left = bytes;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (left <= 0) return controller.close();
        const n = Math.min(PIECE, left);
        left -= n;
        sent += n;
        controller.enqueue(new Uint8Array(n).fill(0x78));
      },
    });
    return new Response(body, { status, headers: { "content-type": "text/plain", ...headers } });
  });
  return { ...db, sent: () => sent };
}

/** The rejection of one write through the client's transport (with the bound). */
async function refusal(
  url: string,
): Promise<{ statusCode: number; body: string; headers: Record<string, unknown> }> {
  const t = influxTransport(url, "t");
  try {
    await t.request("/api/v2/write?org=lab&bucket=b&precision=ms", "m f=1 1\n", {
      method: "POST",
      headers: { "content-type": "text/plain; charset=utf-8", accept: "text/plain" },
    });
  } catch (err) {
    return err as { statusCode: number; body: string; headers: Record<string, unknown> };
  }
  throw new Error("the write was not refused");
}

Deno.test("influxTransport reads at most MAX_ANSWER_BODY_BYTES of an error body: a body one byte past it, or many times it, is cut at exactly the bound", async () => {
  for (
    const [bytes, expected] of [
      [MAX_ANSWER_BODY_BYTES - 1, MAX_ANSWER_BODY_BYTES - 1],
      [MAX_ANSWER_BODY_BYTES, MAX_ANSWER_BODY_BYTES],
      [MAX_ANSWER_BODY_BYTES + 1, MAX_ANSWER_BODY_BYTES],
      [64 * MAX_ANSWER_BODY_BYTES, MAX_ANSWER_BODY_BYTES],
    ]
  ) {
    const db = erroringDatabase(500, bytes!, { "retry-after": "7" });
    try {
      const err = await refusal(db.url);
      assert.equal(err.statusCode, 500);
      assert.equal(err.body.length, expected, `a body of ${bytes} bytes`);
      assert.equal(err.headers["retry-after"], "7", "the answer's headers are kept");
    } finally {
      await db.close();
    }
  }
});

Deno.test("TelemetryWriter against a database answering 500 with a 4 MiB body logs one short error line with the first 200 characters of it", async () => {
  const db = erroringDatabase(500, 4 * 1024 * 1024);
  const { log, lines } = capturingLogger();
  const { writer: w, writeOne } = loopbackWriter(db.url, { clock: systemClock, logger: log });
  try {
    writeOne();
    await waitFor("the write refused", () => w.status().write_failures === 1);
    const failed = lines.filter((l) => l.includes("write failed"));
    assert.equal(failed.length, 1, lines.join("\n"));
    assert.match(failed[0]!, /^ERROR\b.*write failed, will retry: HTTP 500: x{200}$/);
    assert.ok(failed[0]!.length < 300, `${failed[0]!.length} characters`);
    assert.equal(w.status().last_error, `write failed, will retry: HTTP 500: ${"x".repeat(200)}`);
  } finally {
    await w.stop(0);
    await db.close();
  }
});
