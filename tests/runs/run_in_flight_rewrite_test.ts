/**
 * The `in_flight` record a failed close saved for the run that stayed open (the write-ahead ids of
 * the calls that close listed `in_flight`) is carried across a rewrite of runs.jsonl
 * (#compactIfLong): the start after the process ended still leaves those calls out of the
 * `interrupted` calls it writes to the run -- one ending per call.
 */
import assert from "node:assert/strict";
import { RUN_NOT_RECORDED_SAVE_MS } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { eventsOnDisk, registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

const lines = (files: RunJournalFaultFiles) =>
  files.text("/data/runs.jsonl").split("\n").filter(Boolean);

/** runs.jsonl lines a running registry tolerates with `runs` runs kept (4 x runs + 64). */
const tolerated = (runs: number) => 4 * runs + 64;

Deno.test("RunRegistry: a rewrite of runs.jsonl keeps the open run's in_flight record; the next start writes no second ending", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const maxRunBytes = 2000;
  const registry = registryOn(files, { clock, maxRunBytes });
  await registry.start();
  const call = {
    first_time_epoch_ms: clock.nowMs(),
    device_handle: "sim0/motorctl0",
    function: "set_motor_duty",
  };
  let runId = "";
  try {
    const { run } = await registry.open({});
    runId = run.run_id;
    registry.recordCall({ ...call, outcome: "in_flight", intent: "w-7" });
    await waitFor("the in_flight event written", () => eventsOnDisk(files, runId).length === 2);
    files.eventAppendsToFail = 1; // its run_closed: the close fails, the run stays open
    await assert.rejects(registry.close(runId, {}));
    assert.equal(
      lines(files).filter((l) => l.includes('"op":"in_flight"')).length,
      1,
      "the failed close saved its in_flight record",
    );
    // Counts of events left out past runs.max_run_bytes, saved every RUN_NOT_RECORDED_SAVE_MS,
    // grow runs.jsonl until it is rewritten.
    let lost = 0;
    let longest = 0;
    for (let i = 0; i < 200; i++) {
      registry.recordCall({ ...call, outcome: "ok", args: { duty: "x".repeat(maxRunBytes) } });
      lost++;
      await clock.advanceAsync(RUN_NOT_RECORDED_SAVE_MS);
      await waitFor("the count saved", () => lines(files).at(-1)!.includes(`"count":${lost}`));
      const n = lines(files).length;
      if (n < longest) break; // rewritten
      longest = n;
    }
    assert.equal(longest, tolerated(1), "runs.jsonl grew to its bound, then was rewritten");
    assert.ok(lines(files).length < tolerated(1));
  } finally {
    await registry.shutdown(); // the run stays open: the next start closes it as abandoned
  }
  const inFlight = lines(files).filter((l) => l.includes('"op":"in_flight"'))
    .map((l) => JSON.parse(l));
  assert.deepEqual(
    inFlight.map((r) => [r.run_id, r.intents]),
    [[runId, ["w-7"]]],
    "the rewrite carried the in_flight record across",
  );
  const next = registryOn(files, { clock, maxRunBytes });
  await next.start({
    interruptedCalls: [{
      call: { ...call, outcome: "interrupted" },
      runId,
      intent: "w-7",
    }],
  });
  try {
    const events = (await next.listEvents(runId, { limit: 1000 })).events;
    assert.deepEqual(
      events.map((e) => [e.category, e.type, e.payload.outcome ?? null]),
      [
        ["run_opened", "", null],
        ["call", "sim0/motorctl0 set_motor_duty", "in_flight"],
        ["run_closed", "abandoned", null],
      ],
      "the call has one ending: the in_flight its failed close wrote",
    );
  } finally {
    await next.shutdown();
  }
});
