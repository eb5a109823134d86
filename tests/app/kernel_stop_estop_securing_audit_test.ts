/**
 * Kernel.stop against a securing run under the latch whose read-back its wait's cap cuts: the
 * runtime's stop waits for the read-backs under way (Estop.readBackSettled) at most what its
 * budget leaves; cut, the securing run's record -- the calls it made to the provider that came
 * back, one failed -- must still be in the audit trail before its journal closes (docs/safety.md,
 * "A provider that comes back while latched"; docs/http-api.md, "Audit trail").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { estopReadbackRig, RESTART_WAIT_MS } from "../safety/_readback.ts";

/** runtime.shutdown_timeout_ms: the stop's wait's cap without a process deadline. */
const BUDGET_MS = 1000;

/** Longer than BUDGET_MS: the re-verification is still reading when the cap cuts the wait. */
const VERIFY_TIMEOUT_MS = 3000;

/** Each read's answer comes this late: past VERIFY_TIMEOUT_MS, so a read-back never ends early. */
const READ_DELAY_MS = 5000;

/** The supervisor's backoff before it restarts the killed provider. */
const RESTART_BACKOFF_MS = 100;

Deno.test("a stop whose cap cuts a securing run's read-back still audits the run's calls (a failed one counted), the read-back not done", async () => {
  await using r = await estopReadbackRig({
    logPrefix: "kernel-stop-securing-audit-",
    dev0: { reads: [{ out: { v: false } }], delayMs: READ_DELAY_MS, actuate: "unavailable" },
    restart: { maxAttempts: 3, backoffMs: RESTART_BACKOFF_MS },
    shutdownTimeoutMs: BUDGET_MS,
    verifyTimeoutMs: VERIFY_TIMEOUT_MS,
  });
  const rt = r.kernel;
  await rt.estop.trigger("latched before the provider crashed");
  const host = rt.registry.host("rb")!;
  const lines = r.providerLines;
  const before = await r.restartUnderLatch();
  assert.ok(lines().slice(before).includes("call dev0 set_output"), lines().join("\n"));
  // Down again while that read-back runs, back again: a second securing run, its call failed
  // too, its re-verification queued behind the first's.
  const second = lines().length;
  r.kill("rb");
  await waitFor("rb down again", () => !host.available);
  await waitFor("rb back again", () => host.available, RESTART_WAIT_MS);
  await waitFor(
    "the second securing run's call",
    () => lines().slice(second).includes("call dev0 set_output"),
    RESTART_WAIT_MS,
  );
  await r.stop();
  const audited = (await rt.audit.query({ limit: 100, origin: "estop" })).entries
    .filter((e) => e.action === "estop");
  assert.deepEqual(
    audited.map((e) => [e.args?.reason, e.outcome, e.result?.actions, e.result?.actions_failed]),
    [["available while latched", "failed", 1, 1], ["available while latched", "failed", 1, 1]],
    JSON.stringify(audited),
  );
  // Cut before their read-back answered: they claim no verification.
  assert.ok(audited.every((e) => e.result?.verification !== "verified"), JSON.stringify(audited));
});
