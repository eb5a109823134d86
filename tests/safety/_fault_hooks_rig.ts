/**
 * The rig of the tests of hooks into FAULT (tests/control/mode_fault_answer_test.ts,
 * tests/safety/estop_fault_hooks_test.ts): the plant provider slowed to `latencyMs` per actuating
 * call, an after-transition hook `* -> FAULT` making `calls`, automation on (BLOCK), safety
 * present, no polls waiting behind the slow calls, on virtual time (runUntil / runToSettle).
 */
import type { CallConfig } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { call, hook, plantProvider } from "./_fixture.ts";
import { ManualClock, runToSettle } from "../helpers/clock.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { type Rig, rig } from "../helpers/rig.ts";

export interface FaultHooksRig {
  readonly r: Rig;
  readonly rt: Kernel;
  readonly clock: ManualClock;
  /** Stops the kernel on the virtual clock. */
  stop(): Promise<void>;
}

export async function faultHooksRig(o: {
  latencyMs: number;
  timeoutMs: number;
  calls: CallConfig[];
  /** The hook's config path (default hook()'s). */
  path?: string;
}): Promise<FaultHooksRig> {
  const clock = new ManualClock();
  const r = await rig({
    providers: [plantProvider("plant", { latencyMs: o.latencyMs, timeoutMs: o.timeoutMs })],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [
          o.path === undefined
            ? hook("*", "FAULT", o.calls, false)
            : hook("*", "FAULT", o.calls, false, o.path),
        ],
      },
    },
    safety: { present: true },
    clock,
    host: { files: new MemoryFiles() },
  });
  const rt = r.kernel;
  return { r, rt, clock, stop: () => runToSettle(clock, rt.stop(), "the stop") };
}

/**
 * Hook calls that hang: each actuating call takes 60 s and each one's deadline is 30 s, so two
 * calls to the plant hang for 60 s; the third, to a provider that does not exist, fails at once.
 */
export function hangingFaultHooksRig(): Promise<FaultHooksRig> {
  const heaterOff = call("plant/plant0", "set_heater", { enabled: false });
  return faultHooksRig({
    latencyMs: 60_000,
    timeoutMs: 30_000,
    calls: [heaterOff, heaterOff, call("ghost/dev0", "stop")],
    path: "h",
  });
}
