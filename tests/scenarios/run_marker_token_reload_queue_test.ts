/**
 * A POST /v0/runs/{run_id}/events (an operator marker) queued behind another marker whose write is
 * slow, whose token a reload removes or lowers while it waits (docs/http-api.md, "Roles"): at its
 * turn in the run registry's write queue its admission is asked again; it is answered 401 or 403 as
 * the first check would have and writes nothing. A reload that keeps the token records it. The
 * runtime serves real HTTP on loopback (loopback not exempt) over real files; the first marker's
 * line is held until the reload is done.
 */
import assert from "node:assert/strict";
import type { ApiTokenConfig } from "../../src/config/mod.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { inertSim } from "../safety/_fixture.ts";
import {
  ADMIN,
  countCalls,
  fetchAs,
  HeldAppends,
  NIGHT,
  OPERATOR,
  reloadTokens,
  SHIFT,
  tokenHttp,
} from "./_token_reload_rig.ts";

/** The type of the marker whose line is held. */
const HELD_TYPE = "held-marker";

/**
 * 'shift' records a marker while the admin's marker is being written; the tokens are reloaded to
 * `tokens` while shift's waits its turn.
 */
async function markerThenReload(tokens: readonly ApiTokenConfig[]) {
  // Run event files whose line of a HELD_TYPE marker waits for `release`.
  const files = new HeldAppends("/runs/", (text) => text.includes(HELD_TYPE));
  const rt = await startServing(
    testConfig({ providers: [inertSim("sim0")], pollingIntervalMs: 60_000, http: tokenHttp() }),
    { files },
  );
  try {
    const opened = await fetchAs(rt, "/v0/runs", ADMIN, {});
    assert.equal(opened.status, 200);
    const runId = (await opened.json()).run.run_id as string;
    const events = `/v0/runs/${runId}/events`;
    const first = fetchAs(rt, events, ADMIN, { type: HELD_TYPE });
    await waitFor("the first marker's line held", () => files.held > 0, 10_000, 0);
    // Counts the markers the route asks of the registry: one asked is queued behind the first.
    const asked = countCalls(rt.runs, "addMarker");
    const answer = fetchAs(rt, events, OPERATOR, { type: "shift-marker" });
    await waitFor("the second marker queued behind the first", () => asked() > 0, 10_000, 0);
    await reloadTokens(rt, tokens);
    assert.equal(files.held, 1, "the first marker still waited when the reload was done");
    files.release();
    assert.equal((await first).status, 200);
    const res = await answer;
    const listed = await (await fetchAs(rt, events, ADMIN)).json();
    return {
      status: res.status,
      challenge: res.headers.get("www-authenticate"),
      body: await res.json(),
      // deno-lint-ignore no-explicit-any
      markers: listed.events.filter((e: any) => e.category === "annotation").map((e: any) =>
        e.type
      ),
    };
  } finally {
    files.release();
    await rt.stop();
  }
}

Deno.test("POST /v0/runs/{run_id}/events whose token a reload removes while it waits behind a marker's write is answered 401 and writes nothing", async () => {
  const r = await markerThenReload([]);
  assert.equal(r.status, 401, JSON.stringify(r.body));
  assert.equal(r.challenge, "Bearer");
  assert.equal(r.body.status.message, "Missing or invalid bearer token");
  assert.deepEqual(r.markers, [HELD_TYPE]);
});

Deno.test("POST /v0/runs/{run_id}/events whose token a reload lowers to viewer while it waits behind a marker's write is answered 403 and writes nothing", async () => {
  const r = await markerThenReload([{ ...SHIFT, role: "viewer" }]);
  assert.equal(r.status, 403, JSON.stringify(r.body));
  assert.equal(r.body.status.code, "PERMISSION_DENIED");
  assert.deepEqual(r.markers, [HELD_TYPE]);
});

Deno.test("POST /v0/runs/{run_id}/events through a reload that keeps its token while it waits behind a marker's write records it", async () => {
  const r = await markerThenReload([SHIFT, NIGHT]);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.deepEqual(r.markers, [HELD_TYPE, "shift-marker"]);
});
