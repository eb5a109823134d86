/**
 * The JSON envelope and the one place that maps status codes to HTTP statuses (docs/http-api.md,
 * "Conventions").
 * Bodies are written by toJsonText: exact 64-bit integers (bigint) as their decimal digits.
 */
import { errorMessage, RuntimeError, type StatusCode, toJsonText } from "../common/mod.ts";

/** Status code -> HTTP status. Nothing else in the runtime knows HTTP numbers. */
export const HTTP_STATUS_OF: Readonly<Record<StatusCode, number>> = {
  OK: 200,
  INVALID_ARGUMENT: 400,
  UNAUTHENTICATED: 401,
  PERMISSION_DENIED: 403,
  NOT_FOUND: 404,
  FAILED_PRECONDITION: 409,
  RESOURCE_EXHAUSTED: 429,
  INTERNAL: 500,
  UNAVAILABLE: 503,
  DEADLINE_EXCEEDED: 504,
};

/** The success status object. */
export const OK_STATUS = { code: "OK", message: "ok" } as const;

const JSON_HEADERS = { "content-type": "application/json" };

/** A 200 response: `{status: OK, ...body}`. */
export function okResponse(body: object = {}): Response {
  return new Response(toJsonText({ status: OK_STATUS, ...body }), {
    status: 200,
    headers: JSON_HEADERS,
  });
}

/** An error response: exactly `{status: {code, message}}` (plus `extra` members, e.g. for 401). */
export function errorResponse(
  code: Exclude<StatusCode, "OK">,
  message: string,
  extra: object = {},
  headers: Record<string, string> = {},
): Response {
  return new Response(toJsonText({ status: { code, message }, ...extra }), {
    status: HTTP_STATUS_OF[code],
    headers: { ...JSON_HEADERS, ...headers },
  });
}

/** Any thrown value as an error response; non-RuntimeErrors become 500 INTERNAL with their text. */
export function responseForError(err: unknown): Response {
  if (err instanceof RuntimeError) {
    // A 429 says when to come back (a function's min_interval_ms): Retry-After, whole seconds.
    const retryMs = err.details?.retry_after_ms;
    const headers: Record<string, string> = err.code === "RESOURCE_EXHAUSTED" &&
        typeof retryMs === "number"
      ? { "retry-after": String(Math.max(1, Math.ceil(retryMs / 1000))) }
      : {};
    return errorResponse(err.code, err.message, {}, headers);
  }
  const message = errorMessage(err);
  return errorResponse("INTERNAL", message || "internal error");
}
