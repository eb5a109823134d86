/** Status codes of the runtime's error vocabulary (HTTP mapping lives in http/ alone). */
export type StatusCode =
  | "OK"
  | "INVALID_ARGUMENT"
  | "NOT_FOUND"
  | "FAILED_PRECONDITION"
  | "RESOURCE_EXHAUSTED"
  | "UNAVAILABLE"
  | "DEADLINE_EXCEEDED"
  | "INTERNAL"
  | "UNAUTHENTICATED"
  | "PERMISSION_DENIED";

/** The one domain error: callers branch on `code`, never on message text. */
export class RuntimeError extends Error {
  readonly code: Exclude<StatusCode, "OK">;
  readonly details?: Record<string, unknown>;

  constructor(
    code: Exclude<StatusCode, "OK">,
    message: string,
    options?: { cause?: unknown; details?: Record<string, unknown> },
  ) {
    super(message, options?.cause === undefined ? undefined : { cause: options.cause });
    this.name = "RuntimeError";
    this.code = code;
    if (options?.details) this.details = options.details;
  }
}

/** Shorthand constructors keep call sites short and the codes spelled once. */
export const invalidArgument = (message: string, cause?: unknown): RuntimeError =>
  new RuntimeError("INVALID_ARGUMENT", message, { cause });
export const notFound = (message: string): RuntimeError => new RuntimeError("NOT_FOUND", message);
export const failedPrecondition = (message: string): RuntimeError =>
  new RuntimeError("FAILED_PRECONDITION", message);
/** Too soon or too many (a function's min_interval_ms); `retryAfterMs` says when to retry. */
export const resourceExhausted = (message: string, retryAfterMs: number): RuntimeError =>
  new RuntimeError("RESOURCE_EXHAUSTED", message, {
    details: { retry_after_ms: Math.max(1, Math.ceil(retryAfterMs)) },
  });
export const unavailable = (message: string, cause?: unknown): RuntimeError =>
  new RuntimeError("UNAVAILABLE", message, { cause });
export const deadlineExceeded = (message: string): RuntimeError =>
  new RuntimeError("DEADLINE_EXCEEDED", message);
export const internal = (message: string, cause?: unknown): RuntimeError =>
  new RuntimeError("INTERNAL", message, { cause });

/** The message of anything thrown: an Error's message, anything else as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** Converts anything thrown into a RuntimeError (unknown errors become INTERNAL). */
export function toRuntimeError(err: unknown): RuntimeError {
  if (err instanceof RuntimeError) return err;
  return new RuntimeError("INTERNAL", errorMessage(err), { cause: err });
}
