/**
 * A reload that changes how soon a sample is stale (polling.interval_ms, health.staleness) and the
 * alarms in the same file judges the alarms once, under both (README, "Reloading the
 * configuration"): the polling and health sections apply before the alarms section, and between
 * them the alarms of the old file under the new stale bounds are no configuration's. An alarm the
 * file removes, on a sample fresh under the old bounds and stale under the new ones, raised there
 * (its action run: the e-stop latched) and was then removed by the same reload. Where the alarms
 * section is refused (AUTO), the alarms in force are judged under the new bounds at its turn. The
 * sections that may await (the behavior tree's file read, telemetry, hooks, safety) come before
 * polling and health: an evaluation of the alarm engine (a poll, its wake-up) while one awaits
 * judges the old file under the old bounds, not the old alarms under the new bounds. The runtime
 * in process over the programmable provider as a child process, on a clock the test moves forward
 * (SkippingClock) while its reads hang; the tree's file read held by the test where it says so.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel, KernelHost } from "../../src/app/kernel.ts";
import { readRegularFile, type RegularFileRead } from "../../src/host/mod.ts";
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
 * The delay of level_high (withAgedSample's `wake`): it falls due 1500 ms after probe/temp is
 * AGE_MS old, inside a skip of HOLD_SKIP_MS made then.
 */
const WAKE_DELAY_MS = AGE_MS + 1500;
/** The skip made while the tree's read is held: less than RELOAD_FILE_READ_TIMEOUT_MS (2000). */
const HOLD_SKIP_MS = 1900;

/** What withAgedSample sets up besides probe/temp and its alarm. */
interface AgedSampleOptions {
  /** The automation section (default: the test config's, disabled). */
  readonly automation?: Partial<Config["automation"]>;
  /** The host's reads of regular files (the tree's, at a reload); default: the host's own. */
  readonly readRegularFile?: KernelHost["readRegularFile"];
  /**
   * Also p0/gauge/level (90, read without hanging) under level_high (hi 80, WAKE_DELAY_MS, no
   * action): its raise falls due later, a wake-up of the alarm engine that judges every alarm.
   */
  readonly wake?: boolean;
}

/**
 * The runtime over p0 (probe/temp, guarded by an alarm without delay whose action is the e-stop),
 * its probe's reads hung and its sample AGE_MS old, given to `body`; stopped after.
 */
async function withAgedSample(
  body: (rt: Kernel, clock: SkippingClock) => Promise<void>,
  options: AgedSampleOptions = {},
): Promise<void> {
  const { automation, readRegularFile, wake = false } = options;
  const inventory: Inventory = {
    devices: {
      probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] },
      ...(wake
        ? { gauge: { signals: [{ id: "level", type: T.DOUBLE }], values: [dbl("level", 90)] } }
        : {}),
    },
  };
  const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const wakeAlarm = wake
    ? `  - { id: level_high, signal: p0/gauge/level, hi: 80, delay_ms: ${WAKE_DELAY_MS} }\n`
    : "";
  const config = testConfig({
    // A hung read fails only after this long: nothing is polled meanwhile.
    providers: [programmableProvider("p0", file, { timeoutMs: 30_000 })],
    pollingIntervalMs: SLOW_MS,
    ...(automation === undefined ? {} : { automation }),
    ...alarmsConfig(
      `
alarms:
  - { id: probe_guard, signal: p0/probe/temp, hi: 80, action: estop }
${wakeAlarm}`,
      ["p0"],
    ),
  });
  const clock = new SkippingClock();
  const rt = await startRuntime(config, {
    host: { clock, ...(readRegularFile === undefined ? {} : { readRegularFile }) },
  });
  try {
    await waitFor("temp polled", () => rt.cache.signal("p0", "probe", "temp")?.quality === "OK");
    // Two devices: each polled every other interval, its derived bound twice as long.
    assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), wake ? 32_000 : 16_000);
    await program(rt, "p0", "probe", { read: { hang: true } });
    clock.skip(AGE_MS);
    await waitFor("temp 8000 ms old", () => {
      const s = rt.cache.signal("p0", "probe", "temp");
      return s !== undefined && rt.cache.ageMs(s) > AGE_MS;
    }, 15_000);
    await body(rt, clock);
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
    }, { automation: idleAutomation(tree) });
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
    }, { automation: idleAutomation(tree) });
  } finally {
    await dir.dispose();
  }
});

/** The host's reads of regular files, those of a path holding `pathPart` held while `held`. */
class HeldReads {
  #gate: PromiseWithResolvers<void> | null = null;
  /** Reads held so far. */
  held = 0;
  constructor(readonly pathPart: string) {}
  /** Holds the reads of the path from now on, until release(). */
  hold(): void {
    this.#gate = Promise.withResolvers();
  }
  release(): void {
    this.#gate?.resolve();
    this.#gate = null;
  }
  readonly read = async (path: string, maxBytes: number): Promise<RegularFileRead> => {
    const gate = this.#gate;
    if (gate !== null && path.includes(this.pathPart)) {
      this.held++;
      await gate.promise;
    }
    return readRegularFile(path, maxBytes);
  };
}

Deno.test("Kernel.reload of a tighter staleness that removes the alarm on the sample and changes the behavior tree: a wake-up of the alarm engine while the tree's file is read judges the old alarms under the old bound", async () => {
  const dir = await TreeDir.create();
  const reads = new HeldReads("next.xml");
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const nextTree = await dir.write("next.xml", treeXml(`<Sleep msec="50000" />`));
    await withAgedSample(async (rt, clock) => {
      assert.equal(rt.alarms.alarm("level_high").state, "normal", "level_high raised too early");
      reads.hold();
      const reloading = rt.reload(withoutAlarms({
        ...rt.config,
        health: { staleness: { warnAfterMs: 0, staleAfterMs: TIGHT_STALE_MS } },
        automation: { ...rt.config.automation, behaviorTree: nextTree },
      }));
      try {
        await waitFor("the new tree's read held", () => reads.held > 0);
        // level_high's raise falls due: the alarm engine wakes and judges every alarm, probe_guard
        // too (its sample ~10 s old: fresh under the 32000 ms in force, stale under 5000 ms).
        assert.equal(rt.estop.status().latched, false);
        clock.skip(HOLD_SKIP_MS);
        await waitFor(
          "level_high raised by the wake-up",
          () => rt.alarms.alarm("level_high").state !== "normal",
        );
        assert.equal(
          rt.estop.status().latched,
          false,
          "e-stop latched, while the tree's file was read, by an alarm the reload removes",
        );
      } finally {
        reads.release();
      }
      const report = await reloading;
      assert.deepEqual(
        report.applied.toSorted(),
        ["alarms", "automation.behavior_tree", "health"],
        JSON.stringify(report),
      );
      assert.equal(rt.cache.staleAfterMs("p0", "probe", "temp"), TIGHT_STALE_MS);
      assert.equal(
        rt.estop.status().latched,
        false,
        "e-stop latched by an alarm the reload removed",
      );
      assert.equal(rt.modes.current(), "IDLE");
    }, { automation: idleAutomation(tree), readRegularFile: reads.read, wake: true });
  } finally {
    await dir.dispose();
  }
});
