/**
 * Kernel.stop's order where the HTTP drain meets automation: the HTTP listener closes first and
 * waits for answers still being made (HTTP_SHUTDOWN_ANSWER_MS), so from then on no operator can
 * stop the machine over HTTP. The behavior tree must not go on commanding the machine meanwhile:
 * it is halted before the drain, not after it.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { automationConfig, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

Deno.test("Kernel.stop halts the behavior tree before the HTTP drain, not after a slow call's answer", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    // OVERRIDE: an operator's call goes through while AUTO runs (the slow call below).
    const rt = await startServing(
      automationConfig(tree, { manualGatingPolicy: "OVERRIDE", config: { http: { port: 0 } } }),
    );
    let stopped: Promise<void> | null = null;
    try {
      const base = `http://127.0.0.1:${rt.http!.port}`;
      const post = (path: string, body: unknown) =>
        apiFetch(`${base}${path}`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify(body),
        });
      assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
      assert.equal((await post("/v0/mode", { mode: "AUTO" })).status, 200);
      await waitFor("the tree ticking", () => rt.automation!.status().not_running === null);
      // A device call the provider answers 1.5 s after it gets it: the drain waits for it.
      const inject = await post("/v0/call", {
        provider_id: "sim0",
        device_id: "chaos_control",
        function_id: 3,
        args: {
          device_id: { type: "string", string: "relayio0" },
          latency_ms: { type: "int64", int64: 1500 },
        },
      });
      assert.equal(inject.status, 200, await inject.text());
      let answered = false;
      const slow = post("/v0/call", {
        provider_id: "sim0",
        device_id: "relayio0",
        function_id: 1,
        args: { enabled: { type: "bool", bool: true } },
      }).then(
        async (r) => {
          await r.body?.cancel();
          answered = true;
        },
        () => (answered = true),
      );
      await waitFor("the slow call in flight", () => rt.api.inFlight > 0);
      stopped = rt.stop();
      await waitFor(
        "the tree halted or the slow answer given",
        () => rt.automation!.status().not_running !== null || answered,
      );
      assert.equal(
        answered,
        false,
        "the tree went on ticking through the HTTP drain, while no e-stop could reach the runtime",
      );
      await slow;
    } finally {
      await (stopped ?? rt.stop());
    }
  } finally {
    await dir.dispose();
  }
});
