/**
 * The rig of the tests where a stop is held while providers come back: `plant` and "slow" (the
 * in-process plant provider, slow's actuating calls answering only when the test resolves `held`),
 * the ladder setting slow's heater off first (a stop waits for the test), then plant's.
 */
import type { ProviderConfig, SafeStateExpectation } from "../../src/config/mod.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { PLANT_MAIN, plantProgram, TEST_PROGRAMS } from "../helpers/programs.ts";
import { call, plantProvider } from "./_fixture.ts";

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
