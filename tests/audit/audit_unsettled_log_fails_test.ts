/**
 * The lines saying the calls in flight went past AUDIT_MAX_UNSETTLED and came back within it are
 * lines only: a custom logger that throws on them loses the line, never the write-ahead record of
 * the call that went past the bound, nor the entry of the call that brought them back within it
 * (its listeners -- the run's events -- and its journal line).
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_UNSETTLED } from "../../src/audit/mod.ts";
import type { AuditIntent } from "../../src/control/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { ahead, duty, journalText, withJournaledTrail } from "./_rig.ts";

Deno.test("AuditTrail writes ahead past AUDIT_MAX_UNSETTLED and records the call back within it when those lines throw (a custom logger)", async () => {
  let thrown = 0;
  const log = () =>
    new LineLogger({
      level: "debug",
      journald: false,
      now: () => 0,
      write: (line) => {
        if (line.includes("(AUDIT_MAX_UNSETTLED)")) {
          thrown++;
          throw new Error("log sink failed");
        }
      },
    });
  await withJournaledTrail("audit_unsettled_log_", async (t, time, dir) => {
    const told: number[] = [];
    t.onEntry((entry) => told.push(entry.seq));
    const intents: { value: number; intent: AuditIntent }[] = [];
    for (let i = 0; i < AUDIT_MAX_UNSETTLED + 1; i++) {
      time.advance(1);
      const intent = await t.writeAhead(ahead(i));
      assert.ok(intent);
      intents.push({ value: i, intent });
    }
    // Before: the WARN line's throw left the write-ahead of the call past the bound unwritten.
    assert.notEqual(intents.at(-1)!.intent.id, "", "the call past the bound written ahead");
    for (const { value, intent } of intents) {
      time.advance(1);
      t.record({ ...duty(value), intent });
    }
    t.flushOpen();
    assert.equal(thrown, 2, "both lines were said (and thrown)");
    // Before: the INFO line's throw (said as the last call settled) skipped its entry.
    assert.equal(told.length, AUDIT_MAX_UNSETTLED + 1);
    await t.close();
    const text = await journalText(dir);
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
    assert.equal(typeof last.clean_close, "number", "closed clean: every call settled");
    assert.deepEqual(last.open, []);
  }, log);
});
