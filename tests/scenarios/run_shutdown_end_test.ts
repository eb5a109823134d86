/**
 * A run left open by a graceful stop (SIGTERM: a service restart, a reboot) is closed as
 * `abandoned` by the next start, ending when that stop took it, not at its last event: the
 * stopping process knew the run was open until then. The runtime (src/main.ts) and the scripted
 * provider as real child processes.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  providerYaml,
  scriptedCommand,
  startRuntimeOnFreePort,
  writeRuntimeConfig,
} from "./process_helpers.ts";

async function post(base: string, path: string, body: unknown) {
  const r = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

/** Resolves once the host's wall clock has passed `t` (the run's last event is then before it). */
async function wallClockPast(t: number): Promise<void> {
  while (Date.now() <= t) await new Promise((r) => setTimeout(r, 5));
}

Deno.test("a run open at a graceful stop ends at that stop, not at its last event", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_shutdown_end_" });
  const config = (port: number) =>
    writeRuntimeConfig(dir, { port, providers: providerYaml("p", scriptedCommand([])) });
  try {
    let runId = "";
    let openedAt = 0;
    let stoppedAfter = 0;
    const first = await startRuntimeOnFreePort(config);
    try {
      const base = `http://127.0.0.1:${first.port}`;
      const opened = await post(base, "/v0/runs", { experiment_label: "quiet until the stop" });
      assert.equal(opened.status, 200, JSON.stringify(opened.json));
      runId = opened.json.run.run_id;
      openedAt = opened.json.run.started_at_epoch_ms;
      // Nothing recorded after run_opened; the stop comes later by the wall clock.
      await wallClockPast(openedAt + 50);
      stoppedAfter = Date.now();
      first.rt.child.kill("SIGTERM");
      assert.equal((await first.rt.exit).code, 0);
    } finally {
      await first.rt.dispose();
    }

    const second = await startRuntimeOnFreePort(config);
    try {
      const base = `http://127.0.0.1:${second.port}`;
      const { run } = await (await apiFetch(`${base}/v0/runs/${runId}`)).json();
      assert.equal(run.close_reason, "abandoned");
      assert.ok(
        run.ended_at_epoch_ms >= stoppedAfter,
        `ended at ${run.ended_at_epoch_ms}, opened at ${openedAt}, stopped after ${stoppedAfter}`,
      );
      const page = await (await apiFetch(`${base}/v0/runs/${runId}/events`)).json();
      const closed = page.events.at(-1);
      assert.deepEqual(
        page.events.map((e: { category: string }) => e.category),
        ["run_opened", "run_closed"],
      );
      assert.equal(closed.occurred_at_epoch_ms, run.ended_at_epoch_ms);
      assert.deepEqual(closed.payload, { end_basis: "shutdown" });
    } finally {
      second.rt.child.kill("SIGTERM");
      await second.rt.exit;
      await second.rt.dispose();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
