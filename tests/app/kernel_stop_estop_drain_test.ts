/**
 * Kernel.stop's stage order against the e-stop: its "e-stop" stage (Estop.close(): no plan log
 * from then on) comes before the HTTP listener's close and drain (HTTP_SHUTDOWN_ANSWER_MS). An
 * e-stop that reaches the runtime during that drain -- over a connection still held, the API
 * closed to all but its priority routes -- must still do all it does otherwise: latch, make its
 * ladder's calls before the providers are stopped, read the safe state back (verified), and be
 * journaled in the audit journal on disk.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, d, expectation, i, inertSim, manualCall } from "../safety/_fixture.ts";

/** Room for the read-back on a loaded machine. */
const VERIFY_TIMEOUT_MS = 2000;

Deno.test("an e-stop during the stop's HTTP drain latches, makes its ladder's calls, is verified and journaled", async () => {
  const rt = await startServing(testConfig({
    http: { port: 0 },
    providers: [inertSim("sim0")],
    safety: {
      hooks: [call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 })],
      expect: [expectation("sim0/motorctl0/motor1_duty", { equals: 0 })],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  }));
  let stopped: Promise<void> | null = null;
  try {
    const base = `http://127.0.0.1:${rt.http!.port}`;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.5) });
    // A device call the provider answers 1.5 s after it gets it: the drain waits for it.
    await manualCall(rt, "sim0", "chaos_control", 3, {
      device_id: { type: "string", string: "relayio0" },
      latency_ms: { type: "int64", int64: 1500 },
    });
    let answered = false;
    const slow = apiFetch(`${base}/v0/call`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        provider_id: "sim0",
        device_id: "relayio0",
        function_id: 1,
        args: { enabled: { type: "bool", bool: true } },
      }),
    }).then(async (r) => {
      await r.body?.cancel();
      answered = true;
    }, () => (answered = true));
    await waitFor("the slow call in flight", () => rt.api.inFlight > 0);
    stopped = rt.stop();
    // The API is closed for the stop (its "HTTP API" stage, right before the drain): a request
    // on a connection still held reaches the handler, which refuses all but the priority routes.
    const handle = (path: string, body?: unknown) =>
      rt.api.handle(
        new Request(`http://localhost${path}`, {
          method: body === undefined ? "GET" : "POST",
          ...(body === undefined
            ? {}
            : { headers: { "content-type": "application/json" }, body: JSON.stringify(body) }),
        }),
        { remoteAddr: "127.0.0.1" },
      );
    await waitFor("the API closed for the stop", async () => {
      const res = await handle("/v0/mode", { mode: "MANUAL" });
      await res.body?.cancel();
      return res.status === 503;
    });
    assert.equal(answered, false, "the drain had ended: the e-stop below is not during it");
    const pressed = handle("/v0/estop", { reason: "pressed during the stop's drain" });
    await waitFor("the e-stop latched", () => rt.estop.latched, 10000, 0);
    assert.equal(answered, false, "the e-stop latched after the drain, not during it");
    // Its answer waits for the slow call still on the wire (the e-stop's own drain).
    const res = await pressed;
    const text = await res.text();
    assert.equal(res.status, 200, text);
    const body = JSON.parse(text) as Record<string, unknown>;
    const verification = rt.estop.status().verification!;
    assert.equal(verification.outcome, "verified", JSON.stringify(body));
    assert.deepEqual(verification.checks.map((c) => [c.signal, c.outcome]), [
      ["sim0/motorctl0/motor1_duty", "verified"],
    ]);
    await slow;
    await stopped;
    stopped = null;
    // Journaled on disk, once the stop has closed the audit journal.
    const dir = `${rt.config.runtime.dataDir}/audit`;
    let journal = "";
    for (const e of Deno.readDirSync(dir)) {
      if (e.isFile) journal += Deno.readTextFileSync(`${dir}/${e.name}`);
    }
    assert.ok(journal.includes("pressed during the stop's drain"), journal.slice(-2000));
  } finally {
    await (stopped ?? rt.stop());
  }
});
