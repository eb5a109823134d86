/**
 * More calls in flight than AUDIT_MAX_UNSETTLED leave the closing record untrusted only while
 * one of the records not kept is unsettled: once every one of them settled, a clean close writes
 * its closing record again. Entering and leaving the overflow is said (WARN, then INFO).
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_UNSETTLED, AuditTrail } from "../../src/audit/mod.ts";
import type { AuditDecision, AuditIntent } from "../../src/control/mod.ts";
import { journalFiles, LineLogger } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

function duty(value: number): AuditDecision {
  return {
    action: "call",
    origin: { kind: "automation", node: "Main" },
    outcome: "accepted",
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
    args: { duty: { type: "double", double: value } },
    result: {},
    latency_ms: 1,
  };
}

const ahead = (value: number) => {
  const { outcome: _o, result: _r, latency_ms: _l, ...call } = duty(value);
  return call;
};

Deno.test("AuditTrail writes its closing record again once the calls past AUDIT_MAX_UNSETTLED settled, with a WARN entering and an INFO leaving the overflow", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_unsettled_" });
  try {
    const time = new ManualClock();
    const lines: string[] = [];
    const log = new LineLogger({
      level: "info",
      journald: false,
      now: () => time.wall,
      write: (l) => lines.push(l),
    });
    const t = new AuditTrail({ clock: time, log, mode: () => "AUTO" });
    await t.openJournal({ dir, files: new SwitchableFiles(), maxFileBytes: 1 << 20, maxFiles: 2 });
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
    const names = (await journalFiles.listNames(dir)).sort();
    const text = (await Promise.all(names.map((n) => Deno.readTextFile(`${dir}/${n}`)))).join("");
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
    assert.equal(typeof last.clean_close, "number", "no closing record after the overflow ended");
    assert.deepEqual(last.open, []);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AuditTrail writes no closing record while a call past AUDIT_MAX_UNSETTLED is still in flight", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_unsettled_" });
  try {
    const time = new ManualClock();
    const t = new AuditTrail({
      clock: time,
      log: new LineLogger({ level: "error", journald: false, now: () => 0, write: () => {} }),
      mode: () => "AUTO",
    });
    await t.openJournal({ dir, files: new SwitchableFiles(), maxFileBytes: 1 << 20, maxFiles: 2 });
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
    const names = (await journalFiles.listNames(dir)).sort();
    const text = (await Promise.all(names.map((n) => Deno.readTextFile(`${dir}/${n}`)))).join("");
    const last = JSON.parse(text.trimEnd().split("\n").at(-1)!);
    assert.equal(last.clean_close, undefined, JSON.stringify(last));
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
