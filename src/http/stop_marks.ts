/**
 * Commands sent before a stop are never carried out after it (docs/http-api.md, "E-stop"). A
 * request's headers may arrive before an e-stop or a FAULT entry and its body after it (a slow
 * client, a body up to BODY_READ_TIMEOUT_MS late): judged only when its body has arrived, a call
 * or an arming mode request would pass every gate once the latch was released and the machine
 * re-armed meanwhile, and act on an operator's re-armed machine for someone who asked before the
 * stop. HttpApi notes the call router's stop epoch (CallRouter.stopEpoch: e-stop triggers, FAULT
 * and IDLE entries) as a request arrives; a route refuses when it moved (`stoppedSinceArrival`). The
 * router applies the same rule to a call from its asking to its turn.
 */
import type { RuntimeError } from "../common/mod.ts";
import { STOPPED_AT_TURN, stopRefusal } from "../control/mod.ts";

/**
 * The refusal of `what` (`POST /v0/call`), whose request arrived before a stop that happened while
 * its body arrived: 409 FAILED_PRECONDITION, audit `refused_by` STOPPED_REFUSAL.
 */
export function sentBeforeStop(what: string): RuntimeError {
  return stopRefusal(what, "body");
}

/** The audit trail's `refused_by` of sentBeforeStop: the router's for the same rule. */
export const STOPPED_REFUSAL = STOPPED_AT_TURN;
