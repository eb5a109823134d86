/**
 * A call in flight at a crash is recorded `interrupted` by the audit trail at the next start and
 * is an event of the run that crash left open (docs/http-api.md, "Runs"), also when that start's
 * run registry could not start (its disk failed) and the runtime stopped before a retry worked:
 * the start after it closes the run as `abandoned` with the call among its events. The crash is
 * a copy of the data folder taken while the call is at the provider; the Kernel, the simulated
 * provider as a child process, the call held there by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { d, i, manualCall } from "../safety/_fixture.ts";

/** How long sim0 holds the call: the data folder is copied meanwhile. */
const LATENCY_MS = 1500;

/** Copies the folder `from` (files and folders) to `to`, as a crash leaves it on disk. */
function copyDir(from: string, to: string): void {
  Deno.mkdirSync(to, { recursive: true });
  for (const e of Deno.readDirSync(from)) {
    if (e.isDirectory) copyDir(`${from}/${e.name}`, `${to}/${e.name}`);
    else if (e.isFile) Deno.copyFileSync(`${from}/${e.name}`, `${to}/${e.name}`);
  }
}

/**
 * A runtime on the data folder `live` (armed) opens a run and makes a call that sim0 holds; while
 * the call is at sim0 the folder is copied to `crashed` (the crash). The run's id.
 */
async function crashWithCallAtProvider(live: string, crashed: string): Promise<string> {
  const first = await startRuntime(
    testConfig({ runtime: { dataDir: live }, pollingIntervalMs: 60_000 }),
    { arm: true },
  );
  try {
    await manualCall(first, "sim0", "chaos_control", 3, {
      device_id: { type: "string", string: "motorctl0" },
      latency_ms: i(LATENCY_MS),
    });
    const runId = (await first.runs.open({})).run.run_id;
    const call = manualCall(first, "sim0", "motorctl0", 10, { motor_index: i(1), duty: d(0.7) })
      .catch(() => {});
    const session = first.registry.host("sim0")!.session!;
    await waitFor("the call at sim0", () => session.inFlight > 0);
    copyDir(live, crashed);
    await call;
    return runId;
  } finally {
    await first.stop();
  }
}

for (const end of ["stopped", "crashed"] as const) {
  Deno.test(`a call interrupted by a crash is an event of the run that crash left open, after a start whose run registry failed and ${end}`, async () => {
    const dir = await Deno.makeTempDir({ prefix: "run_interrupted_start_failed_" });
    const live = `${dir}/live`;
    const crashed = `${dir}/crashed`;
    const next = end === "stopped" ? crashed : `${dir}/crashed_again`;
    try {
      // The crash: the folder as it is while the call is at the provider.
      const runId = await crashWithCallAtProvider(live, crashed);

      // The next start: its run journal's disk is full, and it stops before a retry.
      const full = new InterceptedAppends(`${crashed}/runs`, () => Promise.reject(diskFullError()));
      const second = await startRuntime(
        testConfig({ runtime: { dataDir: crashed }, pollingIntervalMs: 60_000 }),
        { host: { files: full } },
      );
      try {
        assert.equal(second.runs.info().available, false);
        const audit = await second.audit.query({ limit: 100 });
        assert.deepEqual(
          audit.entries.filter((e) => e.function === "set_motor_duty").map((e) => e.outcome),
          ["interrupted"],
        );
        // Crashed: the folder as it is now (the read above waited for the entry's write).
        if (end === "crashed") copyDir(crashed, next);
      } finally {
        await second.stop();
      }

      const third = await startRuntime(
        testConfig({ runtime: { dataDir: next }, pollingIntervalMs: 60_000 }),
      );
      try {
        const run = (await third.runs.get(runId)).run;
        assert.equal(run.close_reason, "abandoned");
        const events = (await third.runs.listEvents(runId, {})).events;
        assert.deepEqual(
          events.map((e) => [e.category, e.type, e.payload.outcome ?? null]),
          [
            ["run_opened", "", null],
            ["call", "sim0/motorctl0 set_motor_duty", "interrupted"],
            ["run_closed", "abandoned", null],
          ],
        );
        // Recorded once on the audit trail.
        const audit = await third.audit.query({ limit: 100 });
        assert.deepEqual(
          audit.entries.filter((e) => e.function === "set_motor_duty").map((e) => e.outcome),
          ["interrupted"],
        );
      } finally {
        await third.stop();
      }
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  });
}

Deno.test("a call interrupted by a crash that a start gave to its run is not given again by the start after the next crash", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_interrupted_taken_" });
  const live = `${dir}/live`;
  const crashed = `${dir}/crashed`;
  const again = `${dir}/crashed_again`;
  try {
    const runId = await crashWithCallAtProvider(live, crashed);

    // The next start closes the run with the call; a run it opens is left open by its crash.
    let nextRunId = "";
    const second = await startRuntime(
      testConfig({ runtime: { dataDir: crashed }, pollingIntervalMs: 60_000 }),
    );
    try {
      nextRunId = (await second.runs.open({})).run.run_id;
      await second.audit.query({ limit: 1 });
      copyDir(crashed, again);
    } finally {
      await second.stop();
    }

    const third = await startRuntime(
      testConfig({ runtime: { dataDir: again }, pollingIntervalMs: 60_000 }),
    );
    try {
      const calls = async (id: string) =>
        (await third.runs.listEvents(id, {})).events.filter((e) => e.category === "call")
          .map((e) => e.payload.outcome);
      assert.deepEqual(await calls(runId), ["interrupted"]);
      assert.equal((await third.runs.get(nextRunId)).run.close_reason, "abandoned");
      assert.deepEqual(await calls(nextRunId), []);
    } finally {
      await third.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
