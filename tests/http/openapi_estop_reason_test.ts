/**
 * The OpenAPI document says how the runtime bounds an e-stop's reason, from the constants that
 * bound it (ESTOP_LOGGED_REASON_CHARS for the E-STOP log lines, INCIDENT_REASON_MAX_CHARS for the
 * incident record's cause), and sets no maxLength: a longer reason is taken, never refused, and
 * kept whole in the status, the event and the audit trail.
 */
import assert from "node:assert/strict";
import { INCIDENT_REASON_MAX_CHARS } from "../../src/history/mod.ts";
import { openApiDocument } from "../../src/http/openapi.ts";
import { ROUTES } from "../../src/http/mod.ts";
import { ESTOP_LOGGED_REASON_CHARS } from "../../src/safety/mod.ts";

Deno.test("the OpenAPI body of POST /v0/estop states the reason's bounds from ESTOP_LOGGED_REASON_CHARS and INCIDENT_REASON_MAX_CHARS, with no maxLength", () => {
  // deno-lint-ignore no-explicit-any
  const doc = openApiDocument(ROUTES) as any;
  const reason = doc.paths["/v0/estop"].post.requestBody.content["application/json"].schema
    .properties.reason;
  assert.equal(reason.type, "string");
  assert.equal(reason.maxLength, undefined, "a longer reason is taken, never refused");
  const text: string = reason.description;
  assert.match(text, new RegExp(`at most ${ESTOP_LOGGED_REASON_CHARS} characters`));
  assert.match(text, new RegExp(`cause at most ${INCIDENT_REASON_MAX_CHARS}\\b`));
  assert.match(text, /keep it whole/);
});
