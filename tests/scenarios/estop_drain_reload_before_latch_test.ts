/**
 * The e-stop's drain (docs/safety.md, step 2) when a configuration reload began to stop a provider
 * before the latch: a call admitted before the latch is still at the provider's process, which the
 * reload closed and is ending (up to runtime.shutdown_timeout_ms) and which may still carry the
 * call out. The drain counts such a call in flight until that process has exited ("So does a call
 * its provider held when it was stopped (a reload that removes or restarts it, a shutdown)"): an
 * answer saying `complete` comes only once the process is gone. The simulated providers run as
 * child processes; the call is held at the provider by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { d, i, manualCall } from "../safety/_fixture.ts";

/** How long the provider holds the call: past the reload and the latch, within the drain bound. */
const LATENCY_MS = 2500;

/**
 * sim1 holds a call admitted before the latch; `reload` takes it out (removes or restarts it) and
 * closes its session; the e-stop latches while its process still runs the call. Asserts the drain
 * answered complete only once that process had exited.
 */
async function latchWhileStopping(restart: boolean): Promise<void> {
  const rt = await startRuntime(
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
  } finally {
    await rt.stop();
  }
}

Deno.test("Estop drain waits for the process of a provider a reload removed before the latch, while it still holds a call admitted before the latch", async () => {
  await latchWhileStopping(false);
});

Deno.test("Estop drain waits for the old process of a provider a reload restarts, stopped before the latch, while it still holds a call admitted before the latch", async () => {
  await latchWhileStopping(true);
});
