/**
 * A journal that failed and was written again (its lost entries recorded by a `gap` entry) gets
 * its checkpoints and its closing record back: one failed write withheld them for the life of the
 * process, so every later start searched the journal's tail. Entering and leaving is said (WARN,
 * then INFO), as for AUDIT_MAX_UNSETTLED (tests/audit/audit_unsettled_test.ts).
 */
import assert from "node:assert/strict";
import { AUDIT_CHECKPOINT_BYTES } from "../../src/audit/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { bigModeEntry as big, journalText, openTrail, withTempDir } from "./_rig.ts";

const call = (value: number) => ({
  action: "call" as const,
  origin: { kind: "automation" as const, node: "Main" },
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double" as const, double: value } },
});

async function journalObjects(dir: string): Promise<Record<string, unknown>[]> {
  return (await journalText(dir)).split("\n").filter(Boolean).map((l) => JSON.parse(l));
}

Deno.test("AuditTrail writes checkpoints and its closing record again once a failed journal is written again and its gap recorded", async () => {
  await withTempDir("audit_marker_", async (dir) => {
    const time = new ManualClock();
    const { log, lines } = capturingLogger({ level: "info", now: () => time.wall });
    const files = new SwitchableFiles();
    const a = await openTrail(dir, { clock: time, log, files, maxFileBytes: 64 << 20 });
    const inFlight = await a.writeAhead(call(0.1));
    assert.ok(inFlight);
    // The disk fills while more than AUDIT_CHECKPOINT_BYTES of entries are recorded (all lost).
    files.full = true;
    a.record(big(-2));
    await a.query({ limit: 1 }); // that write failed: the journal is failing
    const many = Math.ceil(AUDIT_CHECKPOINT_BYTES / 3900) + 10;
    for (let i = 0; i < many; i++) a.record(big(i));
    await a.query({ limit: 1 }); // those writes failed too
    assert.equal(a.status().journal, "failing");
    // The disk is freed: the next entry is written, and the gap before it.
    files.full = false;
    a.record(big(-1));
    await a.query({ limit: 1 });
    assert.equal(a.status().gap_pending, 0);
    assert.equal(a.status().journal, "ok");
    for (let i = 0; i < many; i++) a.record(big(i));
    await a.query({ limit: 1 });
    const checkpoints = (await journalObjects(dir)).filter((o) => "checkpoint" in o);
    assert.equal(checkpoints.length, 1, "no checkpoint after the journal was written again");
    await a.close();
    const last = (await journalObjects(dir)).at(-1)!;
    assert.equal(
      typeof last.clean_close,
      "number",
      `no closing record: ${JSON.stringify(last).slice(0, 200)}`,
    );
    assert.deepEqual((last.open as { intent: string }[]).map((r) => r.intent), [inFlight.id]);
    // The next start reads the closing record: the call in flight is interrupted, once.
    const b = await openTrail(dir, { clock: time, log, files, maxFileBytes: 64 << 20 });
    const page = await b.query({ limit: 1000 });
    assert.deepEqual(
      page.entries.filter((e) => e.outcome === "interrupted").map((e) => e.args?.duty),
      [{ type: "double", double: 0.1 }],
    );
    await b.close();
    // Said once each: withheld while failing (WARN), written again (INFO).
    const held = lines.filter((l) =>
      /no checkpoint nor closing record until it is written/.test(l)
    );
    assert.deepEqual(held.map((l) => l.split(" ")[0]), ["WARN"], lines.join("\n"));
    const back = lines.filter((l) =>
      /audit journal written again, its lost entries recorded/.test(l)
    );
    assert.deepEqual(back.map((l) => l.split(" ")[0]), ["INFO"], lines.join("\n"));
  });
});
