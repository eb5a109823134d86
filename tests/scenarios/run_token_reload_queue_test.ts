/**
 * A POST /v0/runs queued behind a run's close whose write is slow, whose token a reload removes or
 * lowers while it waits (docs/http-api.md, "Roles"): at its turn in the registry's write queue its
 * admission is asked again; it is answered 401 or 403 as the first check would have and opens no
 * run. A reload that keeps the token opens it. The runtime serves real HTTP on loopback (loopback
 * not exempt) over real files; the close's record to runs.jsonl is held until the reload is done.
 */
import assert from "node:assert/strict";
import type { ApiTokenConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { InterceptedAppends } from "../helpers/journal_files.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { inertSim } from "../safety/_fixture.ts";

const ADMIN = "admin-token-7e3c9a1f5b2d";
const OPERATOR = "operator-token-4b8d2f6a0c1e";
const SHIFT: ApiTokenConfig = { name: "shift", role: "operator", token: OPERATOR, tokenEnv: "" };

/** runs.jsonl whose close records wait for `release` while `hold` is set. */
class HeldCloses extends InterceptedAppends {
  hold = false;
  held = 0;
  release: () => void = () => {};
  readonly #gate: Promise<void>;
  constructor() {
    let open!: () => void;
    const gate = new Promise<void>((resolve) => open = resolve);
    super("runs.jsonl", async (text, append) => {
      if (this.hold && text.includes('"op":"close"')) {
        this.held++;
        await this.#gate;
      }
      await append(text);
    });
    this.#gate = gate;
    this.release = open;
  }
}

function post(rt: Kernel, path: string, token: string, body: unknown): Promise<Response> {
  return apiFetch(`http://127.0.0.1:${rt.http!.port}${path}`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify(body),
  });
}

/**
 * 'shift' opens a run while the admin's close of the open run is being written; the tokens are
 * reloaded to `tokens` while the open waits its turn.
 */
async function openThenReload(tokens: readonly ApiTokenConfig[]) {
  const files = new HeldCloses();
  const rt = await startServing(
    testConfig({
      providers: [inertSim("sim0")],
      pollingIntervalMs: 60_000,
      http: { authEnabled: true, authToken: ADMIN, authExemptLoopback: false, tokens: [SHIFT] },
    }),
    { files },
  );
  try {
    const first = await post(rt, "/v0/runs", ADMIN, { experiment_label: "first" });
    assert.equal(first.status, 200);
    const firstId = (await first.json()).run.run_id as string;
    files.hold = true;
    const closed = post(rt, `/v0/runs/${firstId}/close`, ADMIN, {});
    await waitFor("the close's record held", () => files.held > 0, 10_000, 0);
    // Counts the opens the route asks of the registry: one asked is queued behind the close.
    const open = rt.runs.open.bind(rt.runs);
    let asked = 0;
    rt.runs.open = (...args: Parameters<typeof open>) => {
      asked++;
      return open(...args);
    };
    const answer = post(rt, "/v0/runs", OPERATOR, { experiment_label: "second" });
    await waitFor("the open queued behind the close", () => asked > 0, 10_000, 0);
    const report = await rt.reload({ ...rt.config, http: { ...rt.config.http, tokens } });
    assert.deepEqual(report.refused, []);
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
  const night: ApiTokenConfig = {
    name: "night",
    role: "viewer",
    token: "night-token-9d1e5a3c7f0b",
    tokenEnv: "",
  };
  const r = await openThenReload([SHIFT, night]);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.openRun, r.body.run.run_id);
  assert.equal(r.body.run.experiment_label, "second");
});
