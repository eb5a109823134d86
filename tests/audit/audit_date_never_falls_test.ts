/**
 * The audit trail's dates never fall: after a step back of the wall clock (NTP on a Raspberry Pi
 * without a real-time clock), an entry is dated no earlier than the newest date the trail gave
 * before, in this process or, across a restart, in the journal it opens. An e-stop and its clear
 * read with `since` the trigger's date are both there.
 */
import assert from "node:assert/strict";
import { AUDIT_DATE_HOLD_MAX_MS, type AuditTrail } from "../../src/audit/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ahead, journalText, openTrail, withTempDir } from "./_rig.ts";

const ESTOP: AuditDecision = {
  action: "estop",
  origin: { kind: "http" },
  outcome: "accepted",
  args: { reason: "test" },
};
const CLEAR: AuditDecision = {
  action: "estop_clear",
  origin: { kind: "http" },
  outcome: "accepted",
};

/** A trail (mode MANUAL) on `time`, its journal opened in `dir` on `files` (default fresh ones). */
function open(
  dir: string,
  time: ManualClock,
  o: { log?: Logger; files?: SwitchableFiles } = {},
): Promise<AuditTrail> {
  return openTrail(dir, { clock: time, mode: () => "MANUAL", ...o });
}

/**
 * A trail on a fresh ManualClock (open) that has recorded an e-stop: the trail, its clock, and the
 * e-stop's date (the wall clock's time then).
 */
async function afterEstop(
  dir: string,
  o: { log?: Logger; files?: SwitchableFiles } = {},
): Promise<{ t: AuditTrail; time: ManualClock; trigger: number }> {
  const time = new ManualClock();
  const t = await open(dir, time, o);
  t.record(ESTOP);
  return { t, time, trigger: time.wall };
}

/** The actions of the entries `since` the given date, and of those `until` it. */
async function around(t: AuditTrail, at: number): Promise<{ since: string[]; until: string[] }> {
  const since = await t.query({ sinceMs: at, limit: 100 });
  const until = await t.query({ untilMs: at, limit: 100 });
  return {
    since: since.entries.map((e) => e.action),
    until: until.entries.map((e) => e.action),
  };
}

/** The lines that include `text`, each without its time. */
function said(lines: readonly string[], text: string): string[] {
  return lines.filter((l) => l.includes(text)).map((l) => l.replace(/^(\w+) +\S+ /, "$1 "));
}

/** Runs `fn` in a fresh temporary folder, removed afterwards. */
const withDir = (fn: (dir: string) => Promise<void>) => withTempDir("audit_date_never_falls_", fn);

Deno.test("AuditTrail dates an e-stop's clear after a wall clock stepped back no earlier than its trigger: both read since the trigger's date", async () => {
  await withDir(async (dir) => {
    const { t, time, trigger } = await afterEstop(dir);
    time.advance(10);
    time.stepWall(-60_000); // NTP stepped the clock back a minute
    t.record(CLEAR);
    const page = await t.query({ limit: 100 });
    assert.deepEqual(
      page.entries.map((e) => [e.action, e.first_time_epoch_ms, e.last_time_epoch_ms]),
      [["estop", trigger, trigger], ["estop_clear", trigger, trigger]],
    );
    // A clear read with its trigger, never without it.
    assert.deepEqual(await around(t, trigger), {
      since: ["estop", "estop_clear"],
      until: ["estop", "estop_clear"],
    });
    // Once the clock passes the newest date again, entries take its time.
    time.advance(60_000);
    t.record(ESTOP);
    const last = (await t.query({ limit: 100 })).entries.at(-1)!;
    assert.equal(last.first_time_epoch_ms, time.wall);
    assert.ok(time.wall > trigger);
    await t.close();
  });
});

Deno.test("AuditTrail dates a write-ahead record after a wall clock stepped back no earlier than the entry before it", async () => {
  await withDir(async (dir) => {
    const { t, time, trigger } = await afterEstop(dir);
    time.stepWall(-60_000);
    const intent = await t.writeAhead(ahead(0.5));
    assert.ok(intent !== null);
    await t.close();
    const intents = (await journalText(dir)).split("\n").filter((l) => l.startsWith('{"intent":'))
      .map((l) => JSON.parse(l).time_epoch_ms);
    assert.deepEqual(intents, [trigger]);
  });
});

for (const end of ["a clean close", "a crash"] as const) {
  Deno.test(`AuditTrail dates its entries after a restart on a wall clock behind the journal (${end}) no earlier than the journal's newest date`, async () => {
    await withDir(async (dir) => {
      const { t: first, time, trigger } = await afterEstop(dir);
      // The host's clock stepped back a minute before the stop (its closing record is dated too).
      time.advance(10);
      time.stepWall(-60_000);
      await first.close();
      if (end === "a crash") {
        // No closing record: the next start searches the journal's tail.
        const path = `${dir}/${(await Array.fromAsync(Deno.readDir(dir)))[0]!.name}`;
        const lines = (await Deno.readTextFile(path)).split("\n").filter((l) => l !== "");
        assert.ok(lines.at(-1)!.startsWith('{"covers":[],"clean_close":'));
        await Deno.writeTextFile(path, lines.slice(0, -1).map((l) => `${l}\n`).join(""));
      }
      // The host restarts with its clock still behind (a Raspberry Pi without a real-time
      // clock, before NTP).
      time.advance(10);
      const { log, lines } = capturingLogger();
      const second = await open(dir, time, { log });
      // Said once, at the opening.
      assert.deepEqual(
        said(lines, "behind the audit journal's newest date"),
        [
          `WARN [audit] the wall clock is ${trigger - time.wall} ms behind the audit journal's ` +
          `newest date (${trigger}): entries are dated ${trigger} until it passes it`,
        ],
      );
      second.record(CLEAR);
      assert.deepEqual(await around(second, trigger), {
        since: ["estop", "estop_clear"],
        until: ["estop", "estop_clear"],
      });
      await second.close();
    });
  });
}

Deno.test("AuditTrail dates the gap entry of entries lost after a wall clock stepped back no earlier than the entry before them", async () => {
  await withDir(async (dir) => {
    const files = new SwitchableFiles();
    const { t, time, trigger } = await afterEstop(dir, { files });
    await t.query({ limit: 1 }); // written
    time.advance(10);
    time.stepWall(-60_000);
    files.full = true;
    t.record(CLEAR);
    await t.query({ limit: 1 }); // lost
    files.full = false;
    t.record(ESTOP);
    const page = await t.query({ limit: 100 });
    assert.deepEqual(
      page.entries.map((e) => [e.action, e.first_time_epoch_ms, e.last_time_epoch_ms]),
      [["estop", trigger, trigger], ["gap", trigger, trigger], ["estop", trigger, trigger]],
    );
    await t.close();
  });
});

Deno.test("AuditTrail believes a wall clock stepped back more than AUDIT_DATE_HOLD_MAX_MS, in this process and across a restart, and says so once each", async () => {
  await withDir(async (dir) => {
    const { log, lines } = capturingLogger();
    const { t: first, time, trigger } = await afterEstop(dir, { log });
    // A clock set a day ahead by mistake, then corrected: entries are not held at the wrong date.
    time.stepWall(-24 * 3600_000);
    first.record(CLEAR);
    time.advance(10);
    first.record(ESTOP);
    assert.deepEqual(said(lines, "AUDIT_DATE_HOLD_MAX_MS"), [
      `WARN [audit] the wall clock is ${24 * 3600_000} ms behind the audit's newest date ` +
      `(${trigger}), more than AUDIT_DATE_HOLD_MAX_MS (${AUDIT_DATE_HOLD_MAX_MS}): entries are ` +
      `dated by the wall clock again, after entries dated later`,
    ]);
    const page = await first.query({ limit: 100 });
    assert.deepEqual(page.entries.map((e) => [e.action, e.first_time_epoch_ms]), [
      ["estop", trigger],
      ["estop_clear", time.wall - 10],
      ["estop", time.wall],
    ]);
    await first.close();
  });
  await withDir(async (dir) => {
    // A restart on the corrected clock, the journal's newest date the day ahead.
    const { t: first, time, trigger: ahead } = await afterEstop(dir);
    await first.close();
    time.stepWall(-24 * 3600_000);
    const { log, lines } = capturingLogger();
    const second = await open(dir, time, { log });
    second.record(CLEAR);
    assert.deepEqual(
      said(lines, "newest date"),
      [
        `WARN [audit] the wall clock is ${ahead - time.wall} ms behind the audit journal's ` +
        `newest date (${ahead}), more than AUDIT_DATE_HOLD_MAX_MS (${AUDIT_DATE_HOLD_MAX_MS}): ` +
        `entries are dated by the wall clock, after entries dated later`,
      ],
    );
    assert.equal(
      (await second.query({ limit: 100 })).entries.at(-1)!.first_time_epoch_ms,
      time.wall,
    );
    await second.close();
  });
});
