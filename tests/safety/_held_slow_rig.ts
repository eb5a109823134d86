/**
 * The rig of the tests where a stop is held while providers come back: `plant` and "slow" (the
 * in-process plant provider, slow's actuating calls answering only when the test resolves `held`),
 * the ladder setting slow's heater off first (a stop waits for the test), then plant's.
 */
import assert from "node:assert/strict";
import type { ProviderConfig, SafeStateExpectation } from "../../src/config/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { PLANT_MAIN, plantProgram, TEST_PROGRAMS } from "../helpers/programs.ts";
import { call, expectation, plantProvider } from "./_fixture.ts";

/** The latency that marks slow's actuating calls: they answer when the test lets them go. */
const HELD_MS = 59_000;

/** The rig with `plant`'s entry and `expect`, and the promise that lets slow's calls answer. */
export async function heldSlowRig(
  plant: ProviderConfig,
  expect: SafeStateExpectation[],
): Promise<{ r: Rig; held: PromiseWithResolvers<void> }> {
  const held = Promise.withResolvers<void>();
  const r = await rig({
    programs: {
      ...TEST_PROGRAMS,
      [PLANT_MAIN]: (host) =>
        plantProgram({ ...host, sleep: (ms) => ms === HELD_MS ? held.promise : host.sleep(ms) }),
    },
    providers: [plant, plantProvider("slow", { latencyMs: HELD_MS, timeoutMs: 120_000 })],
    safety: {
      expect,
      verifyTimeoutMs: 300,
      hooks: [
        call("slow/plant0", "set_heater", { enabled: false }),
        call("plant/plant0", "set_heater", { enabled: false }),
      ],
      zeroIsSafe: false,
    },
    pollingIntervalMs: 100,
  });
  return { r, held };
}

/** The expectation the reload tests begin with: plant's heater off. */
export const HEATER_OFF = expectation("plant/plant0/heater_on", { equals: false }, 0);

/**
 * Latches ("first latch": its stop is held by slow's ladder call), starts the reload that restarts
 * `plant` (another timeout) and expects its fan at 0 too, and waits until plant, back under that
 * latch, is secured; the stop and the reload's report, both still pending (wrapped, so that
 * awaiting the helper awaits neither).
 */
export async function latchThenReloadRestartingPlant(
  r: Rig,
  plant: ProviderConfig,
): Promise<{
  first: ReturnType<Rig["kernel"]["estop"]["trigger"]>;
  report: ReturnType<Rig["kernel"]["reload"]>;
}> {
  const rt = r.kernel;
  const first = rt.estop.trigger("first latch");
  const safeState = rt.config.safety.safeState;
  const report = rt.reload({
    ...rt.config,
    providers: [{ ...plant, timeoutMs: plant.timeoutMs + 1000 }, rt.config.providers[1]!],
    safety: {
      ...rt.config.safety,
      safeState: {
        ...safeState,
        expect: [...safeState.expect, expectation("plant/plant0/fan_duty", { equals: 0 }, 1)],
      },
    },
  });
  await waitFor(
    "plant secured under the first latch",
    () => r.lines.some((l) => l.includes("e-stop latched: provider plant ")),
    20_000,
  );
  return { first, report };
}

/** Asserts the reload restarted plant, applied its safety section, and status checks both. */
export async function assertReloadReadBackInForce(
  r: Rig,
  report: ReturnType<Rig["kernel"]["reload"]>,
): Promise<void> {
  const rt = r.kernel;
  const done = await report;
  assert.deepEqual(done.providers.restarted, ["plant"]);
  assert.ok(done.applied.includes("safety"), JSON.stringify(done));
  assert.equal(rt.estop.status().latched, true);
  const verification = rt.estop.status().verification!;
  assert.deepEqual(
    verification.checks.map((c) => [c.signal, c.outcome]),
    [["plant/plant0/heater_on", "verified"], ["plant/plant0/fan_duty", "verified"]],
    "status shows checks of the expectations in force once the reload has answered",
  );
}
