/**
 * A start whose runtime.data_dir hangs (an NFS mount gone, a dying SD card: an open, read or stat
 * that never returns): the opening of the folder -- its lock, the audit journal, the run
 * records, the history disk tier, the incident records -- is bounded by
 * runtime.startup_timeout_ms, so the start fails (DEADLINE_EXCEEDED, naming the stage and the
 * path that hung) instead of never coming up; a stop meanwhile ends it at once. Real files but
 * for the hung path (HungFiles: its calls never settle); the clock moved by hand.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import type { DataDirLock } from "../../src/host/mod.ts";
import { HungFiles } from "../helpers/journal_files.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { flushMicrotasks, ManualClock, runToSettle, settleOn } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** The start-up budget of these tests (virtual time: none of it is waited for). */
const BUDGET_MS = 5000;

const STAGES = [
  { stage: "opening the audit journal", part: "/audit" },
  { stage: "opening the run records", part: "/runs" },
  { stage: "opening the history disk tier", part: "/history" },
  { stage: "opening the incident records", part: "/history/incidents" },
] as const;

function hungKernel(part: string) {
  const clock = new ManualClock();
  const files = new HungFiles(part);
  const rt = newKernel(
    testConfig({ providers: [], runtime: { startupTimeoutMs: BUDGET_MS } }),
    { clock, files },
  );
  return { clock, files, rt, dir: rt.config.runtime.dataDir };
}

for (const { stage, part } of STAGES) {
  Deno.test(`Kernel.start fails within runtime.startup_timeout_ms, naming the path, when ${stage} hangs`, async () => {
    const { clock, files, rt, dir } = hungKernel(part);
    const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
    await waitFor(`a call on ${dir}${part} made`, () => files.hung > 0);
    const outcome = await runToSettle(clock, starting, "the start to end");
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
    assert.equal(outcome.code, "DEADLINE_EXCEEDED");
    assert.match(
      outcome.message,
      new RegExp(
        `^runtime\\.data_dir did not answer within runtime\\.startup_timeout_ms ` +
          `\\(${BUDGET_MS} ms\\): ${stage}: \\w+ ${dir}${part}\\S* never returned`,
      ),
    );
    assert.equal(rt.http, null, "the API was not served");
    // The stop after it ends too, the hung call still waiting.
    await runToSettle(clock, rt.stop(), "the stop after the failed start");
  });
}

Deno.test("Kernel.start fails within runtime.startup_timeout_ms when taking the runtime.data_dir lock hangs", async () => {
  const clock = new ManualClock();
  let asked = 0;
  const rt = newKernel(
    testConfig({ providers: [], runtime: { startupTimeoutMs: BUDGET_MS } }),
    {
      clock,
      lockDataDir: () => {
        asked++;
        return new Promise<DataDirLock>(() => {});
      },
    },
  );
  const dir = rt.config.runtime.dataDir;
  const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
  await waitFor("the lock asked for", () => asked > 0);
  const outcome = await runToSettle(clock, starting, "the start to end");
  assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
  assert.equal(outcome.code, "DEADLINE_EXCEEDED");
  assert.equal(
    outcome.message,
    `runtime.data_dir did not answer within runtime.startup_timeout_ms (${BUDGET_MS} ms): ` +
      `taking the runtime.data_dir lock: lock ${dir}/runtime.lock never returned (a hung mount ` +
      "or a failing disk?); start-up stopped",
  );
  await runToSettle(clock, rt.stop(), "the stop after the failed start");
});

Deno.test("Kernel.stop while the audit journal's opening hangs ends the start at once", async () => {
  const { clock, files, rt } = hungKernel("/audit");
  const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
  await waitFor("the audit folder's call made", () => files.hung > 0);
  // No time moves: only the stop can end the start here.
  const stopping = rt.stop();
  const outcome = await settleOn(clock, starting, "the start to end on stop()");
  assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
  assert.equal(outcome.message, "start-up aborted: the runtime is stopping");
  await settleOn(clock, stopping, "the stop");
});

for (const ended of ["the start-up budget ran out", "stop() ended the start"] as const) {
  Deno.test(`Kernel: a runtime.data_dir lock taken only after ${ended} and the stop finished is released`, async () => {
    const clock = new ManualClock();
    let grant: ((lock: DataDirLock) => void) | null = null;
    let released = 0;
    const rt = newKernel(
      testConfig({ providers: [], runtime: { startupTimeoutMs: BUDGET_MS } }),
      {
        clock,
        lockDataDir: () => new Promise<DataDirLock>((r) => (grant = r)),
      },
    );
    const starting = rt.start().then(() => "started" as const, (err: unknown) => err);
    await waitFor("the lock asked for", () => grant !== null);
    const outcome = ended === "the start-up budget ran out"
      ? await runToSettle(clock, starting, "the start to end")
      : (rt.stop(), await settleOn(clock, starting, "the start to end on stop()"));
    assert.ok(outcome instanceof RuntimeError, `start() must fail, got ${String(outcome)}`);
    await runToSettle(clock, rt.stop(), "the stop after the failed start");
    // The hung mount answers at last: the lock it gives is this runtime's, which has stopped.
    grant!({ release: () => void released++ });
    await flushMicrotasks();
    assert.equal(released, 1, "the lock given after the stop is released, once");
  });
}
