import { providerTextWithin } from "../common/mod.ts";
import { PROVIDER_STATUS_MESSAGE_CHARS } from "../adpp/mod.ts";

/**
 * Text the SDK echoes into a reply or a log line (a handler's error message, a failed safe state,
 * an unmet host requirement's detail): cut to PROVIDER_STATUS_MESSAGE_CHARS, the most of a status
 * message the runtime keeps, and marked with an ellipsis when cut. Without it a message over
 * MAX_FRAME_BYTES made a reply that cannot be framed, and the provider exited (SERIALIZE).
 */
export function statusMessageText(text: string): string {
  return providerTextWithin(text, PROVIDER_STATUS_MESSAGE_CHARS);
}

/** A thrown value's message, cut as statusMessageText. */
export function errorMessageText(err: unknown): string {
  return statusMessageText(err instanceof Error ? err.message : String(err));
}
