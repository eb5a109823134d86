/**
 * A start whose runtime.data_dir hangs is abandoned (the start-up budget, or stop()); should the
 * hung mount answer at last, after the stop, the opening it held goes no further than its step --
 * and what that step opens is closed again: a runtime that has stopped holds no journal file open
 * (nor writes to it beside a later runtime on the folder). Real files; the calls on the held
 * folder wait until the test lets them go; the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { type FilesCall, LATE_CALLS, LateFiles } from "../helpers/journal_files.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { flushMicrotasks, ManualClock, runToSettle, settleOn } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";

const BUDGET_MS = 5000;
/** Polls of the files (20 ms apart) without a call that end the wait for the late opening. */
const QUIET_POLLS = 5;

/**
 * Real files where each call of a journal's opening (LATE_CALLS) on a path holding `pathPart` waits
 * until `release()` (a hung mount that answers at last: LateFiles); counts those calls, and the
 * append handles opened and closed.
 */
class HeldFiles extends LateFiles {
  /** Calls of a journal's opening so far (held or not): the late opening has ended when none comes. */
  calls = 0;
  /** Append handles opened, and closed. */
  opened = 0;
  closed = 0;
  constructor(pathPart: string) {
    super("every call", pathPart);
  }
  protected override gate<T>(
    call: FilesCall,
    paths: readonly string[],
    run: () => Promise<T>,
  ): Promise<T> {
    if (LATE_CALLS.includes(call)) this.calls++;
    return super.gate(call, paths, run);
  }
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const h = await super.openAppend(path);
    this.opened++;
    return {
      append: (text) => h.append(text),
      sync: () => h.sync(),
      truncate: (size) => h.truncate(size),
      close: () => {
        this.closed++;
        h.close();
      },
    };
  }
}

const STAGES = [
  { stage: "opening the audit journal", part: "/audit" },
  { stage: "opening the run records", part: "/runs" },
  { stage: "opening the history disk tier", part: "/history" },
] as const;

for (const { stage, part } of STAGES) {
  for (const ended of ["the start-up budget ran out", "stop() ended the start"] as const) {
    Deno.test(`Kernel: ${stage} answering only after ${ended} and the stop finished leaves no journal file open`, async () => {
      const clock = new ManualClock();
      const files = new HeldFiles(part);
      const rt = newKernel(
        testConfig({ providers: [], runtime: { startupTimeoutMs: BUDGET_MS } }),
        { clock, files },
      );
      const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
      await waitFor(`a call on ${part} held`, () => files.held > 0);
      const outcome = ended === "the start-up budget ran out"
        ? await runToSettle(clock, starting, "the start to end")
        : (rt.stop(), await settleOn(clock, starting, "the start to end on stop()"));
      assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
      await runToSettle(clock, rt.stop(), "the stop after the failed start");
      // The hung mount answers at last.
      files.release();
      // It goes on until it ends at a step (a file it opened closed again): over once every held
      // call answered and no call on the files came for QUIET_POLLS polls in a row.
      let seen = -1;
      let quiet = 0;
      await waitFor("the held opening went on and ended", async () => {
        await flushMicrotasks();
        if (files.answered < files.held) return false;
        quiet = files.calls === seen ? quiet + 1 : 0;
        seen = files.calls;
        return quiet >= QUIET_POLLS;
      }, 3000).catch((err) => {
        throw new Error(`${err.message}: ${files.opened} opened, ${files.closed} closed`);
      });
      // Before: the journal the late opening opened stayed open (0 closed), the stopped
      // runtime's, and Deno's resource sanitizer found the file leaked; the run records' start
      // went on to open runs.jsonl, and the stopped registry was available.
      assert.equal(files.closed, files.opened);
      assert.equal(rt.runs.info().available, false, "the stopped runtime's run records started");
    });
  }
}
