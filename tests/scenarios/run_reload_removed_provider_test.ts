/**
 * A run open across a configuration reload that removes the provider a call of the run is at: the
 * call ends once (failed: the reload closed its session), as one audit entry and, in the run it
 * was decided in, one event; the run records the reload as a `config_change`; a restart without
 * that provider finds nothing interrupted. The Kernel with HTTP served; the simulated providers
 * as child processes, the call held at sim1 by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

/** How long sim1 holds the call: past the reload. */
const LATENCY_MS = 2500;

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

const duty = (value: number) => ({
  provider_id: "sim1",
  device_id: "motorctl0",
  function_id: 10,
  args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: value } },
});

for (const closeFirst of [false, true]) {
  const when = closeFirst ? "closed before the reload" : "open across the reload";
  Deno.test(`A run ${when} that removes the provider a call of it is at: one audit entry, one run event, nothing interrupted after a restart`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "run_reload_removed_" });
    const config = testConfig({
      runtime: { dataDir: dir },
      http: { port: 0 },
      providers: [simProvider("sim0"), simProvider("sim1")],
      pollingIntervalMs: 60_000,
    });
    const withoutSim1 = {
      ...config,
      providers: config.providers.filter((p) => p.id !== "sim1"),
    };
    let runId = "";
    const service = await startServing(config);
    try {
      const base = `http://127.0.0.1:${service.http!.port}`;
      assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
      const latency = await post(base, "/v0/call", {
        provider_id: "sim1",
        device_id: "chaos_control",
        function_id: 3,
        args: {
          device_id: { type: "string", string: "motorctl0" },
          latency_ms: { type: "int64", int64: LATENCY_MS },
        },
      });
      assert.equal(latency.status, 200, JSON.stringify(latency.json));
      runId = (await post(base, "/v0/runs", { tag_scope: { provider_ids: ["sim1"] } })).json.run
        .run_id;
      const slow = post(base, "/v0/call", duty(0.7));
      const session = service.registry.host("sim1")!.session!;
      await waitFor("the call at sim1", () => session.inFlight > 0);
      if (closeFirst) {
        assert.equal((await post(base, `/v0/runs/${runId}/close`, {})).status, 200);
      }
      const report = await service.reload(withoutSim1);
      assert.deepEqual(report.providers.removed, ["sim1"]);
      const answer = await slow;
      assert.notEqual(answer.status, 200, JSON.stringify(answer.json));
      if (!closeFirst) {
        assert.equal((await post(base, `/v0/runs/${runId}/close`, {})).status, 200);
      }
      const events = (await get(base, `/v0/runs/${runId}/events?limit=1000`)).json.events as Ev[];
      const calls = events.filter((e) =>
        e.category === "call" && e.payload.function === "set_motor_duty"
      )
        .map((e) => [e.payload.device_handle, e.payload.outcome]);
      assert.deepEqual(
        calls,
        [["sim1/motorctl0", closeFirst ? "in_flight" : "failed"]],
        JSON.stringify(events),
      );
      assert.equal(
        events.filter((e) => e.category === "config_change" && e.type === "providers").length,
        closeFirst ? 0 : 1,
        JSON.stringify(events),
      );
      assert.equal(events.at(-1).category, "run_closed");
    } finally {
      await service.stop();
    }

    const again = await startServing(withoutSim1);
    try {
      const base = `http://127.0.0.1:${again.http!.port}`;
      const entries = (await get(base, "/v0/audit?limit=1000")).json.entries as Ev[];
      assert.deepEqual(
        entries.filter((e) => e.function === "set_motor_duty").map((e) => [
          e.device_handle,
          e.outcome,
          e.count,
        ]),
        [["sim1/motorctl0", "failed", 1]],
        JSON.stringify(entries),
      );
      const run = (await get(base, `/v0/runs/${runId}`)).json.run;
      assert.equal(run.state, "closed");
      assert.equal(run.close_reason, "operator_stop");
      const events = (await get(base, `/v0/runs/${runId}/events?limit=1000`)).json.events as Ev[];
      assert.equal(events.filter((e) => e.category === "run_closed").length, 1);
      assert.equal(events.filter((e) => e.payload?.outcome === "interrupted").length, 0);
    } finally {
      await again.stop();
      await Deno.remove(dir, { recursive: true });
    }
  });
}
