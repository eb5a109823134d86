/** The poll period of a device and the stale bound of a signal from what the provider declared. */
import assert from "node:assert/strict";
import {
  devicePollPeriodMs,
  MAX_DEVICE_POLL_PERIOD_MS,
  signalStaleAfterMs,
  stalenessBounds,
} from "../../src/state/staleness.ts";

const NONE = { warnAfterMs: 0, staleAfterMs: 0 };
const sig = (pollHintHz: number, staleAfterMs = 0) => ({ pollHintHz, staleAfterMs });

Deno.test("devicePollPeriodMs: whole intervals no longer than the fastest hint's period", () => {
  assert.equal(devicePollPeriodMs(500, [sig(10)], NONE), 500, "faster than the interval");
  assert.equal(devicePollPeriodMs(500, [sig(2)], NONE), 500, "exactly the interval");
  assert.equal(devicePollPeriodMs(500, [sig(0.5)], NONE), 2000);
  assert.equal(devicePollPeriodMs(500, [sig(0.3)], NONE), 3000, "3333 ms rounds down to 6 cycles");
  assert.equal(devicePollPeriodMs(500, [sig(0.2), sig(1)], NONE), 1000, "the fastest signal");
  assert.equal(devicePollPeriodMs(500, [sig(0), sig(0.1)], NONE), 10_000, "unpolled ignored");
  assert.equal(devicePollPeriodMs(500, [sig(0), sig(Number.NaN)], NONE), 500, "none polled");
  assert.equal(devicePollPeriodMs(500, [sig(Infinity)], NONE), 500);
});

Deno.test("devicePollPeriodMs: capped to half a declared stale_after_ms and the configured bounds", () => {
  assert.equal(devicePollPeriodMs(100, [sig(0.1, 600)], NONE), 300);
  assert.equal(devicePollPeriodMs(100, [sig(0.1), sig(0.05, 2000)], NONE), 1000);
  assert.equal(devicePollPeriodMs(500, [sig(0.1, 600)], NONE), 500, "never below the interval");
  assert.equal(devicePollPeriodMs(500, [sig(0.1)], { warnAfterMs: 3000, staleAfterMs: 0 }), 1500);
  assert.equal(devicePollPeriodMs(500, [sig(0.1)], { warnAfterMs: 0, staleAfterMs: 4000 }), 2000);
});

Deno.test("devicePollPeriodMs: a hint however slow polls the device at least every MAX_DEVICE_POLL_PERIOD_MS", () => {
  // The hint is the provider's double: 5e-324 Hz is a period of Infinity (polled once, never
  // again; poll_period_ms null where its schema says an integer; derived bounds never reached).
  for (const hz of [Number.MIN_VALUE, 1e-300, 1e-9]) {
    const period = devicePollPeriodMs(500, [sig(hz)], NONE);
    assert.equal(period, MAX_DEVICE_POLL_PERIOD_MS, `${hz} Hz`);
    assert.deepEqual(stalenessBounds(NONE, 500, 1, period), {
      warnAfterMs: 3 * MAX_DEVICE_POLL_PERIOD_MS,
      staleAfterMs: 8 * MAX_DEVICE_POLL_PERIOD_MS,
    });
  }
  // Whole intervals still: 700 ms does not divide an hour, the period stays on the grid.
  assert.equal(devicePollPeriodMs(700, [sig(1e-9)], NONE), 5142 * 700);
  // A hint just slower than the bound's rate is within it, and an interval past it stays.
  assert.equal(devicePollPeriodMs(500, [sig(1 / 3600)], NONE), MAX_DEVICE_POLL_PERIOD_MS);
  assert.equal(devicePollPeriodMs(7_200_000, [sig(1e-9)], NONE), 7_200_000);
});

Deno.test("stalenessBounds: a slow device's derived bounds scale with its poll period", () => {
  assert.deepEqual(stalenessBounds(NONE, 500, 1, 10_000), {
    warnAfterMs: 30_000,
    staleAfterMs: 80_000,
  });
  // A period shorter than the serialized cycle changes nothing.
  assert.deepEqual(stalenessBounds(NONE, 500, 4, 500), stalenessBounds(NONE, 500, 4));
  // Configured bounds win, as before.
  assert.deepEqual(stalenessBounds({ warnAfterMs: 1000, staleAfterMs: 2000 }, 500, 1, 10_000), {
    warnAfterMs: 1000,
    staleAfterMs: 2000,
  });
});

Deno.test("signalStaleAfterMs: a declared bound sets it, floored at two periods or the configured bound", () => {
  assert.equal(signalStaleAfterMs(0, NONE, 500, 5000), 5000, "undeclared: the device's bound");
  assert.equal(signalStaleAfterMs(800, NONE, 500, 5000), 1000, "two periods of 500 ms");
  assert.equal(signalStaleAfterMs(1500, NONE, 500, 5000), 1500, "tighter than the liveness bound");
  assert.equal(signalStaleAfterMs(30_000, NONE, 500, 5000), 30_000, "looser extends trust");
  const configured = { warnAfterMs: 0, staleAfterMs: 1000 };
  assert.equal(signalStaleAfterMs(500, configured, 500, 1000), 1000, "the operator's floor");
  assert.equal(signalStaleAfterMs(3000, configured, 500, 1000), 3000);
});
