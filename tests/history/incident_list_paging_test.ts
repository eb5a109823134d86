/**
 * GET /v0/incidents is paged as GET /v0/runs is (docs/http-api.md "History and incidents"): the
 * last noted first, `limit` (INCIDENTS_PAGE_LIMIT), `offset`, and the cursor `before` (an incident
 * id, the last of the previous page). Paging with `before` stays stable while incidents arrive and
 * the bounds remove the oldest: no page after the cursor gains or loses an entry it should not.
 * Over a real socket: the API over a real IncidentRecorder on a hand-fed History (_incident_rig.ts).
 */
import assert from "node:assert/strict";
import { INCIDENTS_PAGE_LIMIT, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { incidentRig } from "./_incident_rig.ts";

interface Page {
  readonly incidents: { incident_id: string; devices: string[] }[];
  readonly count: number;
}

Deno.test("GET /v0/incidents: limit, offset and the cursor before page the list, stable while incidents arrive and are pruned", async () => {
  const rig = incidentRig({ config: { incidentMaxCount: 8 } });
  const fx = await startHttpFixture({
    start: false,
    services: { history: rig.history, incidents: rig.incidents },
  });
  const server = await fx.serve();
  const base = `http://127.0.0.1:${server.port}`;
  const get = async (query: string) => {
    const res = await apiFetch(`${base}/v0/incidents${query}`);
    return { status: res.status, json: await res.json() };
  };
  const page = async (query: string): Promise<Page> => {
    const r = await get(query);
    assert.equal(r.status, 200, `GET /v0/incidents${query}: ${JSON.stringify(r.json)}`);
    return r.json as Page;
  };
  /** The devices of a page's incidents, the order listed (one device lost per incident). */
  const devices = (p: Page) => p.incidents.map((i) => i.devices.join(","));
  /** An incident of device `d`'s loss, written (its window passed). */
  const lose = async (d: string) => {
    rig.poll("p0", d, 1);
    rig.loss(d);
    rig.clock.advance(1_000 + MERGE_WINDOW_MS + 100);
    await rig.incidents.settled();
  };
  try {
    await rig.session(async () => {
      for (let i = 0; i < 7; i++) await lose(`d${i}`);
      assert.equal(rig.incidents.list().length, 7);

      // Unpaged before: every record in one answer whatever `limit` said.
      const first = await page("?limit=3");
      assert.deepEqual(devices(first), ["p0/d6", "p0/d5", "p0/d4"], "the newest 3");
      assert.equal(first.count, 3);
      const cursor = first.incidents.at(-1)!.incident_id;

      // Meanwhile two incidents are noted; the count bound (8) removes the oldest (d0).
      await lose("d7");
      await lose("d8");
      assert.equal(rig.incidents.list().length, 8, "d0 pruned");

      // The next page goes on below the cursor: no entry repeated, none skipped (an offset of 3
      // would list d6, d5 and d4 again now).
      const second = await page(`?limit=3&before=${cursor}`);
      assert.deepEqual(devices(second), ["p0/d3", "p0/d2", "p0/d1"]);
      const third = await page(`?limit=3&before=${second.incidents.at(-1)!.incident_id}`);
      assert.deepEqual(devices(third), [], "d0 was removed by the bound: the end");
      assert.equal(third.count, 0);

      // A cursor whose record the bound removed still pages (by the counter of its id).
      const gone = first.incidents[0]!.incident_id.replace(/-\d+$/, "-1"); // d0's counter
      assert.deepEqual(devices(await page(`?before=${gone}`)), []);
      // offset counts from the cursor; the newest page again has the two new ones on top.
      assert.deepEqual(devices(await page(`?limit=2&offset=1&before=${cursor}`)), [
        "p0/d2",
        "p0/d1",
      ]);
      assert.deepEqual(devices(await page("?limit=2")), ["p0/d8", "p0/d7"]);

      // The default page and the largest: every one here (8 < both).
      assert.equal((await page("")).count, 8);
      assert.equal((await page("?limit=0")).count, 8, "below 1: the default");
      assert.equal((await page(`?limit=${INCIDENTS_PAGE_LIMIT.max + 1}`)).count, 8, "cut");

      // A cursor that is no incident id is refused, naming the parameter.
      const bad = await get("?before=run-1");
      assert.equal(bad.status, 400);
      assert.match(JSON.stringify(bad.json), /before: must be an incident id/);
      const badLimit = await get("?limit=1.5");
      assert.equal(badLimit.status, 400);
    });
  } finally {
    await fx.close();
  }
});
