/**
 * A reload to a shorter polling.interval_ms can poll a device less often: its poll period is a
 * whole number of intervals no longer than its poll hints allow (state/staleness.ts
 * devicePollPeriodMs), so sim0/motorctl0 (5 Hz hints: at most 200 ms) is polled every 110 ms at
 * 110 ms and every 200 ms at 100 ms. Its alarms and interlocks then see each change later, the
 * weakening the run gate refuses in AUTO for a longer interval (app/run_gate.ts, `polling`): the
 * gate judged the interval's number alone and let it through. So may a laxer health.staleness
 * whose stale bounds do not grow (half a configured bound caps a poll period): the gate judged
 * the stale bounds alone. The runtime in process over the simulated provider.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { summarize } from "../../src/app/reloader.ts";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { automationConfig, enterAuto, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** The interval at start, and a shorter one under which sim0/motorctl0 is polled less often. */
const START_MS = 110;
const SHORTER_MS = 100;

async function withKernel(fn: (rt: Kernel, base: Config) => Promise<void>): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const rt = await startRuntime(
      automationConfig(tree, { config: { pollingIntervalMs: START_MS } }),
    );
    try {
      await fn(rt, rt.config);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

Deno.test("Kernel.reload in AUTO refuses a shorter polling interval under which a device is polled less often; outside AUTO it applies, recorded", async () => {
  await withKernel(async (rt, base) => {
    assert.equal(rt.cache.pollPeriodMs("sim0", "motorctl0"), START_MS);
    await enterAuto(rt);
    const shorter: Config = { ...base, polling: { intervalMs: SHORTER_MS } };
    const inAuto = await rt.reload(shorter);
    assert.deepEqual(inAuto.refused.map((r) => r.section), ["polling"], summarize(inAuto));
    assert.match(
      inAuto.refused[0]!.why,
      /polling\.interval_ms 110 -> 100 ms: devices polled less often: "sim0\/motorctl0" every 110 -> 200 ms/,
    );
    assert.equal(rt.cache.intervalMs, START_MS, "the interval in force stays");
    assert.equal(rt.config.polling.intervalMs, START_MS);
    assert.equal(rt.cache.pollPeriodMs("sim0", "motorctl0"), START_MS);

    // A shorter interval that polls no device less often applies in AUTO, nothing weakened.
    const faster = await rt.reload({ ...base, polling: { intervalMs: 105 } });
    assert.deepEqual([faster.refused, faster.weakened], [[], []], summarize(faster));
    assert.equal(rt.cache.pollPeriodMs("sim0", "motorctl0"), 105);

    await rt.modes.request("MANUAL");
    const manual = await rt.reload(shorter);
    assert.deepEqual(manual.refused, []);
    assert.deepEqual(manual.weakened.map((w) => w.section), ["polling"]);
    assert.match(summarize(manual), /weakened \(polling\): polling\.interval_ms 105 -> 100 ms/);
    assert.equal(rt.cache.pollPeriodMs("sim0", "motorctl0"), 200);
  });
});

Deno.test("Kernel.reload in AUTO refuses a health.staleness under which a device is polled less often, though no sample is found stale later", async () => {
  await withKernel(async (rt, base) => {
    // Half the configured warn bound caps every device's poll period: 150 ms, one interval.
    const tight: Config = {
      ...base,
      polling: { intervalMs: SHORTER_MS },
      health: { staleness: { warnAfterMs: 300, staleAfterMs: 5000 } },
    };
    assert.deepEqual((await rt.reload(tight)).refused, []);
    assert.equal(rt.cache.pollPeriodMs("sim0", "relayio0"), SHORTER_MS);
    await enterAuto(rt);
    // warn_after_ms derived (2000 here): the 1 Hz relay card would be polled every 1000 ms; every
    // stale bound stays 5000 ms (configured), so none is found stale later.
    const lax: Config = { ...tight, health: { staleness: { warnAfterMs: 0, staleAfterMs: 5000 } } };
    const inAuto = await rt.reload(lax);
    assert.deepEqual(inAuto.refused.map((r) => r.section), ["health"], summarize(inAuto));
    assert.match(
      inAuto.refused[0]!.why,
      /health\.staleness: devices polled less often: .*"sim0\/relayio0" every 100 -> 1000 ms/,
    );
    assert.equal(rt.cache.pollPeriodMs("sim0", "relayio0"), SHORTER_MS);
    assert.deepEqual(rt.cache.staleness, tight.health.staleness);
  });
});

Deno.test("Kernel.reload in AUTO judges a health.staleness that polls a device less often against the poll periods at the reload's start, not those its polling section left in between", async () => {
  await withKernel(async (rt, base) => {
    // At the start: half warn_after_ms (150 ms) is below the interval, so every device is polled
    // every interval (500 ms); the file is warned about (warn_after_ms not above the interval).
    const start: Config = {
      ...base,
      polling: { intervalMs: 500 },
      health: { staleness: { warnAfterMs: 300, staleAfterMs: 5000 } },
    };
    assert.deepEqual((await rt.reload(start)).refused, []);
    assert.equal(rt.cache.pollPeriodMs("sim0", "relayio0"), 500);
    await enterAuto(rt);
    // The file: 100 ms and warn_after_ms 1000: the 1 Hz relay card is polled every 500 ms, as at
    // the start. Between the two sections (100 ms under warn_after_ms 300) it is every 100 ms:
    // the health section, judged against that, would call every 500 ms slower and be refused,
    // leaving 100 ms under warn_after_ms 300 in force, a state neither file describes.
    const next: Config = {
      ...start,
      polling: { intervalMs: SHORTER_MS },
      health: { staleness: { warnAfterMs: 1000, staleAfterMs: 5000 } },
    };
    const inAuto = await rt.reload(next);
    assert.deepEqual([inAuto.refused, inAuto.weakened], [[], []], summarize(inAuto));
    assert.deepEqual(inAuto.applied.toSorted(), ["health", "polling"]);
    assert.equal(rt.cache.pollPeriodMs("sim0", "relayio0"), 500);
    assert.deepEqual(rt.cache.staleness, next.health.staleness);

    // One that polls it less often than at the start is refused, the start's period named.
    await rt.modes.request("MANUAL");
    assert.deepEqual((await rt.reload(start)).refused, []);
    await enterAuto(rt);
    const slower: Config = {
      ...next,
      health: { staleness: { warnAfterMs: 1400, staleAfterMs: 5000 } },
    };
    const refused = await rt.reload(slower);
    assert.deepEqual(refused.refused.map((r) => r.section), ["health"], summarize(refused));
    assert.match(
      refused.refused[0]!.why,
      /health\.staleness: devices polled less often: .*"sim0\/relayio0" every 500 -> 700 ms/,
    );
  });
});
