/**
 * POST /v0/runs/{id}/events over a real socket: a marker's `type` (at most 256 characters) and
 * `marker_id` (1 to 128) are counted in characters (Unicode code points), as the docs say and as
 * the config counts, not in UTF-16 code units: an emoji is one character, not two.
 */
import assert from "node:assert/strict";
import { MAX_MARKER_ID_CHARS, MAX_MARKER_TYPE_CHARS } from "../../src/runs/mod.ts";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

/** One character beyond the Basic Multilingual Plane: two UTF-16 code units. */
const EMOJI = "\u{1F600}";

Deno.test("POST /v0/runs/{id}/events counts a marker's type and marker_id in characters (code points), the limits included", async () => {
  assert.equal(EMOJI.length, 2, "the test needs a character of two UTF-16 units");
  await withRunsFixture({ prefix: "http-marker-chars-" }, async ({ fx, runs }) => {
    const { port } = await fx.serve();
    const { run } = await runs.open({});
    const post = async (body: unknown) => {
      const res = await fetch(`http://127.0.0.1:${port}/v0/runs/${run.run_id}/events`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: res.status, json: await res.json() };
    };
    // 200 emoji: 200 characters, 400 UTF-16 units.
    const twoHundred = await post({ type: EMOJI.repeat(200) });
    assert.equal(twoHundred.status, 200, JSON.stringify(twoHundred.json));
    assert.equal(twoHundred.json.event.type, EMOJI.repeat(200), "stored whole");
    // The exact limits pass; one character past them is refused, naming the field.
    const atType = await post({ type: EMOJI.repeat(MAX_MARKER_TYPE_CHARS) });
    assert.equal(atType.status, 200, JSON.stringify(atType.json));
    const pastType = await post({ type: EMOJI.repeat(MAX_MARKER_TYPE_CHARS + 1) });
    assert.equal(pastType.status, 400, JSON.stringify(pastType.json));
    assert.equal(pastType.json.status.code, "INVALID_ARGUMENT");
    assert.match(pastType.json.status.message, /^type: longer than 256 characters$/);
    const atId = await post({ type: "t", marker_id: EMOJI.repeat(MAX_MARKER_ID_CHARS) });
    assert.equal(atId.status, 200, JSON.stringify(atId.json));
    const pastId = await post({ type: "t", marker_id: EMOJI.repeat(MAX_MARKER_ID_CHARS + 1) });
    assert.equal(pastId.status, 400, JSON.stringify(pastId.json));
    assert.equal(pastId.json.status.code, "INVALID_ARGUMENT");
    assert.match(
      pastId.json.status.message,
      /^marker_id: must be a string of 1 to 128 characters$/,
    );
    const events = (await runs.listEvents(run.run_id, {})).events;
    assert.equal(
      events.filter((e) => e.category === "annotation").length,
      3,
      "the three accepted markers, none of the refused",
    );
    await runs.close(run.run_id, {});
  });
});
