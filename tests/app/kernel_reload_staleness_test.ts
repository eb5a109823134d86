/**
 * A reload that changes only `health` (or `polling`) re-evaluates the alarms and interlocks at
 * once (README, "Reloading the configuration": their staleness depends on them): an input whose
 * sample is older than the new, shorter bound is bad from the reload on, not from the instant the
 * old bound would have run out or the next poll -- which may be far off when the provider's reads
 * hang (the poll waits out its timeout_ms). The runtime in process over the programmable provider
 * as a child process, on a clock the test moves forward (SkippingClock) where it waits for time to
 * pass with the reads hung.
 */
import assert from "node:assert/strict";
import { SkippingClock } from "../helpers/clock.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig, program } from "../scenarios/alarms_helpers.ts";

/** health.staleness.stale_after_ms before and after the reload. */
const LAX_MS = 30_000;
const TIGHT_MS = 1000;

Deno.test("Kernel.reload of a shorter health.staleness raises at once an alarm whose input is older than the new bound while the provider's reads hang", async () => {
  const inventory: Inventory = {
    devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] } },
  };
  const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const config = testConfig({
    // A hung read fails only after this long: nothing is polled meanwhile.
    providers: [programmableProvider("p0", file, { timeoutMs: 6000 })],
    pollingIntervalMs: 100,
    health: { staleness: { warnAfterMs: 0, staleAfterMs: LAX_MS } },
    ...alarmsConfig(
      `
alarms:
  - { id: probe_hot, signal: p0/probe/temp, hi: 80 }
`,
      ["p0"],
    ),
  });
  const clock = new SkippingClock();
  const rt = await startRuntime(config, { host: { clock } });
  try {
    const state = () => rt.alarms.alarm("probe_hot").state;
    await waitFor("temp polled", () => rt.cache.signal("p0", "probe", "temp")?.quality === "OK");
    assert.equal(state(), "normal");
    // The provider's reads hang from now on.
    await program(rt, "p0", "probe", { read: { hang: true } });
    clock.skip(TIGHT_MS + 500);
    await waitFor("temp older than the tighter bound", () => {
      const s = rt.cache.signal("p0", "probe", "temp");
      return s !== undefined && rt.cache.ageMs(s) > TIGHT_MS + 500;
    });
    assert.equal(state(), "normal", "within the lax bound");

    const report = await rt.reload({
      ...rt.config,
      health: { ...rt.config.health, staleness: { warnAfterMs: 0, staleAfterMs: TIGHT_MS } },
    });
    assert.deepEqual(report.applied, ["health"]);
    assert.equal(state(), "active", "raised by the reload: its input is stale under the new bound");
    assert.equal(rt.alarms.alarm("probe_hot").cause, "bad_quality");
  } finally {
    // The stop waits out the hung read (its timeout_ms, seen here): let that run out now.
    clock.skip(config.providers[0]!.timeoutMs);
    await rt.stop();
    await Deno.remove(file);
  }
});

Deno.test("Kernel.reload of a shorter health.staleness runs a delayed e-stop alarm's delay from the reload: the sample was usable until then", async () => {
  const inventory: Inventory = {
    devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] } },
  };
  const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const config = testConfig({
    providers: [programmableProvider("p0", file, { timeoutMs: 20_000 })],
    pollingIntervalMs: 100,
    health: { staleness: { warnAfterMs: 0, staleAfterMs: LAX_MS } },
    ...alarmsConfig(
      `
alarms:
  - { id: probe_guard, signal: p0/probe/temp, hi: 80, delay_ms: 5000, action: estop }
`,
      ["p0"],
    ),
  });
  const clock = new SkippingClock();
  const rt = await startRuntime(config, { host: { clock } });
  try {
    const state = () => rt.alarms.alarm("probe_guard").state;
    await waitFor("temp polled", () => rt.cache.signal("p0", "probe", "temp")?.quality === "OK");
    // The provider's reads hang from now on: the sample ages, fresh under the lax bound.
    await program(rt, "p0", "probe", { read: { hang: true } });
    clock.skip(TIGHT_MS + 5000);
    await waitFor("temp 6000 ms old", () => {
      const s = rt.cache.signal("p0", "probe", "temp");
      return s !== undefined && rt.cache.ageMs(s) > TIGHT_MS + 5000;
    }, 15_000);
    assert.equal(rt.alarms.alarm("probe_guard").bad_input, null, "usable under the lax bound");

    const report = await rt.reload({
      ...rt.config,
      health: { ...rt.config.health, staleness: { warnAfterMs: 0, staleAfterMs: TIGHT_MS } },
    });
    assert.deepEqual(report.applied, ["health"]);
    // Bad from the reload on: its 5000 ms delay runs from there, not from 5000 ms before the
    // reload (when the sample would have gone stale had the new bound been in force).
    assert.match(rt.alarms.alarm("probe_guard").bad_input ?? "", /is stale/);
    assert.equal(state(), "normal", "the delay has not run yet");
    assert.equal(rt.estop.status().latched, false, "no e-stop at the reload");
    // Still unanswered 5000 ms later: raised, its e-stop latched.
    clock.skip(5000);
    await waitFor("raised after its delay", () => state() === "active", 15_000);
    assert.equal(rt.estop.status().cause, "alarm:probe_guard");
  } finally {
    // The stop waits out the hung read (its timeout_ms, seen here): let that run out now.
    clock.skip(config.providers[0]!.timeoutMs);
    await rt.stop();
    await Deno.remove(file);
  }
});
