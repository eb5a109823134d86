/**
 * A trigger joining an incident after the run's `incident` event was written (an e-stop within
 * MERGE_WINDOW_MS of an alarm's incident) is in the run too: an `incident_trigger` event naming
 * the incident, the joining trigger, its own time and whether it now leads the incident. Without
 * it the run showed the alarm's incident only, and an operator reading the run afterwards could
 * not tell the incident had an e-stop among its triggers. The real runtime over the programmable
 * provider (a child process), the alarm engine raising the alarm, the e-stop over loopback HTTP,
 * the run's events read back over HTTP and checked against the OpenAPI document (apiFetch).
 * And an incident told a moment after its trigger is the run's that was open at its trigger: a
 * close or an open asked for in the same step neither cuts it from the closing run nor gives it to
 * the opening one.
 */
import assert from "node:assert/strict";
import { MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { tempDir } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { TestClock } from "../helpers/programmable_provider.ts";
import { alarmThenJoiningEstop, HOT, probeFile, startRig, T0 } from "./_history_helpers.ts";

const history = { incidentBeforeS: 10, incidentAfterS: 3, diskMaxBytes: 0 };

/** The e-stop comes this long after the alarm (within MERGE_WINDOW_MS: it joins). */
const LATER_MS = 500;

Deno.test("Runs: an e-stop joining an alarm's incident is an incident_trigger event of the open run (its incident, its time, leading it), as is its FAULT entry", async () => {
  assert.ok(LATER_MS < MERGE_WINDOW_MS);
  const dataDir = tempDir("incident-run-trigger-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const alarmAt = T0 + 20_000;
  const estopAt = alarmAt + LATER_MS;
  const rig = await startRig({ history, dataDir, clock, inventoryFile, alarms: [HOT] });
  try {
    const opened = await apiFetch(`${rig.base}/v0/runs`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ experiment_label: "join" }),
    });
    assert.equal(opened.status, 200);
    const runId = (await opened.json()).run.run_id;
    await alarmThenJoiningEstop(rig, {
      alarmAt,
      laterMs: LATER_MS,
      afterS: history.incidentAfterS,
      reason: "smoke",
    });
    const h = await rig.incident();
    assert.equal(h.trigger, "estop", `the e-stop leads the record: ${JSON.stringify(h)}`);
    const id = h.incident_id;
    const link = `/v0/incidents/${encodeURIComponent(id)}`;

    // deno-lint-ignore no-explicit-any
    const events = (await rig.json(`/v0/runs/${runId}/events`)).events as any[];
    const ofIncident = events
      .filter((e) => e.category === "incident" || e.category === "incident_trigger")
      .map((e) => [e.category, e.type, e.occurred_at_epoch_ms, e.payload]);
    assert.deepEqual(ofIncident, [
      ["incident", "alarm", alarmAt, {
        incident_id: id,
        trigger: "alarm",
        cause: "alarm hot: hi too hot",
        also: [],
        triggers_not_listed: 0,
        link,
      }],
      ["incident_trigger", "fault", estopAt, {
        incident_id: id,
        trigger: "fault",
        cause: "mode IDLE -> FAULT",
        leads: true,
        link,
      }],
      ["incident_trigger", "estop", estopAt, {
        incident_id: id,
        trigger: "estop",
        cause: "e-stop (api)",
        leads: true,
        link,
      }],
    ], `the run names every trigger of the incident: ${JSON.stringify(events)}`);
  } finally {
    await rig.rt.stop();
  }
});

/** The categories and types of a run's events, and its run_opened's count of events of no run. */
async function runEvents(rig: Awaited<ReturnType<typeof startRig>>, runId: string) {
  const events = (await rig.rt.runs.listEvents(runId)).events;
  return {
    kinds: events.map((e) => `${e.category} ${e.type}`),
    between: events[0]!.payload.safety_events_between_runs,
  };
}

/** A runtime with history whose e-stop is triggered in tests, stopped after `fn`. */
async function withBoundaryRig(fn: (rig: Awaited<ReturnType<typeof startRig>>) => Promise<void>) {
  const dataDir = tempDir("incident-run-boundary-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const rig = await startRig({ history, dataDir, clock, inventoryFile });
  try {
    await fn(rig);
  } finally {
    await rig.rt.stop();
  }
}

Deno.test("Runs: an e-stop in the step a close of the open run is asked for is that run's, and so is its incident (not cut from it as of no run)", async () => {
  await withBoundaryRig(async (rig) => {
    const first = (await rig.rt.runs.open({})).run;
    // One step: the close is asked for (it begins a moment later), then the e-stop latches (its
    // incident is told a moment later, once the triggers of its step joined it).
    const closing = rig.rt.runs.close(first.run_id, { close_reason: "completed" });
    const stopped = rig.rt.estop.trigger("smoke");
    await closing;
    await stopped;
    const closed = await runEvents(rig, first.run_id);
    assert.deepEqual(
      closed.kinds.filter((k) => k === "estop trigger" || k.startsWith("incident")),
      ["estop trigger", "incident estop"],
      `the e-stop came while the run was open: its incident is the run's: ${closed.kinds}`,
    );
  });
});

Deno.test("Runs: an e-stop in the step an open is asked for is no run's, and neither is its incident (not an event of the run that opens)", async () => {
  await withBoundaryRig(async (rig) => {
    // One step: the open is asked for (the run starts a moment later), then the e-stop latches.
    const opening = rig.rt.runs.open({});
    const stopped = rig.rt.estop.trigger("smoke");
    const run = (await opening).run;
    await stopped;
    const opened = await runEvents(rig, run.run_id);
    assert.deepEqual(
      opened.kinds.filter((k) => k === "estop trigger" || k.startsWith("incident")),
      [],
      `the e-stop came before the run started: neither it nor its incident is the run's: ${opened.kinds}`,
    );
    // deno-lint-ignore no-explicit-any
    const between = opened.between as any;
    assert.deepEqual(
      [between?.count, between?.estop_triggers],
      [3, 1],
      "counted among the safety events of no run: the e-stop, its FAULT entry, its incident",
    );
  });
});
