/**
 * A slow disk and a flood of call entries fill the audit journal's queue
 * (AUDIT_QUEUE_MAX_ENTRIES): the entries of the e-stop, of the mode change into FAULT and of the
 * stop's calls that come then still find room (AUDIT_SAFETY_RESERVE_ENTRIES); the flood's are
 * dropped and counted (the gap entry).
 */
import assert from "node:assert/strict";
import { AUDIT_QUEUE_MAX_ENTRIES, AuditTrail } from "../../src/audit/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

/** MemoryFiles whose appends wait at `gate` while it is set (a write under way). */
class GatedFiles extends MemoryFiles {
  gate: Promise<void> | null = null;
  held = 0;
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    return {
      ...h,
      append: async (text: string) => {
        if (this.gate) {
          this.held++;
          await this.gate.finally(() => this.held--);
        }
        await h.append(text);
      },
    };
  }
}

const call = (i: number): AuditDecision => ({
  action: "call",
  origin: { kind: "automation", node: "Main" },
  outcome: "accepted",
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: i } },
});

Deno.test("AuditTrail keeps room for the e-stop's entries in a queue a flood of calls filled", async () => {
  const files = new GatedFiles();
  const clock = new ManualClock();
  const t = new AuditTrail({ clock, log: testLogger(), mode: () => "AUTO" });
  await t.openJournal({ dir: "/audit", files, maxFileBytes: 64 << 20, maxFiles: 2 });
  let release!: () => void;
  files.gate = new Promise((r) => release = r);
  t.record(call(-2));
  t.record(call(-1)); // the first entry is written: its write is held
  await waitFor("a write under way", () => files.held > 0);
  const flood = AUDIT_QUEUE_MAX_ENTRIES + 200;
  for (let i = 0; i < flood; i++) t.record(call(i));
  t.record({
    action: "estop",
    origin: { kind: "http", address: "127.0.0.1", token_name: "local" },
    outcome: "accepted",
    reason: "leak",
  });
  const intent = await t.writeAhead(
    {
      origin: { kind: "estop", rung: "safe_state", cause: "api" },
      device_handle: "sim0/motorctl0",
      function: "stop_motor",
      args: {},
    },
    { wait: false },
  );
  t.record({
    action: "call",
    origin: { kind: "estop", rung: "safe_state", cause: "api" },
    outcome: "accepted",
    device_handle: "sim0/motorctl0",
    function: "stop_motor",
    args: {},
    intent,
  });
  t.record({
    action: "mode",
    origin: { kind: "estop", cause: "api" },
    outcome: "accepted",
    function: "FAULT",
  });
  files.gate = null;
  release();
  const entries = [];
  let cursor: string | undefined;
  do {
    const page = await t.query({ limit: 1000, ...(cursor ? { cursor } : {}) });
    entries.push(...page.entries);
    cursor = page.next_cursor ?? undefined;
  } while (cursor);
  assert.deepEqual(
    entries.filter((e) => e.action !== "gap" && (e.action !== "call" || e.origin.kind === "estop"))
      .map((e) => `${e.action} ${e.function ?? ""}`),
    ["estop ", "call stop_motor", "mode FAULT"],
    "the e-stop, its stop call and FAULT are journaled",
  );
  const calls = entries.filter((e) => e.action === "call" && e.origin.kind !== "estop").length;
  const gaps = entries.filter((e) => e.action === "gap");
  assert.ok(calls < flood + 2, "the flood was cut");
  assert.deepEqual(gaps.map((e) => e.count), [flood + 2 - calls], "its loss counted");
  await t.close();
});
