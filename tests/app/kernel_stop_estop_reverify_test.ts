/**
 * Kernel.stop against the read-back of a provider that came back while latched: the supervisor
 * restarts a crashed provider under the e-stop's latch, its securing run makes the ladder's call
 * to the new process and reads its expectations back again (docs/safety.md, "A provider that
 * comes back while latched"). A stop (SIGTERM) that comes while that read-back still waits for
 * the provider's answer waits for it (bounded), as it waits for a press's read-back: cut by the
 * runtime's own stop, it would say `unreachable` -- and audit it -- of a provider that was
 * answering and had been brought to the safe state.
 */
import assert from "node:assert/strict";
import { estopReadbackRig } from "../safety/_readback.ts";

/**
 * How long the provider takes to answer each read (ReadSignals): longer than the stop's stages
 * before the providers' stop take (HISTORY_STOP_BEFORE_PROVIDERS_MS, 1 s, and the rest), so the
 * read-back's second read is asked only after the stop has reached the providers.
 */
const READ_DELAY_MS = 2000;

/** Well past two reads of READ_DELAY_MS: the read-back is never cut by its own bound here. */
const VERIFY_TIMEOUT_MS = 8000;

/** runtime.shutdown_timeout_ms: room for the stop's wait (it caps it). */
const SHUTDOWN_TIMEOUT_MS = 10000;

/** The supervisor's backoff before it restarts the killed provider. */
const RESTART_BACKOFF_MS = 100;

Deno.test("a stop while a restarted provider's read-back under the latch waits for its answer waits for it: verified, not unreachable", async () => {
  await using r = await estopReadbackRig({
    logPrefix: "kernel-stop-reverify-",
    dev0: {
      // Each process's first read finds the output not yet off, its second finds it off: each
      // read-back (the press's, then the restarted process's) needs both, 2 x READ_DELAY_MS.
      reads: [{ out: { v: true } }, { out: { v: false } }],
      delayMs: READ_DELAY_MS,
      actuate: "ok",
    },
    restart: { maxAttempts: 3, backoffMs: RESTART_BACKOFF_MS },
    shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS,
    verifyTimeoutMs: VERIFY_TIMEOUT_MS,
  });
  const rt = r.kernel;
  const pressed = await rt.estop.trigger("latched before the provider crashed");
  assert.equal(pressed.verification.outcome, "verified", JSON.stringify(pressed.verification));
  // Killed, back under the latch: its securing run's call made to the new process, its
  // read-back's first ReadSignals arrived there (its answer due READ_DELAY_MS later, then the
  // second read's): the stop comes now.
  const before = await r.restartUnderLatch();
  const lines = r.providerLines;
  assert.ok(lines().slice(before).includes("call dev0 set_output"), lines().join("\n"));
  await r.stop();
  assert.equal(
    rt.estop.status().verification?.outcome,
    "verified",
    JSON.stringify(rt.estop.status().verification),
  );
  const published = r.events.filter((e) => e.kind === "estop_verification");
  assert.deepEqual(published.map((e) => e.kind === "estop_verification" && e.outcome), [
    "verified",
    "verified",
  ]);
  // The securing run's record: its call and its read-back, audited before the providers went.
  const audited = (await rt.audit.query({ limit: 100, origin: "estop" })).entries
    .filter((e) => e.action === "estop");
  assert.deepEqual(
    audited.map((e) => [e.args?.reason, e.result?.verification]),
    [["available while latched", "verified"]],
    JSON.stringify(audited),
  );
  assert.ok(
    r.lines.some((l) => l.includes("stop: waited") && l.includes("read-back")),
    r.lines.filter((l) => l.includes("stop:")).join("\n"),
  );
});
