/**
 * A call decided while a run's close is under way names no run; if that close fails, the run
 * stays open and counts the call in its `events_not_recorded`, never also records it
 * (docs/http-api.md, "Runs"). That holds for every call decided then, whatever its audit entry:
 * a refused call (no write-ahead id) whose entry was still collapsing when the close failed, and
 * a call whose outcome the audit trail would merge with an identical call decided after the
 * failure (which is an event of the run, on its own). The close fails through the host's files,
 * the sim provider running; calls are written ahead and settled through the kernel's audit trail.
 */
import assert from "node:assert/strict";
import type { AuditIntent } from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { decision, HeldRunClosed } from "./_run_closed_files.ts";

/**
 * Opens a run, starts its close and holds its run_closed write; runs `during` then (the close
 * under way), lets the close fail, runs `after` (the run open again), closes the run for good and
 * returns its events as [category, outcome, count] and its run_closed payload.
 */
async function closeFailingAround(
  during: (rt: Kernel) => Promise<void>,
  after: (rt: Kernel) => Promise<void>,
): Promise<{ events: unknown[][]; closed: Record<string, unknown> }> {
  const dir = await Deno.makeTempDir({ prefix: "run_close_failed_merged_" });
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
    await during(rt);
    files.gate = null;
    release();
    await assert.rejects(closing, /close run/);
    files.fail = false;
    assert.equal(rt.runs.openRunId(), run.run_id, "the run stays open");
    await after(rt);
    await rt.runs.close(run.run_id, { close_reason: "completed" });
    const events = (await rt.runs.listEvents(run.run_id, { limit: 1000 })).events;
    return {
      events: events.map((e) => [e.category, e.payload.outcome ?? null, e.payload.count ?? null]),
      closed: events.at(-1)!.payload,
    };
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Kernel: a refused call decided during a run's close that failed is counted by the run, not recorded", async () => {
  const { events, closed } = await closeFailingAround(
    // Refused (no write-ahead id); its entry still collapsing when the close fails.
    (rt) =>
      Promise.resolve(rt.audit.record({
        ...decision(0),
        action: "call",
        outcome: "refused",
        reason: "refused while the close was under way",
      })),
    () => Promise.resolve(),
  );
  assert.deepEqual(
    events,
    [["run_opened", null, null], ["run_closed", null, null]],
    "the refused call is no event of the run",
  );
  assert.deepEqual(closed, { events_not_recorded: 1 }, "the run counts it");
});

for (
  const when of [
    "its outcome during the close (its entry still collapsing when the close fails)",
    "its outcome after the close failed",
  ]
) {
  Deno.test(`Kernel: a call decided during a run's close that failed, ${when}, is never merged with an identical call decided after the failure`, async () => {
    let first: AuditIntent | null = null;
    const settleFirst = (rt: Kernel) =>
      rt.audit.record({ ...decision(0), action: "call", outcome: "accepted", intent: first! });
    const duringClose = when.startsWith("its outcome during");
    const { events, closed } = await closeFailingAround(
      async (rt) => {
        first = await rt.audit.writeAhead(decision(0));
        assert.ok(first !== null);
        if (duringClose) settleFirst(rt);
      },
      async (rt) => {
        if (!duringClose) settleFirst(rt);
        // The same call again, decided once the run is open again: an event of the run.
        const second = await rt.audit.writeAhead(decision(0));
        assert.ok(second !== null);
        rt.audit.record({ ...decision(0), action: "call", outcome: "accepted", intent: second });
        rt.audit.flushOpen();
      },
    );
    assert.deepEqual(
      events,
      [["run_opened", null, null], ["call", "accepted", 1], ["run_closed", null, null]],
      "only the call decided after the failure is an event of the run, on its own (count 1)",
    );
    assert.deepEqual(closed, { events_not_recorded: 1 }, "the call decided during the close");
  });
}
