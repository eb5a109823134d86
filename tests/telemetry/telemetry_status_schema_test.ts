/**
 * GET /v0/telemetry/status against the OpenAPI document: every member the real TelemetryWriter
 * sets whatever its state (telemetry off, writing, failing) is `required` by
 * TelemetryStatusResponse, so a client generated from the document need not treat a counter as
 * maybe missing. The writer runs on a scripted database and a manual clock (no sockets); the
 * answers go through the fixture's document check.
 */
import assert from "node:assert/strict";
import { openApiDocument } from "../../src/http/openapi.ts";
import { ROUTES } from "../../src/http/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { scriptedRig } from "./_scripted_db.ts";

/** The members of the status answer in one writer state (the fixture checks it by the document). */
async function answerMembers(telemetry?: { status(): object }): Promise<Record<string, unknown>> {
  const fx = await startHttpFixture({
    start: false,
    ...(telemetry === undefined ? {} : { services: { telemetry } }),
  });
  try {
    const r = await fx.request("GET", "/v0/telemetry/status");
    assert.equal(r.status, 200, r.text);
    return r.json;
  } finally {
    await fx.close();
  }
}

Deno.test("TelemetryStatusResponse requires every member the writer answers off, writing and failing", async () => {
  const off = await answerMembers(); // the kernel's own writer: telemetry disabled
  assert.equal(off.enabled, false);

  const writing = scriptedRig();
  let on: Record<string, unknown>;
  try {
    writing.publish(0, 4);
    await writing.clock.advanceAsync(10);
    on = await answerMembers(writing.writer);
  } finally {
    await writing.writer.stop(0);
  }
  assert.equal(on.connected, true);
  assert.equal(on.total_written, 4);

  const failing = scriptedRig();
  let down: Record<string, unknown>;
  try {
    failing.db.otherwise = 503;
    failing.publish(0, 4);
    await failing.clock.advanceAsync(10);
    down = await answerMembers(failing.writer);
  } finally {
    await failing.writer.stop(0);
  }
  assert.equal(down.write_failures, 1);
  assert.equal(down.retry_buffer_depth, 4);
  assert.equal(typeof down.last_error, "string");

  const always = Object.keys(off).filter((k) => k in on && k in down).sort();
  const doc = openApiDocument(ROUTES) as {
    components: { schemas: Record<string, { required: string[] }> };
  };
  const required = new Set(doc.components.schemas.TelemetryStatusResponse!.required);
  assert.deepEqual(always.filter((k) => !required.has(k)), [], "answered always, not required");
  // What is not always answered stays optional: `backend`, omitted while telemetry is off.
  assert.ok(!("backend" in off) && "backend" in on && "backend" in down);
  assert.equal(required.has("backend"), false);
  assert.ok(always.length >= 21, `${always.length} members always answered: ${always}`);
});
