/**
 * An audit journal whose folder cannot be used at start (a read-only card, a file where the folder
 * should be) is failing from that start on: GET /v0/providers/health `audit.journal` and the
 * metrics say so at once, with the error, and one ERROR names it -- not "ok" until the first
 * actuating call or mode change happens to find out. Once the folder can be written, the first
 * entry is written and the journal is ok again.
 */
import assert from "node:assert/strict";
import { AuditTrail } from "../../src/audit/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

Deno.test("AuditTrail whose journal folder cannot be opened at start reports the journal failing at once, and writes once it can", async () => {
  const tmp = await Deno.makeTempDir({ prefix: "audit_open_fails_" });
  try {
    // A file where the journal's folder should be: the folder can be neither made nor written.
    await Deno.writeTextFile(`${tmp}/audit`, "not a folder\n");
    const { log, lines } = capturingLogger({ level: "warn" });
    const t = new AuditTrail({ clock: new ManualClock(), log, mode: () => "IDLE" });
    await t.openJournal({
      dir: `${tmp}/audit`,
      files: journalFiles,
      maxFileBytes: 1 << 20,
      maxFiles: 2,
    });
    const s = t.status();
    assert.equal(s.journal, "failing", "failing from the start, before any entry");
    assert.equal(s.write_errors_total, 1);
    assert.match(s.last_error ?? "", new RegExp(`${tmp}/audit`));
    const errors = lines.filter((l) => l.startsWith("ERROR") && l.includes("audit journal write"));
    assert.equal(errors.length, 1, lines.join("\n"));

    // The folder can be made again: the next entry is written, the journal ok.
    await Deno.remove(`${tmp}/audit`);
    t.record({ action: "estop", origin: { kind: "http" }, outcome: "accepted" });
    const page = await t.query({ limit: 10 });
    assert.deepEqual(page.entries.map((e) => e.action), ["estop"]);
    assert.equal(t.status().journal, "ok");
    assert.equal(t.status().write_errors_total, 1);
    await t.close();
  } finally {
    await Deno.remove(tmp, { recursive: true });
  }
});
