/**
 * A reload that changes polling.interval_ms and health.staleness together judges the alarms once,
 * under both (README, "Reloading the configuration"): the polling section applies before the
 * health section, and between them the new interval under the old staleness is no
 * configuration's. A shorter interval shrinks the derived stale bound; the file's configured one
 * is laxer: a sample fresh before and after the reload was judged stale in between, and an alarm
 * without delay raised on it (its action run: the e-stop latched). The runtime in process over
 * the programmable provider as a child process, on a clock the test moves forward (SkippingClock)
 * while its reads hang.
 */
import assert from "node:assert/strict";
import { SkippingClock } from "../helpers/clock.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig, program } from "../scenarios/alarms_helpers.ts";

/** The interval at start: one device, derived stale bound 8 x 2000 = 16000 ms. */
const SLOW_MS = 2000;
/** The file's interval (derived stale bound: 5000 ms) and its configured stale bound. */
const FAST_MS = 100;
const CONFIGURED_STALE_MS = 12_000;
/** How old the sample is at the reload: fresh under 16000 and 12000, stale under 5000. */
const AGE_MS = 8000;

Deno.test("Kernel.reload of a shorter interval with a configured staleness judges an input by both: no alarm raised under the new interval with the old staleness", async () => {
  const inventory: Inventory = {
    devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] } },
  };
  const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const config = testConfig({
    // A hung read fails only after this long: nothing is polled meanwhile.
    providers: [programmableProvider("p0", file, { timeoutMs: 30_000 })],
    pollingIntervalMs: SLOW_MS,
    ...alarmsConfig(
      `
alarms:
  - { id: probe_guard, signal: p0/probe/temp, hi: 80, action: estop }
`,
      ["p0"],
    ),
  });
  const clock = new SkippingClock();
  const rt = await startRuntime(config, { host: { clock } });
  try {
    await waitFor("temp polled", () => rt.cache.signal("p0", "probe", "temp")?.quality === "OK");
    assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), 16_000);
    await program(rt, "p0", "probe", { read: { hang: true } });
    clock.skip(AGE_MS);
    await waitFor("temp 8000 ms old", () => {
      const s = rt.cache.signal("p0", "probe", "temp");
      return s !== undefined && rt.cache.ageMs(s) > AGE_MS;
    }, 15_000);
    const report = await rt.reload({
      ...rt.config,
      polling: { intervalMs: FAST_MS },
      health: { staleness: { warnAfterMs: 0, staleAfterMs: CONFIGURED_STALE_MS } },
    });
    assert.deepEqual(report.applied.toSorted(), ["health", "polling"]);
    assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), CONFIGURED_STALE_MS);
    assert.equal(rt.alarms.alarm("probe_guard").bad_input, null, "fresh under the file's bound");
    assert.equal(rt.alarms.alarm("probe_guard").state, "normal");
    // Its action never ran: the sample was fresh under every configuration in force.
    assert.equal(rt.estop.status().latched, false, "no e-stop at the reload");
  } finally {
    clock.skip(config.providers[0]!.timeoutMs);
    await rt.stop();
    await Deno.remove(file);
  }
});
