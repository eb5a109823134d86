/**
 * More calls in flight than AUDIT_MAX_UNSETTLED leave the closing record untrusted only while
 * one of the records not kept is unsettled: once every one of them settled, a clean close writes
 * its closing record again. Entering and leaving the overflow is said (WARN, then INFO).
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_UNSETTLED } from "../../src/audit/mod.ts";
import type { AuditIntent } from "../../src/control/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ahead, duty, journalText, withJournaledTrail } from "./_rig.ts";

Deno.test("AuditTrail writes its closing record again once the calls past AUDIT_MAX_UNSETTLED settled, with a WARN entering and an INFO leaving the overflow", async () => {
  const lines: string[] = [];
  const log = (time: { wall: number }) =>
    capturingLogger({ level: "info", now: () => time.wall, lines }).log;
  await withJournaledTrail("audit_unsettled_", async (t, time, dir) => {
    const intents: { value: number; intent: AuditIntent }[] = [];
    for (let i = 0; i < AUDIT_MAX_UNSETTLED + 2; i++) {
      time.advance(1);
      const intent = await t.writeAhead(ahead(i));
      assert.ok(intent);
      intents.push({ value: i, intent });
    }
    const warns = lines.filter((l) => l.startsWith("WARN") && /AUDIT_MAX_UNSETTLED/.test(l));
    assert.equal(warns.length, 1, lines.join("\n"));
    // Every call settles, the last ones (those not kept) last.
    for (const { value, intent } of intents) {
      time.advance(1);
      t.record({ ...duty(value), intent });
    }
    t.flushOpen(); // the last call's entry is written
    const infos = lines.filter((l) => l.startsWith("INFO") && /AUDIT_MAX_UNSETTLED/.test(l));
    assert.equal(infos.length, 1, lines.join("\n"));
    await t.close();
    const text = await journalText(dir);
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
    assert.equal(typeof last.clean_close, "number", "no closing record after the overflow ended");
    assert.deepEqual(last.open, []);
  }, log);
});

Deno.test("AuditTrail writes no closing record while a call past AUDIT_MAX_UNSETTLED is still in flight", async () => {
  await withJournaledTrail("audit_unsettled_", async (t, time, dir) => {
    const intents: { value: number; intent: AuditIntent }[] = [];
    for (let i = 0; i < AUDIT_MAX_UNSETTLED + 1; i++) {
      time.advance(1);
      intents.push({ value: i, intent: (await t.writeAhead(ahead(i)))! });
    }
    // All but the one not kept settle: the unsettled records fall under the bound, but the
    // closing record could not list that one.
    for (const { value, intent } of intents.slice(0, -1)) {
      time.advance(1);
      t.record({ ...duty(value), intent });
    }
    await t.close();
    const text = await journalText(dir);
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
    assert.equal(last.clean_close, undefined, JSON.stringify(last));
  });
});
