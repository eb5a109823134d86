/**
 * runService (src/app/process.ts) over a stop whose audit journal's disk fails: its close reports
 * EIO (as close(2) on an NFS mount does for the writes it could not make). Failing within the stop,
 * or after the stop went on without it (its disk hung past AUDIT_STOP_MS) while the process still
 * reaps its providers (Kernel.stopStagesFailedLate), the stop failed: exit 4, the last line naming
 * the stage, never "shutdown complete". The same stop with the disk fine exits 0. Real: the
 * service over the simulated provider, real files but the audit journal's
 * (RunServiceOptions.files), a real SIGTERM to this process; the reap at exit is the real one,
 * entered once the disk answered (RunServiceOptions.killProviders: providers slow to be reaped
 * cannot be made here).
 */
import assert from "node:assert/strict";
import { EXIT_INTERNAL_ERROR, EXIT_OK } from "../../src/app/exit_codes.ts";
import { runService } from "../../src/app/process.ts";
import { killProviderProcesses, type ProvidersKilledAtExit } from "../../src/host/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { isolated, waitFor } from "../helpers/kernel.ts";
import { RealJournalFiles } from "../helpers/journal_files.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { signalStand } from "../helpers/signals.ts";

/** The error a close on an NFS mount reports for the writes it could not make (write-back). */
function ioError(): Error {
  return new Error("Input/output error (os error 5)");
}

/**
 * The audit journal's files on an NFS mount: from hang() on, its appends and fsyncs wait until
 * answer(); from answer() on, they return (the server took them, nothing is written here) and
 * every close reports EIO. `held` counts the calls that waited.
 */
class FailingAuditDisk extends RealJournalFiles {
  #hung = false;
  #answered = false;
  readonly #answer = Promise.withResolvers<void>();
  held = 0;
  hang(): void {
    this.#hung = true;
  }
  answer(): void {
    this.#answered = true;
    this.#answer.resolve();
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    if (!path.includes("/audit/")) return handle;
    const held = async (call: () => Promise<void>) => {
      if (!this.#hung) return call();
      this.held++;
      await this.#answer.promise;
    };
    return {
      append: (text: string) => held(() => handle.append(text)),
      sync: () => held(() => handle.sync()),
      truncate: (size: number) => handle.truncate(size),
      close: () => {
        handle.close();
        if (this.#answered) throw ioError();
      },
    };
  }
}

/**
 * Runs the service over `files` until it is up, calls `beforeStop`, sends it SIGTERM (signalStand);
 * `atExit` runs as the process reaps its providers (before the real reap). Resolves with the exit
 * code and the lines logged.
 */
async function stopWith(
  files: FailingAuditDisk,
  beforeStop: () => void,
  atExit: (lines: readonly string[]) => Promise<void> = () => Promise.resolve(),
): Promise<{ code: number; lines: string[] }> {
  const { log, lines } = capturingLogger({ level: "info" });
  const config = isolated(testConfig({ http: { enabled: false } }));
  const killProviders = async (ms: number): Promise<ProvidersKilledAtExit> => {
    await atExit(lines);
    return killProviderProcesses(ms);
  };
  const signals = signalStand();
  const running = runService(config, log, { files, killProviders, onSignal: signals.onSignal });
  await waitFor("runtime up", () => lines.some((l) => l.includes("runtime up")));
  beforeStop();
  signals.send("SIGTERM");
  return { code: await running, lines };
}

/** The lines of `lines` matching `re`. */
function matching(lines: readonly string[], re: RegExp): string[] {
  return lines.filter((l) => re.test(l));
}

Deno.test("runService exits 4 when the audit journal's close fails after the stop went on without it, while the process reaps its providers: one ERROR naming the stage, then 'shutdown failed' last", async () => {
  const files = new FailingAuditDisk();
  const LATE = /^ERROR .*stop: audit journal failed after the stop had ended without it: Input/;
  const { code, lines } = await stopWith(files, () => files.hang(), async (sofar) => {
    // The stop has ended (without the audit journal); the disk answers now, with EIO.
    assert.equal(matching(sofar, /^INFO .*runtime stopped$/).length, 1, sofar.join("\n"));
    files.answer();
    await waitFor("the audit journal's close failed", () => matching(sofar, LATE).length > 0);
  });
  const all = lines.join("\n");
  assert.ok(files.held > 0, `the audit journal's last writes were held by the disk:\n${all}`);
  assert.equal(
    matching(lines, /^WARN .*stop: audit journal not closed within .*AUDIT_STOP_MS/).length,
    1,
    `the stop went on without the audit journal:\n${all}`,
  );
  assert.equal(matching(lines, LATE).length, 1, `one ERROR for the late failure:\n${all}`);
  assert.equal(code, EXIT_INTERNAL_ERROR, `a stop stage that failed late exits 4:\n${all}`);
  assert.match(
    lines.at(-1)!,
    /^ERROR .*shutdown failed: 1 stop stage\(s\) failed after the stop had ended without them: audit journal$/,
  );
  assert.equal(matching(lines, /^ERROR/).length, 2, `the failure and the exit's line:\n${all}`);
  assert.equal(matching(lines, /shutdown complete/).length, 0, all);
});

Deno.test("runService exits 4 when the audit journal's close fails within the stop: one ERROR naming the stage, then 'shutdown failed' last", async () => {
  const files = new FailingAuditDisk();
  const { code, lines } = await stopWith(files, () => files.answer());
  const all = lines.join("\n");
  assert.equal(
    matching(lines, /^ERROR .*stop: audit journal failed: Input.*; the stop goes on$/).length,
    1,
    `one ERROR naming the stage:\n${all}`,
  );
  assert.equal(code, EXIT_INTERNAL_ERROR, `a stop stage that failed exits 4:\n${all}`);
  assert.match(
    lines.at(-1)!,
    /^ERROR .*shutdown failed: runtime stopped, but 1 stop stage\(s\) failed: audit journal$/,
  );
  assert.equal(matching(lines, /^ERROR/).length, 2, `the failure and the exit's line:\n${all}`);
  assert.equal(matching(lines, /shutdown complete|^INFO .*runtime stopped/).length, 0, all);
});

Deno.test("runService exits 0 after the same stop with the audit journal's disk fine: 'shutdown complete', its last line", async () => {
  const files = new FailingAuditDisk();
  const { code, lines } = await stopWith(files, () => {});
  const all = lines.join("\n");
  assert.equal(code, EXIT_OK, all);
  assert.equal(matching(lines, /^ERROR|stop: audit journal/).length, 0, all);
  assert.match(lines.at(-1)!, /^INFO .*shutdown complete$/);
});
