/**
 * GET /v0/providers/health carries the history disk tier's health next to the audit journal's
 * (`history_disk`): a full card that stops the tier shows where an operator reads the runtime's
 * health, not only in GET /metrics; null when history is off. Real: the kernel served on loopback
 * with the simulated provider as a child process; the history's appends fail as on a full disk.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { afterPolls, startServing, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

async function health(port: number) {
  const r = await apiFetch(`http://127.0.0.1:${port}/v0/providers/health`);
  assert.equal(r.status, 200);
  return await r.json();
}

Deno.test("GET /v0/providers/health says the history's disk tier stopped on a full disk, and null without history", async () => {
  const files = new InterceptedAppends("/history/", () => Promise.reject(diskFullError()));
  const rt = await startServing(
    testConfig({
      providers: [simProvider("sim0")],
      history: { stepMs: 1000 },
      http: { port: 0 },
    }),
    { files },
  );
  try {
    await afterPolls(rt, "sim0/tempctl0", 3);
    const port = rt.http!.port;
    const stopped = await waitFor("the tier to stop on its first row", async () => {
      const h = await health(port);
      return h.history_disk?.state === "stopped" ? h.history_disk : null;
    }, 15000);
    assert.ok(stopped.write_errors_total >= 1, JSON.stringify(stopped));
    assert.match(String(stopped.last_error), /space/i, JSON.stringify(stopped));
  } finally {
    await rt.stop();
  }
  const off = await startServing(
    testConfig({
      providers: [simProvider("sim0")],
      history: { enabled: false },
      http: { port: 0 },
    }),
  );
  try {
    assert.equal((await health(off.http!.port)).history_disk, null);
  } finally {
    await off.stop();
  }
});
