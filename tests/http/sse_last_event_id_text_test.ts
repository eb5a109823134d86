/**
 * A `Last-Event-ID` no runtime sends is refused naming where it came from and quoting the client's
 * text cut to LAST_EVENT_ID_QUOTED_CHARS (64) with a mark: a line break or quote in it cannot end
 * or forge the message, and a long one cannot make a message of any length.
 */
import assert from "node:assert/strict";
import { parseLastEventId } from "../../src/http/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";

function refusal(text: string): string {
  try {
    parseLastEventId(text, "3f9a0c12", "Last-Event-ID");
  } catch (err) {
    assert.ok(err instanceof RuntimeError);
    assert.equal(err.code, "INVALID_ARGUMENT");
    return err.message;
  }
  throw new Error(`accepted: ${text}`);
}

Deno.test("parseLastEventId quotes a refused id cut to 64 characters with a mark", () => {
  const long = "x".repeat(500);
  const message = refusal(long);
  assert.ok(message.startsWith("Last-Event-ID: not an event id this runtime sends"));
  assert.ok(message.endsWith(`: "${"x".repeat(64)}\u2026"`), message);
  assert.equal(refusal('a"b\nc'), refusal('a"b\nc'));
  assert.ok(refusal('a"b\nc').endsWith(': "a\\"b\\nc"'));
  assert.ok(!refusal('a"b\nc').includes("\n"));
});

Deno.test("parseLastEventId reads ids of this run and others as before", () => {
  assert.deepEqual(parseLastEventId("", "3f9a0c12", "q"), { kind: "none" });
  assert.deepEqual(parseLastEventId("3f9a0c12-57", "3f9a0c12", "q"), { kind: "this_run", id: 57 });
  assert.deepEqual(parseLastEventId("0badcafe-57", "3f9a0c12", "q"), { kind: "other_run" });
  assert.deepEqual(parseLastEventId("42", "3f9a0c12", "q"), { kind: "other_run" });
});
