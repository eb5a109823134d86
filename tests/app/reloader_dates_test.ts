/**
 * A `config_reload` event is dated as every other transition is (transitionDate): a wall clock
 * that steps back (NTP on a board without a real-time clock) never dates a later reload before
 * an earlier one, applied or failed. Real: the kernel with its reloader, over a clock whose wall
 * time the test sets (its timers real).
 */
import assert from "node:assert/strict";
import type { ReloadedConfig } from "../../src/app/mod.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { recordEvents, startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** How far the wall clock steps back between the two reloads. */
const STEP_BACK_MS = 60_000;

Deno.test("ConfigReloader dates a reload after a wall-clock step back no earlier than the reload before it", async () => {
  let wall = Date.now();
  let next: ReloadedConfig | null = null;
  const rt = await startRuntime(testConfig({ providers: [] }), {
    host: {
      clock: withRealTimers({ nowMs: () => wall, monoMs: () => performance.now() }),
      loadConfig: () => Promise.resolve(next!),
    },
  });
  const { events, stop: unsubscribe } = recordEvents(rt);
  try {
    const interval = rt.config.polling.intervalMs;
    const applied = (ms: number): ReloadedConfig => ({
      ok: true,
      config: { ...rt.config, polling: { ...rt.config.polling, intervalMs: ms } },
      warnings: [],
    });
    next = applied(interval * 2);
    await rt.reloader!.request();
    const first = wall;
    wall -= STEP_BACK_MS;
    next = applied(interval);
    await rt.reloader!.request();
    next = { ok: false, errors: ["an error"] };
    await rt.reloader!.request();
    const dates = events.flatMap((e) =>
      e.kind === "config_reload" ? [{ result: e.result, at: e.timestamp_ms }] : []
    );
    assert.deepEqual(dates, [
      { result: "applied", at: first },
      { result: "applied", at: first },
      { result: "failed", at: first },
    ]);
    assert.equal(rt.reloader!.counts().lastSuccessEpochSeconds, first / 1000);
  } finally {
    unsubscribe();
    await rt.stop();
  }
});
