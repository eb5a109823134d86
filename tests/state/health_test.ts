import assert from "node:assert/strict";
import type { Quality } from "../../src/common/mod.ts";
import { deviceLiveness, type DeviceState, stalenessBounds } from "../../src/state/mod.ts";

Deno.test("stalenessBounds derives warn/stale from cadence when unset (spec formulas)", () => {
  // 3 x 500 x 4 = 6000 > 2000; 8 x 500 x 4 = 16000 > 5000
  assert.deepEqual(stalenessBounds({ warnAfterMs: 0, staleAfterMs: 0 }, 500, 4), {
    warnAfterMs: 6000,
    staleAfterMs: 16000,
  });
  // Floors: max(3 x 100 x 1, 2000) and max(8 x 100 x 1, 5000)
  assert.deepEqual(stalenessBounds({ warnAfterMs: 0, staleAfterMs: 0 }, 100, 1), {
    warnAfterMs: 2000,
    staleAfterMs: 5000,
  });
  // Zero devices counts as one.
  assert.deepEqual(stalenessBounds({ warnAfterMs: 0, staleAfterMs: 0 }, 1000, 0), {
    warnAfterMs: 3000,
    staleAfterMs: 8000,
  });
  // No polling interval: the 500 ms default cadence (3 x 500 x 2, 8 x 500 x 2).
  assert.deepEqual(stalenessBounds({ warnAfterMs: 0, staleAfterMs: 0 }, 0, 2), {
    warnAfterMs: 3000,
    staleAfterMs: 8000,
  });
});

Deno.test("stalenessBounds uses configured values and keeps warn <= stale", () => {
  assert.deepEqual(stalenessBounds({ warnAfterMs: 4000, staleAfterMs: 12000 }, 500, 4), {
    warnAfterMs: 4000,
    staleAfterMs: 12000,
  });
  // Only stale configured, below the derived warn: warn is clamped to stale.
  assert.deepEqual(stalenessBounds({ warnAfterMs: 0, staleAfterMs: 3000 }, 500, 4), {
    warnAfterMs: 3000,
    staleAfterMs: 3000,
  });
});

/**
 * A device last polled at `lastPollMono` (monotonic; 0: never) whose samples the runtime received
 * at `receivedAt`, stamped by the provider at `stampedAt` (wall).
 */
function device(
  lastPollMono: number,
  qualities: Quality[],
  receivedAt = lastPollMono,
  stampedAt = 1_700_000_000_000,
): DeviceState {
  const signals = new Map(
    qualities.map((
      q,
      i,
    ) => [`s${i}`, {
      value: { type: "double", double: i } as const,
      quality: q,
      timestampMs: stampedAt,
      receivedMono: receivedAt,
    }]),
  );
  return {
    providerId: "p",
    deviceId: "d",
    pollable: qualities.map((_, i) => `s${i}`),
    signals,
    lastPollMs: lastPollMono === 0 ? 0 : 1_700_000_000_000,
    lastPollMono,
    available: true,
  };
}

const B = { warnAfterMs: 2000, staleAfterMs: 5000 };
const noDeclared = () => 0;

Deno.test("deviceLiveness grades by poll age and signal quality with the contract's precedence", () => {
  const now = 100_000;
  const cases: Array<[string, DeviceState | undefined, boolean, string]> = [
    ["never polled", device(0, ["OK"]), true, "UNKNOWN"],
    ["no state", undefined, true, "UNKNOWN"],
    ["fresh", device(now - 100, ["OK", "OK"]), true, "OK"],
    ["warn age", device(now - 2000, ["OK"]), true, "WARNING"],
    ["stale age", device(now - 5000, ["OK"]), true, "STALE"],
    ["a STALE signal", device(now - 10, ["OK", "STALE"]), true, "STALE"],
    ["a FAULT signal beats STALE", device(now - 6000, ["FAULT", "STALE"]), true, "FAULT"],
    ["provider down beats everything", device(now - 10, ["FAULT"]), false, "UNAVAILABLE"],
    ["a sample received long ago", device(now - 10, ["OK"], now - 6000), true, "STALE"],
    // Ages are measured from receipt: a provider clock an hour ahead keeps nothing fresh ...
    [
      "old, stamped an hour ahead",
      device(now - 10, ["OK"], now - 6000, 1_700_003_600_000),
      true,
      "STALE",
    ],
    // ... and one an hour behind makes nothing stale.
    [
      "fresh, stamped an hour behind",
      device(now - 10, ["OK"], now - 10, 1_699_996_400_000),
      true,
      "OK",
    ],
  ];
  for (const [name, state, up, expected] of cases) {
    assert.equal(deviceLiveness(state, up, B, noDeclared, now).health, expected, name);
  }
});

Deno.test("deviceLiveness: a device with nothing to poll has no liveness, even when its provider is down", () => {
  const now = 100_000;
  const none = { ...device(now - 10, []), pollable: [] };
  for (const up of [true, false]) {
    assert.deepEqual(deviceLiveness(none, up, B, noDeclared, now), {
      health: "UNKNOWN",
      stalenessMs: 0,
      staleSignalCount: 0,
      faultSignalCount: 0,
    });
  }
});

Deno.test("deviceLiveness: a sample exactly at the stale bound is still fresh, 1 ms past it is stale", () => {
  const now = 100_000;
  const at = deviceLiveness(device(now - 10, ["OK"], now - 5000), true, B, noDeclared, now);
  assert.equal(at.health, "OK");
  assert.equal(at.staleSignalCount, 0);
  const past = deviceLiveness(device(now - 10, ["OK"], now - 5001), true, B, noDeclared, now);
  assert.equal(past.health, "STALE");
  assert.equal(past.staleSignalCount, 1);
});

Deno.test("deviceLiveness: a device never polled has staleness 0, not the age of the epoch", () => {
  const l = deviceLiveness(device(0, ["OK"]), true, B, noDeclared, 100_000);
  assert.equal(l.health, "UNKNOWN");
  assert.equal(l.stalenessMs, 0);
  // Polled at a clock that reads ahead of now (another clock's timestamp): never negative.
  assert.equal(
    deviceLiveness(device(100_050, ["OK"]), true, B, noDeclared, 100_000).stalenessMs,
    0,
  );
});

Deno.test("deviceLiveness counts fault and stale signals and honours declared stale_after_ms", () => {
  const now = 50_000;
  const l = deviceLiveness(
    device(now - 10, ["FAULT", "STALE", "UNAVAILABLE", "OK"]),
    true,
    B,
    noDeclared,
    now,
  );
  assert.equal(l.faultSignalCount, 1);
  assert.equal(l.staleSignalCount, 2);
  assert.equal(l.stalenessMs, 10);
  // A sample 6 s old is fine when the provider declared stale_after_ms 8000 for it.
  const slow = device(now - 10, ["OK"], now - 6000);
  assert.equal(deviceLiveness(slow, true, B, () => 8000, now).health, "OK");
});
