/**
 * What the audit trail tests share: an automated duty call (its decision and the record written
 * ahead of it), a temporary folder removed afterwards, a journaled AuditTrail in it (on a
 * ManualClock, or as the test makes it), and the journal's text as the files on disk hold it.
 */
import { AuditTrail } from "../../src/audit/mod.ts";
import type { Clock, Logger } from "../../src/common/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import { journalFiles, type LineLogger } from "../../src/host/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";

/** The tree's accepted set_motor_duty call of sim0/motorctl0 at `value`. */
export function duty(value: number): AuditDecision {
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

/** duty(value) as written ahead (AuditTrail.writeAhead): the decision without its outcome. */
export function ahead(value: number): Parameters<AuditTrail["writeAhead"]>[0] {
  const { outcome: _o, result: _r, latency_ms: _l, ...call } = duty(value);
  return call;
}

/**
 * Runs `fn` with a fresh temporary folder named from `prefix`; the folder is removed afterwards,
 * whatever `fn` did.
 */
export async function withTempDir(
  prefix: string,
  fn: (dir: string) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix });
  try {
    await fn(dir);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** How openTrail makes its AuditTrail. */
export interface TrailOptions {
  readonly clock: Clock;
  /** Default the quiet test logger. */
  readonly log?: Logger;
  /** The runtime mode the trail reads at each decision (default AUTO). */
  readonly mode?: () => string;
  /** Default fresh SwitchableFiles. */
  readonly files?: SwitchableFiles;
  readonly runId?: () => string | null;
  /** The journal's file size bound (default 1 MiB). */
  readonly maxFileBytes?: number;
}

/** An AuditTrail made as `o` says, its journal opened in `dir` (two files kept). */
export async function openTrail(dir: string, o: TrailOptions): Promise<AuditTrail> {
  const t = new AuditTrail({
    clock: o.clock,
    log: o.log ?? testLogger(),
    mode: o.mode ?? (() => "AUTO"),
    ...(o.runId ? { runId: o.runId } : {}),
  });
  await t.openJournal({
    dir,
    files: o.files ?? new SwitchableFiles(),
    maxFileBytes: o.maxFileBytes ?? 1 << 20,
    maxFiles: 2,
  });
  return t;
}

/**
 * Runs `fn` with an AuditTrail (mode AUTO) on a ManualClock, its journal opened in a fresh
 * temporary folder (openTrail), logging to `log` (default the quiet test logger); the folder is
 * removed afterwards, whatever `fn` did.
 */
export function withJournaledTrail(
  prefix: string,
  fn: (t: AuditTrail, time: ManualClock, dir: string) => Promise<void>,
  log: (time: ManualClock) => LineLogger = () => testLogger(),
): Promise<void> {
  return withTempDir(prefix, async (dir) => {
    const time = new ManualClock();
    await fn(await openTrail(dir, { clock: time, log: log(time) }), time, dir);
  });
}

/** The journal in `dir` as one text, its files in name order. */
export async function journalText(dir: string): Promise<string> {
  const names = (await journalFiles.listNames(dir)).sort();
  return (await Promise.all(names.map((n) => Deno.readTextFile(`${dir}/${n}`)))).join("");
}

/** A mode entry of about 4 KB, `i` first in its reason (written as it happens, never collapsed). */
export const bigModeEntry = (i: number): AuditDecision => ({
  action: "mode",
  origin: { kind: "http" },
  outcome: "refused",
  function: "AUTO",
  reason: `${i} ${"r".repeat(3900)}`,
});
