/**
 * Bodies of POST /v0/alarms/{id}/ack | shelve | unshelve parsed into typed values. A member of
 * the wrong type is a 400 naming it; unknown members are ignored; ack and unshelve take no body
 * (an empty object, or nothing at all).
 */
import { invalidArgument } from "../common/mod.ts";
import { MAX_SHELVE_MS } from "../alarms/mod.ts";
import { isPlainObject } from "./json_body.ts";

/** POST /v0/alarms/{id}/shelve: `{duration_ms}`, an integer from 1 to MAX_SHELVE_MS (8 h). */
export function parseShelve(body: unknown): { durationMs: number } {
  if (!isPlainObject(body)) {
    throw invalidArgument("body: must be a JSON object with duration_ms");
  }
  if (!("duration_ms" in body) || body.duration_ms === null) {
    throw invalidArgument("duration_ms: missing (how long to shelve, in ms, at most 8 h)");
  }
  const d = body.duration_ms;
  if (typeof d !== "number" || !Number.isInteger(d) || d < 1 || d > MAX_SHELVE_MS) {
    throw invalidArgument(
      `duration_ms: must be an integer from 1 to ${MAX_SHELVE_MS} (8 h), got ${
        typeof d === "number" ? d : JSON.stringify(d)
      }`,
    );
  }
  return { durationMs: d };
}

/** POST /v0/alarms/{id}/ack and /unshelve: no body, or a JSON object (its members ignored). */
export function parseNoArguments(body: unknown): void {
  if (body !== undefined && body !== null && !isPlainObject(body)) {
    throw invalidArgument("body: must be empty or a JSON object");
  }
}
