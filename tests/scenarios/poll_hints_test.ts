/**
 * A provider's poll_hint_hz and stale_after_ms, honoured against a real provider process on the
 * provider SDK (tests/helpers/_policy_provider.ts): a device whose signals all hint slower than
 * polling.interval_ms is polled less often (counted in ReadSignals the provider received), and a
 * declared stale_after_ms sets the signal's staleness. docs/http-api.md, "Provider policies".
 */
import assert from "node:assert/strict";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { waitFor } from "../helpers/kernel.ts";
import { policyProvider, policyStats } from "../helpers/policy_provider.ts";

Deno.test("A device whose signals hint 0.5 Hz is polled every 20th cycle of a 100 ms loop", async () => {
  const fx = await startHttpFixture({
    config: { providers: [policyProvider()], pollingIntervalMs: 100 },
  });
  try {
    const rt = fx.runtime;
    assert.equal(rt.cache.pollPeriodMs("pol", "fast0"), 100, "10 Hz: every cycle");
    assert.equal(rt.cache.pollPeriodMs("pol", "slow0"), 2000, "0.5 Hz: every 20th cycle");
    assert.equal(rt.cache.pollPeriodMs("pol", "tight0"), 300, "0.1 Hz capped by stale_after 600");
    // And GET /v0/providers/health says so (schema-checked by the fixture).
    const health = await fx.request("GET", "/v0/providers/health");
    const devices = (health.json as {
      providers: { devices: { device_id: string; poll_period_ms?: number }[] }[];
    }).providers[0]!.devices;
    const period = (id: string) => devices.find((d) => d.device_id === id)?.poll_period_ms;
    assert.deepEqual([period("fast0"), period("slow0"), period("tight0")], [100, 2000, 300]);
    // The priming pass polls every device once; then fast0 once a cycle.
    const stats = await waitFor("25 polls of fast0", async () => {
      const s = await policyStats(rt);
      return s.reads_fast0! >= 25 ? s : null;
    });
    // After c >= 24 cycles: slow0 1 + floor(c / 20), tight0 1 + floor(c / 3) (a cycle may be
    // under way while the counters are read: one more or less).
    assert.ok(stats.reads_slow0! >= 2 && stats.reads_slow0! <= 3, JSON.stringify(stats));
    const c = stats.reads_fast0! - 1;
    assert.ok(Math.abs(stats.reads_tight0! - (1 + Math.floor(c / 3))) <= 1, JSON.stringify(stats));
  } finally {
    await fx.close();
  }
});

Deno.test("A declared stale_after_ms sets the signal's staleness", async () => {
  const fx = await startHttpFixture({
    config: { providers: [policyProvider()], pollingIntervalMs: 100 },
  });
  try {
    const cache = fx.runtime.cache;
    // Declared 600 with a 300 ms period: 600. Declared 10000: 10000. None declared: the device's
    // derived bound, max(8 x 100 ms x 5 devices, 5000).
    assert.equal(cache.staleAfterMs("pol", "tight0", "p"), 600);
    assert.equal(cache.staleAfterMs("pol", "slow0", "t"), 10_000);
    assert.equal(cache.staleAfterMs("pol", "fast0", "v"), 5000);
    await cache.stop(); // no more polls: every sample only ages
    const stoppedAt = performance.now();
    await waitFor(
      "tight0 STALE (its 600 ms, well before the 5000 ms of the derived bound)",
      async () => {
        const r = await fx.request("GET", "/v0/state/pol/tight0");
        return r.json.values[0].quality === "STALE";
      },
      4000,
    );
    const r = await fx.request("GET", "/v0/state/pol/fast0");
    if (performance.now() - stoppedAt < 5000) assert.equal(r.json.values[0].quality, "OK");
  } finally {
    await fx.close();
  }
});

Deno.test("A reload to a longer polling interval polls a slow device on its new period at once", async () => {
  const fx = await startHttpFixture({
    config: { providers: [policyProvider()], pollingIntervalMs: 100 },
  });
  try {
    const rt = fx.runtime;
    // Right after a poll of slow0, its next is 19 cycles of 100 ms away.
    const before = (await policyStats(rt)).reads_slow0;
    await waitFor("a poll of slow0", async () => (await policyStats(rt)).reads_slow0! > before!);
    rt.cache.setIntervalMs(1000);
    assert.equal(rt.cache.pollPeriodMs("pol", "slow0"), 2000, "2 cycles of 1000 ms");
    const polled = (await policyStats(rt)).reads_slow0;
    // Within its new period (two 1 s cycles), not the 19 cycles (19 s) left from the old one.
    await waitFor(
      "the next poll of slow0",
      async () => (await policyStats(rt)).reads_slow0! > polled!,
      8000,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("A slow device whose reads fail is polled every cycle until it answers", async () => {
  const fx = await startHttpFixture({
    config: { providers: [policyProvider()], pollingIntervalMs: 100 },
  });
  try {
    const rt = fx.runtime;
    const fail = (on: boolean) =>
      rt.router.call({
        providerId: "pol",
        deviceId: "meta0",
        functionName: "fail",
        args: { device: { type: "string", string: "slow0" }, on: { type: "bool", bool: on } },
        origin: "manual",
      });
    await fail(true);
    const before = (await policyStats(rt)).reads_slow0;
    // Down is judged on reads failing for 3 intervals (500 ms at least): with slow0 polled every
    // 20th cycle that would be one failed read; polled every cycle while failing, several.
    await waitFor("slow0 down", () => rt.outages.condition("pol", "slow0").kind === "down");
    const failed = (await policyStats(rt)).reads_slow0! - before!;
    assert.ok(failed >= 3, `${failed} failed reads when slow0 went down`);
    await fail(false);
    await waitFor("slow0 up again", () => rt.outages.condition("pol", "slow0").kind === "up");
    assert.equal(rt.cache.pollPeriodMs("pol", "slow0"), 2000);
  } finally {
    await fx.close();
  }
});
