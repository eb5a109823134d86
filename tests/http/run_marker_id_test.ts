/**
 * POST /v0/runs/{id}/events with a client `marker_id`: a retry of a marker whose answer was lost
 * (the connection dropped after the fsync) answers the marker recorded the first time and writes
 * nothing; the same id for another marker is 409.
 */
import assert from "node:assert/strict";
import { withRunsFixture } from "../helpers/runtime_fixture.ts";

Deno.test("POST /v0/runs/{id}/events: a repeat of a marker_id within the run answers the first marker and records it once", async () => {
  await withRunsFixture({ prefix: "http-marker-id-" }, async ({ fx, runs }) => {
    const { run } = await runs.open({});
    const path = `/v0/runs/${run.run_id}/events`;
    const body = { type: "valve_opened", payload: { valve: "v1" }, marker_id: "c-7f3a-0001" };
    const first = await fx.request("POST", path, { body });
    assert.equal(first.status, 200, first.text);
    const again = await fx.request("POST", path, { body });
    assert.equal(again.status, 200, again.text);
    assert.deepEqual(again.json.event, first.json.event, "the retry answers the first marker");
    // JSON object members have no order (RFC 8259): a client whose serializer writes them in
    // another order repeats the same marker.
    const nested = {
      type: "valve_set",
      payload: { valve: "v1", limits: { lo: 1, hi: 2 }, steps: [{ a: 1, b: 2 }] },
      marker_id: "c-7f3a-0002",
    };
    const set = await fx.request("POST", path, { body: nested });
    assert.equal(set.status, 200, set.text);
    const reordered = await fx.request("POST", path, {
      body: {
        marker_id: "c-7f3a-0002",
        payload: { steps: [{ b: 2, a: 1 }], limits: { hi: 2, lo: 1 }, valve: "v1" },
        type: "valve_set",
      },
    });
    assert.equal(reordered.status, 200, reordered.text);
    assert.deepEqual(reordered.json.event, set.json.event, "the same marker, members reordered");
    // An array is its members in order: another length, another marker.
    const longer = await fx.request("POST", path, {
      body: { ...nested, payload: { ...nested.payload, steps: [{ a: 1, b: 2 }, { a: 1, b: 2 }] } },
    });
    assert.equal(longer.status, 409, longer.text);
    const other = await fx.request("POST", path, {
      body: { ...body, payload: { valve: "v2" } },
    });
    assert.equal(other.status, 409, other.text);
    assert.match(other.json.status.message, /marker_id c-7f3a-0001 already names another marker/);
    // Without a marker_id nothing is deduplicated.
    const plain = { type: "valve_opened", payload: { valve: "v1" } };
    assert.equal((await fx.request("POST", path, { body: plain })).status, 200);
    assert.equal((await fx.request("POST", path, { body: plain })).status, 200);
    const events = (await runs.listEvents(run.run_id, {})).events;
    assert.deepEqual(
      events.filter((e) => e.category === "annotation").map((e) => e.sequence),
      [2, 3, 4, 5],
      "each marker_id'd marker once, the plain ones twice",
    );
    const bad = await fx.request("POST", path, { body: { type: "x", marker_id: "" } });
    assert.equal(bad.status, 400, bad.text);
    await runs.close(run.run_id, {});
  });
});
