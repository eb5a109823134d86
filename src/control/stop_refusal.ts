/**
 * A command sent before a stop is never carried out after it (docs/http-api.md, "E-stop"): the
 * one wording of that refusal, for the two layers that apply the rule -- the call router to a call
 * asked before a stop whose turn came after it, and the HTTP layer to a request whose body arrived
 * after a stop its headers came before (src/http/stop_marks.ts).
 */
import { failedPrecondition, type RuntimeError } from "../common/mod.ts";

/**
 * The `refused_by` of a command refused because a stop (an e-stop trigger, a FAULT or IDLE entry)
 * happened after it was asked: a call at its turn (CallRouter.addStopCount) and, the same rule, a
 * request at its body's arrival (the HTTP layer).
 */
export const STOPPED_AT_TURN = "stopped";

/** Where a command waited when the stop came: its request's body arriving, or the call queue. */
export type StopWindow = "body" | "queue";

const WAITED: Readonly<Record<StopWindow, string>> = {
  body: "while its body arrived",
  queue: "while it was queued",
};

/**
 * The refusal of `what` (a route, `POST /v0/call`; a call, `sim0/relay0 set_relay`), asked before
 * a stop that came while it waited in `window`: FAILED_PRECONDITION, naming it and the stop.
 */
export function stopRefusal(what: string, window: StopWindow): RuntimeError {
  return failedPrecondition(
    `${what}: the e-stop latched or the runtime entered FAULT or IDLE ${WAITED[window]}; a ` +
      "command sent before a stop is not carried out after it: send it again if it is still wanted",
  );
}
