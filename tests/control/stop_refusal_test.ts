import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { STOPPED_AT_TURN, stopRefusal } from "../../src/control/mod.ts";
import { sentBeforeStop, STOPPED_REFUSAL } from "../../src/http/stop_marks.ts";

const RULE = "a command sent before a stop is not carried out after it: send it again if it is " +
  "still wanted";

Deno.test("stopRefusal words a call queued across a stop as the router refuses it", () => {
  const err = stopRefusal("sim0/relay0 set_relay", "queue");
  assert.ok(err instanceof RuntimeError);
  assert.equal(err.code, "FAILED_PRECONDITION");
  assert.equal(
    err.message,
    "sim0/relay0 set_relay: the e-stop latched or the runtime entered FAULT or IDLE while it was queued; " +
      RULE,
  );
});

Deno.test("sentBeforeStop (http) is stopRefusal of a body that arrived across a stop", () => {
  const err = sentBeforeStop("POST /v0/call");
  assert.equal(err.code, "FAILED_PRECONDITION");
  assert.equal(
    err.message,
    "POST /v0/call: the e-stop latched or the runtime entered FAULT or IDLE while its body arrived; " +
      RULE,
  );
  assert.equal(STOPPED_REFUSAL, STOPPED_AT_TURN);
  assert.equal(STOPPED_AT_TURN, "stopped");
});
