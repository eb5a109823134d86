/**
 * Calls made while a run is open are events of that run, also when identical calls collapse into
 * one audit entry that is still open when the run closes (the entry is closed later: by a
 * different decision, a read, or AUDIT_COLLAPSE_MAX_OPEN_MS): the Kernel with HTTP served, the
 * simulated provider.
 */
import { apiFetch } from "../helpers/openapi_check.ts";
import assert from "node:assert/strict";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

function duty(value: number) {
  return {
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: value } },
  };
}

async function post(base: string, path: string, body?: unknown) {
  const r = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: body === undefined ? {} : { "content-type": "application/json" },
    body: body === undefined ? null : JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

async function get(base: string, path: string) {
  const r = await apiFetch(`${base}${path}`);
  return { status: r.status, json: await r.json() };
}

// deno-lint-ignore no-explicit-any
type Ev = any;

Deno.test("Identical calls collapsed into an audit entry still open when their run closes are events of that run, not of the next one", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_calls_" });
  const config = testConfig({ runtime: { dataDir: dir }, http: { port: 0 } });
  const service = await startServing(config);
  try {
    const base = `http://127.0.0.1:${service.http!.port}`;
    assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
    const a = (await post(base, "/v0/runs", {})).json.run;
    for (let k = 0; k < 3; k++) assert.equal((await post(base, "/v0/call", duty(0.3))).status, 200);
    assert.equal((await post(base, `/v0/runs/${a.run_id}/close`, {})).status, 200);
    const b = (await post(base, "/v0/runs", {})).json.run;
    assert.equal((await post(base, "/v0/call", duty(0.4))).status, 200);
    assert.equal((await post(base, `/v0/runs/${b.run_id}/close`, {})).status, 200);

    const events = async (id: string) =>
      ((await get(base, `/v0/runs/${id}/events?limit=1000`)).json.events as Ev[]).map((
        e,
      ) => [e.category, e.payload.args?.duty?.double ?? null, e.payload.count ?? null]);
    assert.deepEqual(await events(a.run_id), [
      ["run_opened", null, null],
      ["call", 0.3, 3],
      ["run_closed", null, null],
    ]);
    assert.deepEqual(await events(b.run_id), [
      ["run_opened", null, null],
      ["call", 0.4, 1],
      ["run_closed", null, null],
    ]);
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("A call decided in one run and answered after it closed and the next opened is an in_flight event of the first, not an event of the next", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_calls_inflight_" });
  const config = testConfig({ runtime: { dataDir: dir }, http: { port: 0 } });
  const service = await startServing(config);
  try {
    const base = `http://127.0.0.1:${service.http!.port}`;
    assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
    const latency = (ms: number) =>
      post(base, "/v0/call", {
        provider_id: "sim0",
        device_id: "chaos_control",
        function_id: 3,
        args: {
          device_id: { type: "string", string: "motorctl0" },
          latency_ms: { type: "int64", int64: ms },
        },
      });
    assert.equal((await latency(800)).status, 200);
    const a = (await post(base, "/v0/runs", {})).json.run;
    const slow = post(base, "/v0/call", duty(0.3));
    const writtenAhead = (duty: number) =>
      waitFor(`the call of duty ${duty} written ahead`, async () => {
        const text = await Promise.all(
          [...Deno.readDirSync(`${dir}/audit`)].map((e) =>
            Deno.readTextFile(`${dir}/audit/${e.name}`)
          ),
        );
        return text.join("").includes(`"double":${duty}`);
      });
    // The call is on its way to the provider (written ahead) when run A closes and B opens.
    await writtenAhead(0.3);
    assert.equal((await post(base, `/v0/runs/${a.run_id}/close`, {})).status, 200);
    const b = (await post(base, "/v0/runs", {})).json.run;
    assert.equal((await slow).status, 200);
    await get(base, "/v0/audit?limit=1"); // a read closes the collapsing entry
    assert.equal((await post(base, `/v0/runs/${b.run_id}/close`, {})).status, 200);

    const calls = async (id: string) =>
      ((await get(base, `/v0/runs/${id}/events?limit=1000`)).json.events as Ev[])
        .filter((e) => e.category === "call")
        .map((e) => [e.payload.args?.duty?.double ?? null, e.payload.outcome]);
    assert.deepEqual(await calls(b.run_id), [], "decided before run B opened");
    // Run A, in which it was decided, says it was in flight when it closed.
    assert.deepEqual(await calls(a.run_id), [[0.3, "in_flight"]]);

    // A call decided before run C opened and still in flight when C closes is none of C's.
    const slower = post(base, "/v0/call", duty(0.5));
    await writtenAhead(0.5);
    const c = (await post(base, "/v0/runs", {})).json.run;
    assert.equal((await post(base, `/v0/runs/${c.run_id}/close`, {})).status, 200);
    assert.equal((await slower).status, 200);
    assert.deepEqual(await calls(c.run_id), [], "decided before run C opened");
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
