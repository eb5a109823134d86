/**
 * The e-stop's read-back of a provider that stays down (its circuit open: only a reload retries
 * it) ends at once as `unreachable` (docs/safety.md, step 4): asked again every 50 ms until
 * `verify_timeout_ms`, it could never answer, and a runtime stop that waits for that read-back
 * (Estop.readBackSettled) waited out the whole timeout after a crash loop under the latch.
 * Never verified: its checks say `unreachable`.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, expectation } from "../safety/_fixture.ts";
import { readbackProvider } from "../safety/_readback.ts";

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

/** How long the supervisor may take to have the killed provider back. */
const RESTART_WAIT_MS = 20_000;

Deno.test("a press while a provider's circuit is open reads it back once: unreachable at once, not at verify_timeout_ms", async () => {
  const r = await rig({
    programs: false,
    // Restarts disabled: its crash opens its circuit at once.
    providers: [readbackProvider("rb", {
      dev0: { signals: { out: "bool" }, reads: [{ out: { v: false } }], actuate: "ok" },
    })],
    runtime: { shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS },
    safety: {
      hooks: [call("rb/dev0", "set_output")],
      expect: [expectation("rb/dev0/out", { equals: false })],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  });
  try {
    const rt = r.kernel;
    const host = rt.registry.host("rb")!;
    r.kill("rb");
    await waitFor("rb's circuit open", () => host.state.phase === "CIRCUIT_OPEN");
    const pressed = await rt.estop.trigger("pressed with rb's circuit open");
    const v = pressed.verification;
    assert.equal(v.outcome, "unreachable", JSON.stringify(v));
    assert.deepEqual(v.checks.map((c) => c.outcome), ["unreachable"], JSON.stringify(v));
    assert.ok(v.elapsed_ms < VERIFY_TIMEOUT_MS / 2, JSON.stringify(v));
  } finally {
    await r.stop();
  }
});

Deno.test("a crash loop under the latch, then a stop: the re-verification of the provider whose circuit opened ends at once, unreachable, and the stop does not wait it out", async () => {
  const logFile = await Deno.makeTempFile({ prefix: "kernel-stop-circuit-" });
  const base = readbackProvider("rb", {
    dev0: {
      signals: { out: "bool" },
      reads: [{ out: { v: false } }],
      delayMs: READ_DELAY_MS,
      actuate: "ok",
    },
  }, { logFile });
  const r = await rig({
    programs: false,
    providers: [{
      ...base,
      // One restart, then the next crash opens its circuit.
      restartPolicy: {
        ...base.restartPolicy,
        enabled: true,
        maxAttempts: 1,
        backoffMs: [RESTART_BACKOFF_MS],
      },
    }],
    runtime: { shutdownTimeoutMs: SHUTDOWN_TIMEOUT_MS },
    safety: {
      hooks: [call("rb/dev0", "set_output")],
      expect: [expectation("rb/dev0/out", { equals: false })],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  });
  try {
    const rt = r.kernel;
    const pressed = await rt.estop.trigger("latched before the crash loop");
    assert.equal(pressed.verification.outcome, "verified", JSON.stringify(pressed.verification));
    const host = rt.registry.host("rb")!;
    const lines = () => Deno.readTextFileSync(logFile).split("\n").filter((l) => l !== "");
    const before = lines().length;
    r.kill("rb");
    await waitFor("rb down", () => !host.available);
    await waitFor("rb back", () => host.available, RESTART_WAIT_MS);
    // Its securing run's call made, its read-back's ReadSignals at the new process (answered
    // READ_DELAY_MS later): it crashes again, and its circuit opens.
    await waitFor(
      "the securing run's read-back at the restarted provider",
      () => lines().slice(before).some((l) => l === "dev0 out"),
      RESTART_WAIT_MS,
    );
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
  } finally {
    await r.stop();
    await Deno.remove(logFile).catch(() => {});
  }
});
