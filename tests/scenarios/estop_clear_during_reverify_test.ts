/**
 * The latch released while a provider that came back while latched is being read back: the
 * re-verification's audit entry names the rung and the cause of the latch its securing calls were
 * made for (docs/safety.md, "A provider that comes back while latched": origin `estop`, rung and
 * cause of the latch), not `api` because no latch holds when it ends. Real child processes: the
 * plant provider is killed with SIGKILL, the e-stop (cause `sparkplug`) latches while it is down,
 * the supervisor restarts it, its ladder calls land, and the operator clears while its
 * expectation (one the zero rung never meets) is read back until verify_timeout_ms.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { expectation, plantProvider } from "../safety/_fixture.ts";

/** Long enough that the clear lands while the re-verification still reads back. */
const VERIFY_TIMEOUT_MS = 5000;

Deno.test("Estop audits a re-verification the latch's release overtook with the cause of that latch", async () => {
  const rt = await startRuntime(testConfig({
    providers: [plantProvider("plant", { restartBackoffMs: 1000 })],
    safety: {
      zeroIsSafe: true,
      // Never met: the zero rung turns the heater off, so the read-back runs to its deadline.
      expect: [expectation("plant/plant0/heater_on", { equals: true })],
      verifyTimeoutMs: VERIFY_TIMEOUT_MS,
    },
  }));
  try {
    const ladderCalls: string[] = [];
    rt.audit.onEntry((e) => {
      if (e.action === "call" && e.origin.kind === "estop" && e.outcome === "accepted") {
        ladderCalls.push(`${e.device_handle} ${e.function}`);
      }
    });
    // Counts the e-stop's fresh reads of plant (the read-back's, a ReadSignals round-trip each).
    let freshReads = 0;
    const readFresh = rt.cache.readFresh.bind(rt.cache);
    rt.cache.readFresh = (providerId, deviceId, signalIds, timeoutMs) => {
      if (providerId === "plant") freshReads++;
      return readFresh(providerId, deviceId, signalIds, timeoutMs);
    };
    const plant = rt.registry.host("plant")!;
    Deno.kill(plant.session!.pid, "SIGKILL");
    await waitFor("plant down", () => !plant.available);
    await rt.estop.trigger("while plant is down", { cause: "sparkplug" });
    assert.equal(rt.estop.status().cause, "sparkplug");

    await waitFor("plant restarted", () => plant.available, 20_000);
    // (Wrapped: waitFor would adopt the promise, waiting for the whole run.)
    const { securing } = await waitFor("plant secured", () => {
      const run = rt.estop.securing(plant);
      return run === null ? null : { securing: run };
    }, 20_000);
    // Its ladder calls made (each audited once answered; read off the closed entries, as a query
    // would wait for the journal), and its read-back begun: a fresh read of plant after them.
    await waitFor("the securing run's two calls", () => {
      rt.audit.flushOpen();
      return ladderCalls.length === 2;
    });
    const readsBefore = freshReads;
    await waitFor("the read-back under way", () => freshReads > readsBefore);
    rt.estop.clear();
    await securing;

    const entries = (await rt.audit.query({ limit: 1000 })).entries;
    const redone = entries.filter((e) =>
      e.action === "estop" &&
      (e.args as { reason?: string } | null)?.reason === "available while latched"
    );
    const clear = entries.filter((e) => e.action === "estop_clear");
    assert.equal(redone.length, 1, JSON.stringify(entries));
    assert.equal(clear.length, 1);
    // The release came while it read back (begun latched, it is finished and audited).
    assert.ok(clear[0]!.seq < redone[0]!.seq, JSON.stringify(entries));
    assert.deepEqual(redone[0]!.origin, { kind: "estop", rung: "zero", cause: "sparkplug" });
    assert.equal(redone[0]!.result?.verification, "mismatch");
    assert.equal(rt.estop.status().latched, false);
  } finally {
    await rt.stop();
  }
});
