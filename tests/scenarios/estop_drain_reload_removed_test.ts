/**
 * The e-stop's drain (docs/safety.md, step 2) and a configuration reload that removes a provider
 * while a call admitted before the latch is still at it: the reload closes the provider's session
 * (its stdin) and takes it out of the inventory before the stop's drain begins, and the call fails
 * at the runtime ("provider session ended"), yet the process runs on until it exits (here it is
 * busy with the call, so the runtime's stop escalates to SIGTERM) and may still carry the call
 * out. The drain counts such a call in flight until the process ends: an answer saying `complete`
 * comes once the process is gone. The simulated providers run as child processes; the call is
 * held at the provider by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { d, i, manualCall } from "../safety/_fixture.ts";

/** How long the provider holds the call: past the reload, well within the drain's bound. */
const LATENCY_MS = 2500;

/**
 * Runs `test` on a runtime with sim0 and sim1 (children) polling only once, and a call admitted
 * before any latch that sim1 holds LATENCY_MS before it acts (at sim1 when `test` begins): the
 * runtime, sim1's pid and the call's outcome ("answered", or the error's text). The runtime is
 * stopped whatever the set-up or `test` throws.
 */
async function withCallHeldAtSim1(
  test: (held: { rt: Kernel; pid: number; call: Promise<string> }) => Promise<void>,
): Promise<void> {
  const rt = await startRuntime(
    // No poll after the first: the one request on sim1's wire is then the call.
    testConfig({
      providers: [simProvider("sim0"), simProvider("sim1")],
      pollingIntervalMs: 60_000,
    }),
    { arm: true },
  );
  try {
    await manualCall(rt, "sim1", "chaos_control", 3, {
      device_id: { type: "string", string: "motorctl0" },
      latency_ms: i(LATENCY_MS),
    });
    const pid = rt.registry.host("sim1")!.session!.pid;
    const call = manualCall(rt, "sim1", "motorctl0", 10, { motor_index: i(1), duty: d(0.7) })
      .then(() => "answered", (e) => String(e));
    const session = rt.registry.host("sim1")!.session!;
    await waitFor("the call at sim1", () => session.inFlight > 0);
    await test({ rt, pid, call });
  } finally {
    await rt.stop();
  }
}

Deno.test("Estop drain waits, past a reload that removes the provider, for the process a call admitted before the latch is still at", async () => {
  await withCallHeldAtSim1(async ({ rt, pid, call }) => {
    const stop = rt.estop.trigger("drain x reload");
    const report = rt.reload({
      ...rt.config,
      providers: rt.config.providers.filter((p) => p.id !== "sim1"),
    });
    const result = await stop;
    const aliveAtAnswer = processAlive(pid);
    assert.match(await call, /provider session ended: closed by the runtime/);
    assert.deepEqual((await report).providers.removed, ["sim1"]);
    assert.ok(
      !result.drain.complete || !aliveAtAnswer,
      `drain ${JSON.stringify(result.drain)} while sim1 (pid ${pid}) still ran the call`,
    );
    assert.deepEqual(result.drain, { complete: true, pending_providers: [] });
  });
});

// The reload first, the latch after (the other order above): the provider a reload took out (removed
// or restarted) and is still ending is drained all the same -- it is no longer in the inventory, and
// its host no longer registered, yet its process may still carry the call out.

/**
 * sim1 holds a call admitted before the latch; `reload` takes it out (removes or restarts it) and
 * closes its session; the e-stop latches while its process still runs the call. Asserts the drain
 * answered complete only once that process had exited.
 */
async function latchWhileStopping(restart: boolean): Promise<void> {
  await withCallHeldAtSim1(async ({ rt, pid, call }) => {
    // The reload first: sim1 is taken out and its session closed while it holds the call.
    const report = rt.reload({
      ...rt.config,
      providers: restart
        // Another timeout_ms: its entry changed, so the reload restarts it.
        ? rt.config.providers.map((p) => p.id === "sim1" ? { ...p, timeoutMs: 6000 } : p)
        : rt.config.providers.filter((p) => p.id !== "sim1"),
    });
    await waitFor("sim1 taken out", () => rt.registry.host("sim1") === undefined);
    assert.match(await call, /provider session ended: closed by the runtime/);
    assert.ok(processAlive(pid), "sim1's process still runs the call");

    const result = await rt.estop.trigger("drain after reload");
    const aliveAtAnswer = processAlive(pid);
    await report;
    assert.ok(
      !result.drain.complete || !aliveAtAnswer,
      `drain ${JSON.stringify(result.drain)} while sim1 (pid ${pid}) still ran the call`,
    );
    // Within the bound (sim1's timeout_ms + 1 s): the drain saw the process exit.
    assert.deepEqual(result.drain, { complete: true, pending_providers: [] });
  });
}

Deno.test("Estop drain waits for the process of a provider a reload removed before the latch, while it still holds a call admitted before the latch", async () => {
  await latchWhileStopping(false);
});

Deno.test("Estop drain waits for the old process of a provider a reload restarts, stopped before the latch, while it still holds a call admitted before the latch", async () => {
  await latchWhileStopping(true);
});
