/**
 * A call in flight when the runtime is killed (SIGKILL; its outcome never journaled) is recorded
 * `interrupted` by the audit trail at the next start, and it is an event of the run that crash
 * left open (closed as `abandoned` by that start), before its run_closed: the runtime
 * (src/main.ts) and the audit provider (tests/scenarios/_audit_provider.ts) as real child
 * processes.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { REPO } from "../helpers/sim_config.ts";
import {
  killProcessesNaming,
  providerYaml,
  startRuntimeOnFreePort,
  waitFor,
  writeRuntimeConfig,
} from "./process_helpers.ts";

const AUDIT_PROVIDER = `${REPO}tests/scenarios/_audit_provider.ts`;

async function post(base: string, path: string, body: unknown) {
  const r = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

Deno.test("a call interrupted by a crash is an event of the run that crash abandoned", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_interrupted_" });
  const auditDir = `${dir}/data/audit`;
  const config = (port: number) =>
    writeRuntimeConfig(dir, {
      port,
      providers: providerYaml("rec", {
        command: Deno.execPath(),
        args: ["run", "--quiet", "--allow-read", AUDIT_PROVIDER, auditDir],
      }),
    });
  const tag = "in-flight-at-the-crash-51ea";
  let runId = "";
  try {
    const first = await startRuntimeOnFreePort(config);
    const base = `http://127.0.0.1:${first.port}`;
    try {
      await waitFor("the provider AVAILABLE", async () => {
        const s = await (await apiFetch(`${base}/v0/runtime/status`)).json();
        return s.providers?.[0]?.state === "AVAILABLE";
      });
      assert.equal((await post(base, "/v0/mode", { mode: "MANUAL" })).status, 200);
      const opened = await post(base, "/v0/runs", { experiment_label: "crashed" });
      assert.equal(opened.status, 200, JSON.stringify(opened.json));
      runId = opened.json.run.run_id;
      const answer = await post(base, "/v0/call", {
        provider_id: "rec",
        device_id: "rec0",
        function_id: 1,
        args: { tag: { type: "string", string: tag } },
      });
      assert.equal(answer.status, 200, JSON.stringify(answer.json));
      // Killed while the call's entry is still collapsing: its outcome is not on disk.
      first.rt.child.kill("SIGKILL");
      await first.rt.exit;
    } finally {
      await first.rt.dispose();
    }

    const second = await startRuntimeOnFreePort(config);
    try {
      const base2 = `http://127.0.0.1:${second.port}`;
      const audit = await (await apiFetch(`${base2}/v0/audit?device_id=rec0`)).json();
      const calls = audit.entries.filter((e: { action: string }) => e.action === "call");
      assert.deepEqual(calls.map((e: { outcome: string }) => e.outcome), ["interrupted"]);
      const run = await (await apiFetch(`${base2}/v0/runs/${runId}`)).json();
      assert.equal(run.run.close_reason, "abandoned");
      const page = await (await apiFetch(`${base2}/v0/runs/${runId}/events`)).json();
      assert.deepEqual(
        page.events.map((e: { category: string; type: string; payload: { outcome?: string } }) => [
          e.category,
          e.type,
          e.payload.outcome ?? null,
        ]),
        [
          ["run_opened", "", null],
          ["call", "rec/rec0 act", "interrupted"],
          ["run_closed", "abandoned", null],
        ],
      );
    } finally {
      second.rt.child.kill("SIGTERM");
      await second.rt.exit;
      await second.rt.dispose();
    }
  } finally {
    // A provider outlives a SIGKILLed runtime until it sees its stdin close.
    killProcessesNaming(auditDir);
    await Deno.remove(dir, { recursive: true });
  }
});
