/**
 * Once the runtime's stop has begun no provider is restarted: one that dies while the stop still
 * drains the HTTP server (a crash, or the second stop signal's kill of the providers) stays down
 * until the providers' stop -- before, its supervisor spawned it again mid-shutdown (its hardware
 * initialised only to be stopped a moment later). Real: the kernel serving HTTP on loopback, the
 * simulated provider as a child process, a request whose body is held keeping the drain open.
 */
import assert from "node:assert/strict";
import { processAlive, startServing, waitFor } from "../helpers/kernel.ts";
import { routedPost } from "../helpers/pending_body.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { inertSim } from "../safety/_fixture.ts";

Deno.test("Kernel.stop: a provider that dies during the stop's HTTP drain is not restarted, it stays down until the providers' stop", async () => {
  const rt = await startServing(testConfig({
    http: { port: 0 },
    // Restarted at once, were it restarted.
    providers: [inertSim("sim0", { restart: { backoffMs: [0, 0, 0] } })],
  }));
  let stopped: Promise<void> | null = null;
  try {
    const host = rt.registry.host("sim0")!;
    const pid = host.session!.pid;
    // The drain waits for this request's answer: the providers' stop has not begun meanwhile.
    const request = await routedPost(rt, "/v0/mode");
    stopped = rt.stop();
    Deno.kill(pid, "SIGKILL"); // as the second stop signal's kill does
    await waitFor(
      "the provider down for good, not restarted",
      () => host.state.phase === "STOPPED" && !processAlive(pid),
    );
    assert.equal(host.available, false);
    assert.equal(host.session, null, "no new process");
    assert.equal(host.counts().restart_attempts, 0, "no restart attempt was made");
    assert.equal(host.supervision().next_restart_in_ms, null, "none is pending");
    request.send(JSON.stringify({ mode: "MANUAL" }));
    await request.answer;
    await stopped;
    stopped = null;
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
