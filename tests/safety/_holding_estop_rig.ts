/**
 * The rig of the in-process tests of securing runs waiting for their turn while latched
 * (estop_reload_ladder_waiting_run_test.ts, estop_device_return_flap_test.ts): the real Estop over
 * a router that holds each call until the test answers it, provider `plant` whose returns the test
 * announces (providerComingBack), and a logger that keeps its lines.
 */
import type { AuditSink, CallRouter } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop, type SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { untilTurns } from "../helpers/turns.ts";
import { providerComingBack } from "./_clock_rig.ts";

/** A router that holds each call until `answerAll`; `made` names the calls made, in order. */
export function holdingRouter() {
  const held: (() => void)[] = [];
  const made: string[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: { functionName: string }) =>
      new Promise<unknown>((
        resolve,
      ) => (made.push(req.functionName), held.push(() => resolve({})))),
  } as unknown as CallRouter;
  return { router, made, answerAll: () => held.splice(0).forEach((answer) => answer()) };
}

/**
 * The real Estop with `safeState` over a holding router and plant coming back; `reads` (default:
 * none), `audit` when given, and with `deviceReturns` the device returns the test announces by
 * `deviceReturn` (without it the Estop is given no device conditions).
 */
export function holdingEstop(o: {
  readonly safeState: SafeStateConfig;
  readonly reads?: FreshReader;
  readonly audit?: AuditSink;
  readonly deviceReturns?: boolean;
}) {
  const { router, made, answerAll } = holdingRouter();
  const { inventory, host, comeBack, takeOut, replaceHost } = providerComingBack("plant");
  const deviceReturns: ((providerId: string, deviceId: string) => void)[] = [];
  const { log, lines } = capturingLogger({ now: () => 0 });
  const estop = new Estop({
    router,
    inventory,
    reads: o.reads ?? {} as FreshReader,
    clock: systemClock,
    log,
    bus: new EventBus(),
    ...(o.audit ? { audit: o.audit } : {}),
    ...(o.deviceReturns
      ? { devices: { onDeviceReturn: (l) => (deviceReturns.push(l), () => {}) } }
      : {}),
    safeState: o.safeState,
  });
  /** Calls made so far. */
  const calls = () => made.length;
  return {
    estop,
    host,
    comeBack,
    /** A reload takes plant out (removes it): no longer listed. */
    takeOut,
    /** A reload restarts plant: another host listed under its id, not up yet (returned). */
    replaceHost,
    lines,
    made,
    calls,
    answerAll,
    /** Device `deviceId` (default plant0) of plant answers again. */
    deviceReturn: (deviceId = "plant0") => {
      for (const l of deviceReturns) l("plant", deviceId);
    },
    /** Latches with `reason`, answering the stop's ladder call (`what`), and waits for the stop. */
    latched: async (reason: string, what: string) => {
      const stop = estop.trigger(reason);
      await untilTurns(() => (answerAll(), calls() === 1), what);
      await stop;
    },
    /** plant comes back after the stop: its securing run's ladder call (`what`) is held. */
    backHeld: async (what = "the first securing run's ladder call") => {
      comeBack();
      await untilTurns(() => calls() === 2, what);
    },
  };
}
