/**
 * A POST /v0/runs queued behind a run's close whose write is slow, whose token a reload removes or
 * lowers while it waits (docs/http-api.md, "Roles"): at its turn in the registry's write queue its
 * admission is asked again; it is answered 401 or 403 as the first check would have and opens no
 * run. A reload that keeps the token opens it. The runtime serves real HTTP on loopback (loopback
 * not exempt) over real files; the close's record to runs.jsonl is held until the reload is done.
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

/**
 * 'shift' opens a run while the admin's close of the open run is being written; the tokens are
 * reloaded to `tokens` while the open waits its turn.
 */
async function openThenReload(tokens: readonly ApiTokenConfig[]) {
  // runs.jsonl whose close records wait for `release` once `hold` is set.
  let hold = false;
  const files = new HeldAppends("runs.jsonl", (text) => hold && text.includes('"op":"close"'));
  const rt = await startServing(
    testConfig({ providers: [inertSim("sim0")], pollingIntervalMs: 60_000, http: tokenHttp() }),
    { files },
  );
  try {
    const first = await fetchAs(rt, "/v0/runs", ADMIN, { experiment_label: "first" });
    assert.equal(first.status, 200);
    const firstId = (await first.json()).run.run_id as string;
    hold = true;
    const closed = fetchAs(rt, `/v0/runs/${firstId}/close`, ADMIN, {});
    await waitFor("the close's record held", () => files.held > 0, 10_000, 0);
    // Counts the opens the route asks of the registry: one asked is queued behind the close.
    const asked = countCalls(rt.runs, "open");
    const answer = fetchAs(rt, "/v0/runs", OPERATOR, { experiment_label: "second" });
    await waitFor("the open queued behind the close", () => asked() > 0, 10_000, 0);
    await reloadTokens(rt, tokens);
    assert.equal(files.held, 1, "the close still waited when the reload was done");
    files.release();
    assert.equal((await closed).status, 200);
    const res = await answer;
    return {
      status: res.status,
      challenge: res.headers.get("www-authenticate"),
      body: await res.json(),
      openRun: rt.runs.openRunId(),
    };
  } finally {
    files.release();
    await rt.stop();
  }
}

Deno.test("POST /v0/runs whose token a reload removes while it waits behind a close's write is answered 401 and opens no run", async () => {
  const r = await openThenReload([]);
  assert.equal(r.status, 401, JSON.stringify(r.body));
  assert.equal(r.challenge, "Bearer");
  assert.equal(r.body.status.message, "Missing or invalid bearer token");
  assert.equal(r.openRun, null, "no run was opened");
});

Deno.test("POST /v0/runs whose token a reload lowers to viewer while it waits behind a close's write is answered 403 and opens no run", async () => {
  const r = await openThenReload([{ ...SHIFT, role: "viewer" }]);
  assert.equal(r.status, 403, JSON.stringify(r.body));
  assert.equal(r.body.status.code, "PERMISSION_DENIED");
  assert.equal(r.openRun, null, "no run was opened");
});

Deno.test("POST /v0/runs through a reload that keeps its token while it waits behind a close's write opens the run", async () => {
  const r = await openThenReload([SHIFT, NIGHT]);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.openRun, r.body.run.run_id);
  assert.equal(r.body.run.experiment_label, "second");
});
