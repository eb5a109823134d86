/**
 * The e-stop's read-back of a provider that stays down (its circuit open: only a reload retries
 * it) ends at once as `unreachable` (docs/safety.md, step 4): asked again every 50 ms until
 * `verify_timeout_ms`, it could never answer, and a runtime stop that waits for that read-back
 * (Estop.readBackSettled) waited out the whole timeout after a crash loop under the latch.
 * Never verified: its checks say `unreachable`.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { estopReadbackRig } from "../safety/_readback.ts";

/**
 * Long enough that a read-back waiting it out is told apart from one that ends at once: each
 * assertion below allows half of it.
 */
const VERIFY_TIMEOUT_MS = 8000;

/** runtime.shutdown_timeout_ms: room for the stop's wait (it caps it). */
const SHUTDOWN_TIMEOUT_MS = 10000;

/** How long the provider takes to answer each read (ReadSignals) of the restarted process. */
const READ_DELAY_MS = 2000;

/** The supervisor's backoff before it restarts the killed provider. */
const RESTART_BACKOFF_MS = 100;

Deno.test("a press while a provider's circuit is open reads it back once: unreachable at once, not at verify_timeout_ms", async () => {
  // Restarts disabled: its crash opens its circuit at once.
  await using r = await estopReadbackRig({
    logPrefix: "kernel-stop-circuit-",
    dev0: { reads: [{ out: { v: false } }], actuate: "ok" },
    shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
    verifyTimeoutMs: VERIFY_TIMEOUT_MS,
  });
  const rt = r.kernel;
  const host = rt.registry.host("rb")!;
  r.kill("rb");
  await waitFor("rb's circuit open", () => host.state.phase === "CIRCUIT_OPEN");
  const pressed = await rt.estop.trigger("pressed with rb's circuit open");
  const v = pressed.verification;
  assert.equal(v.outcome, "unreachable", JSON.stringify(v));
  assert.deepEqual(v.checks.map((c) => c.outcome), ["unreachable"], JSON.stringify(v));
  assert.ok(v.elapsed_ms < VERIFY_TIMEOUT_MS / 2, JSON.stringify(v));
});

Deno.test("a crash loop under the latch, then a stop: the re-verification of the provider whose circuit opened ends at once, unreachable, and the stop does not wait it out", async () => {
  await using r = await estopReadbackRig({
    logPrefix: "kernel-stop-circuit-",
    dev0: { reads: [{ out: { v: false } }], delayMs: READ_DELAY_MS, actuate: "ok" },
    // One restart, then the next crash opens its circuit.
    restart: { maxAttempts: 1, backoffMs: RESTART_BACKOFF_MS },
    shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
    verifyTimeoutMs: VERIFY_TIMEOUT_MS,
  });
  const rt = r.kernel;
  const pressed = await rt.estop.trigger("latched before the crash loop");
  assert.equal(pressed.verification.outcome, "verified", JSON.stringify(pressed.verification));
  const host = rt.registry.host("rb")!;
  // Its securing run's call made, its read-back's ReadSignals at the new process (answered
  // READ_DELAY_MS later): it crashes again, and its circuit opens.
  await r.restartUnderLatch();
  r.kill("rb");
  await waitFor("rb's circuit open", () => host.state.phase === "CIRCUIT_OPEN");
  await r.stop();
  const audited = (await rt.audit.query({ limit: 100, origin: "estop" })).entries
    .filter((e) => e.action === "estop");
  assert.deepEqual(
    audited.map((e) => [e.args?.reason, e.result?.verification]),
    [["available while latched", "unreachable"]],
    JSON.stringify(audited),
  );
  // The stop waited for it, if at all, for far less than verify_timeout_ms.
  const waited = r.lines.flatMap((l) => {
    const m = /stop: waited (\d+) ms for the e-stop's read-back/.exec(l);
    return m ? [Number(m[1])] : [];
  });
  assert.ok(
    waited.every((ms) => ms < VERIFY_TIMEOUT_MS / 2),
    r.lines.filter((l) => l.includes("stop:")).join("\n"),
  );
  assert.ok(
    !r.lines.some((l) => l.includes("read-back of the safe state had not finished")),
    r.lines.filter((l) => l.includes("stop:")).join("\n"),
  );
});
