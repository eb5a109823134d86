/**
 * An incident lists at most INCIDENT_MAX_TRIGGERS triggers besides its lead (`also`): a device
 * flapping (or an alarm, or an e-stop pressed again and again) within MERGE_WINDOW_MS joins it each
 * time, and each join was listed in the record's header and told to the run (an
 * `incident_trigger` event) without bound. Past the bound the weakest trigger, of those the last
 * to join, is left out and counted (`triggers_not_listed`), and a trigger left out is not told: an
 * e-stop or a FAULT entry is never the one left out while a weaker one is listed. In process: the
 * recorder over a hand-fed History on a manual clock, the triggers published as the runtime does.
 */
import assert from "node:assert/strict";
import {
  INCIDENT_MAX_TRIGGERS,
  type IncidentJoined,
  MERGE_WINDOW_MS,
} from "../../src/history/mod.ts";
import { macrotask } from "../helpers/turns.ts";
import { incidentRig } from "./_incident_rig.ts";

/** Device losses beyond the bound. */
const BEYOND = 10;

Deno.test("IncidentRecorder: triggers joining an incident beyond INCIDENT_MAX_TRIGGERS are counted, not listed nor told; an e-stop or FAULT entry after the bound is listed", async () => {
  const rig = incidentRig({ config: { incidentAfterS: 5 } });
  const { clock, incidents, loss, estop, bus, files, session } = rig;
  const joined: IncidentJoined[] = [];
  incidents.onIncidentJoined((j) => joined.push(j));
  const N = INCIDENT_MAX_TRIGGERS;
  await session(async () => {
    loss("d0"); // begins the incident
    await macrotask(); // told: the joins from now on are told one by one
    for (let i = 1; i <= N + BEYOND; i++) {
      clock.advance(Math.floor(MERGE_WINDOW_MS / (2 * (N + BEYOND))));
      loss(`d${i}`);
    }
    // Then the machine faults and the operator presses the e-stop, twice: all within the window.
    bus.publish({
      kind: "mode_change",
      previous_mode: "AUTO",
      new_mode: "FAULT",
      timestamp_ms: clock.nowMs(),
    });
    estop();
    clock.advance(10);
    estop();
    assert.equal(incidents.status().pending, 1, "one incident");
    await macrotask();
    clock.advance(5_000);
    await incidents.settled();

    const [h] = incidents.list();
    assert.equal(incidents.list().length, 1);
    const loss_ = (i: number) => `device p0/d${i} lost`;
    assert.equal(h!.trigger, "estop", "the first e-stop leads");
    assert.equal(h!.also.length, N, `the bound holds: ${h!.also.length} listed`);
    // Every trigger is the lead, listed, or counted: 1 + N + BEYOND losses, a FAULT, 2 e-stops.
    const all = 1 + N + BEYOND + 3;
    assert.equal(h!.triggers_not_listed, all - 1 - N, "the rest are counted");
    assert.deepEqual(
      h!.also.map((c) => c.cause),
      [
        // The losses that joined first (the last listed made way for the stronger ones) ...
        ...Array.from({ length: N - 3 }, (_, i) => loss_(i + 1)),
        // ... the first, which led until the FAULT entry did ...
        loss_(0),
        // ... and the FAULT entry and the second e-stop, after the bound.
        "mode AUTO -> FAULT",
        "e-stop (api)",
      ],
    );
    const stored = JSON.parse((await incidents.jsonl(h!.incident_id)).split("\n")[0]!);
    assert.equal(stored.triggers_not_listed, h!.triggers_not_listed, "the file keeps it");
    assert.equal(stored.also.length, N);

    // The run is told of the joins listed as they joined: those within the bound, the FAULT
    // entry and both e-stops; none of the losses beyond it.
    assert.deepEqual(
      joined.map((j) => [j.trigger, j.leads]),
      [
        ...Array.from({ length: N }, () => ["device_loss", false]),
        ["fault", true],
        ["estop", true],
        ["estop", false],
      ],
    );
  });

  // Read back at the next start with its count.
  const again = incidentRig({ config: { incidentAfterS: 5 }, files });
  await again.session(async () => {
    const [h] = again.incidents.list();
    assert.equal(h!.also.length, N);
    assert.equal(h!.triggers_not_listed, BEYOND + 3);
    const stored = JSON.parse((await again.incidents.jsonl(h!.incident_id)).split("\n")[0]!);
    assert.equal(stored.triggers_not_listed, BEYOND + 3);
  });
});
