/**
 * A call decided while a run's close is under way names no run (its write-ahead record); if that
 * close then fails (a disk error through the host's files), the run stays open and counts the
 * call in its `events_not_recorded` (docs/http-api.md, "Runs"), whenever its outcome comes: never
 * also an event of that run -- not its outcome answered after the failure, nor an `in_flight`
 * event of the retried close. One ending per call: the count, in the run open when it was decided.
 * The calls are written ahead and settled through the kernel's own audit trail, as the router
 * does, the sim provider running.
 */
import assert from "node:assert/strict";
import type { AuditIntent } from "../../src/control/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { decision, HeldRunClosed } from "./_run_closed_files.ts";

Deno.test("Kernel: calls decided during a run's close that failed are counted by the run that stays open, never also its events", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_close_failed_calls_" });
  const files = new HeldRunClosed();
  const rt = await startRuntime(
    testConfig({ runtime: { dataDir: dir }, history: { enabled: false } }),
    { host: { files } },
  );
  try {
    const { run } = await rt.runs.open({});
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    files.fail = true;
    const closing = rt.runs.close(run.run_id, { close_reason: "completed" });
    await waitFor("the run_closed write under way", () => files.held > 0);
    // Two calls decided while the close is under way (their write-ahead records name no run).
    const decided: AuditIntent[] = [];
    for (let i = 0; i < 2; i++) {
      const intent = await rt.audit.writeAhead(decision(i));
      assert.ok(intent !== null);
      decided.push(intent);
    }
    files.gate = null;
    release();
    await assert.rejects(closing, /close run/);
    files.fail = false;
    assert.equal(rt.runs.openRunId(), run.run_id, "the run stays open");
    // The first answers now, the run open; the second is still in flight when the retry closes it.
    rt.audit.record({ ...decision(0), action: "call", outcome: "accepted", intent: decided[0]! });
    rt.audit.flushOpen();
    await rt.runs.close(run.run_id, { close_reason: "completed" });
    const events = (await rt.runs.listEvents(run.run_id, { limit: 1000 })).events;
    assert.deepEqual(
      events.map((e) => [e.category, e.payload.outcome ?? null]),
      [["run_opened", null], ["run_closed", null]],
      "neither call is an event of the run: not its outcome, not in_flight",
    );
    assert.deepEqual(
      events.at(-1)!.payload,
      { events_not_recorded: 2 },
      "the run counts both calls decided during its close that failed",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
