/**
 * A reload that changes how soon a sample is stale (polling.interval_ms, health.staleness) and the
 * alarms in the same file judges the alarms once, under both (README, "Reloading the
 * configuration"): the polling and health sections apply before the alarms section, and between
 * them the alarms of the old file under the new stale bounds are no configuration's. An alarm the
 * file removes, on a sample fresh under the old bounds and stale under the new ones, raised there
 * (its action run: the e-stop latched) and was then removed by the same reload. Where the alarms
 * section is refused (AUTO), the alarms in force are judged under the new bounds at its turn. The
 * runtime in process over the programmable provider as a child process, on a clock the test moves
 * forward (SkippingClock) while its reads hang.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { SkippingClock } from "../helpers/clock.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig, program } from "../scenarios/alarms_helpers.ts";
import { enterAuto, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

/** The interval at start: one device, derived stale bound 8 x 2000 = 16000 ms. */
const SLOW_MS = 2000;
/** The file's interval: derived stale bound 5000 ms. */
const FAST_MS = 100;
/** The file's configured stale bound, tighter than the derived 16000 ms. */
const TIGHT_STALE_MS = 5000;
/** A configured stale bound laxer than the file's interval's own, tighter than 16000 ms. */
const LAX_STALE_MS = 12_000;
/** How old the sample is at the reload: fresh under 16000 and 12000, stale under 5000. */
const AGE_MS = 8000;

/**
 * The runtime over p0 (probe/temp, guarded by an alarm without delay whose action is the e-stop),
 * its reads hung and its sample AGE_MS old, given to `body`; stopped after. `automation`: the
 * automation section (default: the test config's, disabled).
 */
async function withAgedSample(
  body: (rt: Kernel) => Promise<void>,
  automation?: Partial<Config["automation"]>,
): Promise<void> {
  const inventory: Inventory = {
    devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] } },
  };
  const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const config = testConfig({
    // A hung read fails only after this long: nothing is polled meanwhile.
    providers: [programmableProvider("p0", file, { timeoutMs: 30_000 })],
    pollingIntervalMs: SLOW_MS,
    ...(automation === undefined ? {} : { automation }),
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
    await body(rt);
  } finally {
    clock.skip(config.providers[0]!.timeoutMs);
    await rt.stop();
    await Deno.remove(file);
  }
}

/** Automation with `tree` (AUTO may be entered: p0 declares no function to guard). */
const idleAutomation = (tree: string): Partial<Config["automation"]> => ({
  enabled: true,
  behaviorTree: tree,
  tickRateHz: 20,
  manualGatingPolicy: "BLOCK",
  parameters: [],
});

/** `c` without its alarms. */
const withoutAlarms = (c: Config): Config => ({ ...c, alarms: [] });

Deno.test("Kernel.reload of a shorter interval that removes the alarm on the sample: the alarm is not raised under the new interval before its removal", async () => {
  await withAgedSample(async (rt) => {
    const report = await rt.reload(
      withoutAlarms({ ...rt.config, polling: { intervalMs: FAST_MS } }),
    );
    assert.deepEqual(report.applied.toSorted(), ["alarms", "polling"]);
    assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), TIGHT_STALE_MS);
    // Fresh under the old file (its alarm), and no alarm on it under the new one.
    assert.equal(rt.estop.status().latched, false, "e-stop latched by an alarm the reload removed");
    assert.equal(rt.modes.current(), "IDLE");
  });
});

Deno.test("Kernel.reload of a tighter staleness that removes the alarm on the sample: the alarm is not raised under the new bound before its removal", async () => {
  await withAgedSample(async (rt) => {
    const report = await rt.reload(withoutAlarms({
      ...rt.config,
      health: { staleness: { warnAfterMs: 0, staleAfterMs: TIGHT_STALE_MS } },
    }));
    assert.deepEqual(report.applied.toSorted(), ["alarms", "health"]);
    assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), TIGHT_STALE_MS);
    assert.equal(rt.estop.status().latched, false, "e-stop latched by an alarm the reload removed");
    assert.equal(rt.modes.current(), "IDLE");
  });
});

Deno.test("Kernel.reload in AUTO of a tighter staleness that removes the alarm on the sample: the alarms section is refused and the alarm in force is judged under the new bound", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    await withAgedSample(async (rt) => {
      await enterAuto(rt);
      const report = await rt.reload(withoutAlarms({
        ...rt.config,
        health: { staleness: { warnAfterMs: 0, staleAfterMs: TIGHT_STALE_MS } },
      }));
      assert.deepEqual(report.applied, ["health"], JSON.stringify(report));
      assert.deepEqual(report.refused.map((r) => r.section), ["alarms"]);
      // The alarm in force reads a sample stale under the bound in force: raised, its action run.
      assert.notEqual(rt.alarms.alarm("probe_guard").bad_input, null);
      assert.equal(rt.estop.status().latched, true, "the alarm in force was not judged");
    }, idleAutomation(tree));
  } finally {
    await dir.dispose();
  }
});

Deno.test("Kernel.reload in AUTO of a shorter interval with a configured staleness tighter than the bound at its start: both apply, no alarm raised under the new interval with the old staleness", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    await withAgedSample(async (rt) => {
      await enterAuto(rt);
      // 16000 ms at the start; the file's: 12000 ms (the interval's own 5000 ms in between).
      const report = await rt.reload({
        ...rt.config,
        polling: { intervalMs: FAST_MS },
        health: { staleness: { warnAfterMs: 0, staleAfterMs: LAX_STALE_MS } },
      });
      // Fresh under the bounds at the start and under the file's: never judged stale.
      assert.equal(
        rt.estop.status().latched,
        false,
        `e-stop latched in between; refused: ${JSON.stringify(report.refused)}`,
      );
      assert.equal(rt.modes.current(), "AUTO");
      // Laxer than the interval's own bound, tighter than the start's: no weakening.
      assert.deepEqual(report.refused, []);
      assert.deepEqual(report.applied.toSorted(), ["health", "polling"]);
      assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), LAX_STALE_MS);
    }, idleAutomation(tree));
  } finally {
    await dir.dispose();
  }
});
