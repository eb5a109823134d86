/**
 * A configured health.staleness.stale_after_ms with warn_after_ms 0 leaves a device no WARNING
 * stage when the warn bound derived from its poll cycle, max(3 x cycle, 2000), reaches it
 * (docs/http-api.md, the device `health` table). The configuration check says so of the least
 * cycle, max(3 x polling.interval_ms, 2000); a device whose poll hints slow its polls (or whose
 * provider lists many devices) derives a larger bound, known only at inventory: the state cache
 * says it then, one WARN line per device naming both bounds, once (not per poll, not again at a
 * rediscovery with the same figures), at most NO_WARNING_STAGE_LOG_DEVICES named per provider.
 * The programmable provider in-process.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { type Inventory, startProgrammable, T } from "../helpers/programmable_provider.ts";
import { NO_WARNING_STAGE_LOG_DEVICES } from "../../src/state/state_cache.ts";

/** One signal hinting 0.1 Hz (a 10 s period, capped at half the stale bound). */
const SLOW = { signals: [{ id: "x", type: T.DOUBLE, hint: 0.1 }] };
/** One signal at the default hint (20 Hz: polled every interval). */
const FAST = { signals: [{ id: "x", type: T.DOUBLE }] };

const noStageLines = (lines: readonly string[]) =>
  lines.filter((l) => l.includes("no WARNING stage"));

Deno.test("StateCache warns once per device whose slow poll hints leave it no WARNING stage under a stale_after_ms the configuration check passes", async () => {
  // interval 500 ms: the least derived warn bound is max(1500, 2000) = 2000 < 10000, so the file
  // check says nothing. slow: period min(10 s, 10000 / 2) = 5000 ms, cycle 5000 ms, derived warn
  // 15000 >= 10000: no WARNING stage. fast: cycle 2 x 500 = 1000 ms, warn 3000: it keeps one.
  const inventory: Inventory = { devices: { slow: SLOW, fast: FAST } };
  const fx = await startProgrammable(inventory, {
    inProcess: true,
    intervalMs: 500,
    staleness: { warnAfterMs: 0, staleAfterMs: 10_000 },
    restart: { backoffMs: [0, 0, 0] },
  });
  try {
    const lines = () => noStageLines(fx.lines);
    assert.equal(lines().length, 1, lines().join("\n"));
    const line = lines()[0]!;
    assert.match(line, /^WARN\b/, "level first");
    assert.ok(line.includes('"p0/slow" has no WARNING stage'), line);
    assert.ok(line.includes("stale_after_ms is 10000"), line);
    assert.ok(line.includes("= 15000 ms"), line);
    assert.ok(line.includes("its cycle is 5000 ms"), line);
    // A warn bound below its cycle would read WARNING between two polls: above it, below stale.
    assert.ok(
      line.endsWith("warn_after_ms above its cycle (5000 ms) and below 10000 to keep one"),
      line,
    );
    assert.deepEqual(fx.cache.livenessBounds("p0", "slow"), {
      warnAfterMs: 10_000,
      staleAfterMs: 10_000,
    });
    assert.deepEqual(fx.cache.livenessBounds("p0", "fast"), {
      warnAfterMs: 3_000,
      staleAfterMs: 10_000,
    });

    // Polls say nothing more; nor does a rediscovery with the same figures.
    await fx.cache.pollDevice("p0", "slow");
    await fx.cache.pollDevice("p0", "slow");
    const pid = fx.kill();
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    assert.equal(lines().length, 1, lines().join("\n"));

    // A reload to the same bound says nothing; one that changes the figures says them, once it
    // has applied (the kernel tells the cache at its end: Kernel.reload).
    const reload = (staleness: { warnAfterMs: number; staleAfterMs: number }) => {
      fx.cache.setStaleness(staleness);
      fx.cache.tellNoWarningStage();
    };
    reload({ warnAfterMs: 0, staleAfterMs: 10_000 });
    assert.equal(lines().length, 1, lines().join("\n"));
    // period min(10 s, 20000 / 2) = 10000 ms, derived warn 30000 >= 20000.
    reload({ warnAfterMs: 0, staleAfterMs: 20_000 });
    assert.equal(lines().length, 2, lines().join("\n"));
    assert.ok(lines()[1]!.includes("stale_after_ms is 20000"), lines()[1]);
    assert.ok(lines()[1]!.includes("= 30000 ms"), lines()[1]);
    // 40000: period 10 s, warn 30000 < 40000 -- it has a stage again; back to 20000 says it again.
    reload({ warnAfterMs: 0, staleAfterMs: 40_000 });
    assert.equal(lines().length, 2, lines().join("\n"));
    reload({ warnAfterMs: 0, staleAfterMs: 20_000 });
    assert.equal(lines().length, 3, lines().join("\n"));
    // A configured warn bound, or none configured at all: nothing to say.
    reload({ warnAfterMs: 5_000, staleAfterMs: 20_000 });
    reload({ warnAfterMs: 0, staleAfterMs: 0 });
    assert.equal(lines().length, 3, lines().join("\n"));
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache leaves a no-WARNING-stage stale_after_ms the configuration check warns about to it", async () => {
  // 2000 <= max(3 x 500, 2000): config/_semantic.ts warns of every device at load.
  const fx = await startProgrammable({ devices: { slow: SLOW } }, {
    inProcess: true,
    intervalMs: 500,
    staleness: { warnAfterMs: 0, staleAfterMs: 2_000 },
  });
  try {
    assert.deepEqual(fx.cache.livenessBounds("p0", "slow"), {
      warnAfterMs: 2_000,
      staleAfterMs: 2_000,
    });
    assert.deepEqual(noStageLines(fx.lines), []);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache names at most NO_WARNING_STAGE_LOG_DEVICES devices with no WARNING stage per provider and counts the rest in one line", async () => {
  const count = NO_WARNING_STAGE_LOG_DEVICES + 2;
  const devices = Object.fromEntries(
    Array.from({ length: count }, (_, i) => [`slow${i}`, SLOW]),
  );
  const fx = await startProgrammable({ devices }, {
    inProcess: true,
    intervalMs: 500,
    staleness: { warnAfterMs: 0, staleAfterMs: 10_000 },
  });
  try {
    const lines = noStageLines(fx.lines);
    assert.equal(lines.length, NO_WARNING_STAGE_LOG_DEVICES + 1, lines.join("\n"));
    for (let i = 0; i < NO_WARNING_STAGE_LOG_DEVICES; i++) {
      assert.ok(lines[i]!.includes(`"p0/slow${i}" has no WARNING stage`), lines[i]);
    }
    assert.match(lines.at(-1)!, /^WARN\b.*2 more device\(s\) of provider p0 have no WARNING stage/);
  } finally {
    await fx.close();
  }
});

Deno.test("StateCache says no WARNING stage only of a device it polls: one with no polled signal has no liveness stages at all", async () => {
  // interval 500, stale 3000 (above the least derived warn bound, 2000: the file check passes);
  // two devices: cycle 1000 ms, derived warn 3000 >= 3000. "idle" declares no polled signal
  // (poll_hint_hz 0): never polled, its health is UNKNOWN, never OK, WARNING or STALE.
  const inventory: Inventory = {
    devices: { fast: FAST, idle: { signals: [{ id: "x", type: T.DOUBLE, hint: 0 }] } },
  };
  const fx = await startProgrammable(inventory, {
    inProcess: true,
    intervalMs: 500,
    staleness: { warnAfterMs: 0, staleAfterMs: 3_000 },
  });
  try {
    const lines = noStageLines(fx.lines);
    assert.equal(lines.length, 1, lines.join("\n"));
    assert.ok(lines[0]!.includes('"p0/fast" has no WARNING stage'), lines[0]);
  } finally {
    await fx.close();
  }
});
