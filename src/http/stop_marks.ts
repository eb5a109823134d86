/**
 * Commands sent before a stop are never carried out after it (docs/http-api.md, "E-stop"). A
 * request's headers may arrive before an e-stop or a FAULT entry and its body after it (a slow
 * client, a body up to BODY_READ_TIMEOUT_MS late): judged only when its body has arrived, a call
 * or an arming mode request would pass every gate once the latch was released and the machine
 * re-armed meanwhile, and act on an operator's re-armed machine for someone who asked before the
 * stop; so would a parameter a tree reads as a setpoint. The call router refuses the calls asked
 * of it before a stop whose turn comes after it (CallRouter.addStopCount); this covers the window
 * before a request reaches the router: its body's arrival.
 */
import { failedPrecondition, type RuntimeError } from "../common/mod.ts";
import type { EventBus } from "../events/mod.ts";
import type { EstopService } from "../safety/mod.ts";

/** Counts the stops (e-stop triggers, FAULT entries) since start; one per HttpApi. */
export class StopMarks {
  /** E-stop latches and FAULT entries the bus announced. */
  #announced = 0;
  readonly #estop: Pick<EstopService, "triggerCount">;
  readonly #unsubscribe: () => void;

  constructor(bus: EventBus, estop: Pick<EstopService, "triggerCount">) {
    this.#estop = estop;
    this.#unsubscribe = bus.subscribe(({ event }) => {
      if (
        (event.kind === "estop_change" && event.latched) ||
        (event.kind === "mode_change" && event.new_mode === "FAULT")
      ) {
        this.#announced++;
      }
    });
  }

  /**
   * A value that changes with every stop from now on. The e-stop's own count too: a latch whose
   * announcement failed (a clock that failed) is still a stop.
   */
  mark(): number {
    return this.#announced + (this.#estop.triggerCount ?? 0);
  }

  close(): void {
    this.#unsubscribe();
  }
}

/**
 * The refusal of `what` (`POST /v0/call`, `/v0/mode`, `/v0/parameters`), whose request arrived
 * before a stop that happened while its body arrived: 409 FAILED_PRECONDITION, audit `refused_by`
 * STOPPED_REFUSAL.
 */
export function sentBeforeStop(what: string): RuntimeError {
  return failedPrecondition(
    `${what}: the e-stop latched or the runtime entered FAULT while its body arrived; a command ` +
      "sent before a stop is not carried out after it: send it again if it is still wanted",
  );
}

/** The audit trail's `refused_by` of sentBeforeStop. */
export const STOPPED_REFUSAL = "stopped";
