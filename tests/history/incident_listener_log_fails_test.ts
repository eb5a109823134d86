/**
 * An incident listener that throws is contained and its failure said at WARN; a custom logger
 * that throws on that line must not take the incident away from the listeners after it (the run
 * registry records it as an event of the open run), nor throw out of tellNow (a run's open or
 * close settles the incidents through it; a microtask that throws ends the runtime).
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import { MAX_PENDING_INCIDENTS, MERGE_WINDOW_MS } from "../../src/history/mod.ts";
import { incidentRig } from "./_incident_rig.ts";

/** A LineLogger whose sink throws on every line that includes `failing`. */
function failingOn(failing: string): LineLogger {
  return new LineLogger({
    level: "debug",
    journald: false,
    now: () => Date.now(),
    write: (line) => {
      if (line.includes(failing)) throw new Error("log sink failed");
    },
  });
}

Deno.test("IncidentRecorder tells the listeners after a throwing one when its WARN line throws too (a custom logger)", async () => {
  const log = failingOn("incident listener failed");
  const { clock, incidents, loss, estop, session } = incidentRig({ log });
  let thrown = 0;
  incidents.onIncident(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (incident)");
  });
  incidents.onIncidentJoined(() => {
    thrown++;
    throw new Error("a peripheral subsystem's bug (joined)");
  });
  const begun: string[] = [];
  incidents.onIncident((h) => begun.push(h.trigger));
  const joined: string[] = [];
  incidents.onIncidentJoined((j) => joined.push(j.trigger));
  await session(async () => {
    loss("d0");
    // Before: the WARN line's throw left tellNow at the faulty listener: the one after it was
    // never told, and the throw reached tellNow's caller.
    incidents.tellNow();
    clock.advance(MERGE_WINDOW_MS / 2);
    estop();
    incidents.tellNow();
    assert.equal(thrown, 2);
    assert.deepEqual(begun, ["device_loss"]);
    assert.deepEqual(joined, ["estop"]);
    clock.advance(60_000);
    await incidents.settled();
  });
});

Deno.test("IncidentRecorder still takes an e-stop's incident among MAX_PENDING_INCIDENTS waiting when its 'written early' line throws (a custom logger)", async () => {
  const { clock, incidents, loss, estop, session } = incidentRig({
    config: { incidentAfterS: 30 },
    log: failingOn("written early"),
  });
  const begun: string[] = [];
  incidents.onIncident((h) => begun.push(h.trigger));
  await session(async () => {
    for (let i = 0; i < MAX_PENDING_INCIDENTS; i++) {
      loss(`d${i}`);
      clock.advance(MERGE_WINDOW_MS + 100);
    }
    // Before: the line's throw (said before the oldest is written) left the e-stop's trigger:
    // no incident for it, and the oldest still waiting.
    estop();
    incidents.tellNow();
    await incidents.settled();
    assert.equal(begun.at(-1), "estop");
    assert.equal(begun.length, MAX_PENDING_INCIDENTS + 1);
    assert.ok(incidents.list().some((h) => h.devices[0] === "p0/d0"), "the oldest written early");
    clock.advance(60_000);
    await incidents.settled();
    assert.equal(incidents.list().length, MAX_PENDING_INCIDENTS + 1);
    assert.equal(incidents.status().dropped, 0);
  });
});
