/**
 * An incident's run event says how many of its triggers it leaves out: a provider of many devices
 * going down loses them all in one step, and the incident they begin lists at most
 * INCIDENT_MAX_TRIGGERS of them besides its lead (`also`), the record counting the rest
 * (`triggers_not_listed`). The run's `incident` event listed the same `also` and no count, so a
 * reader of the run could not tell triggers were left out. It now carries `triggers_not_listed`
 * (as the record's header then). In process: the recorder over a hand-fed History on a manual
 * clock, wired to a run registry over in-memory files as the kernel wires them.
 */
import assert from "node:assert/strict";
import { INCIDENT_MAX_TRIGGERS } from "../../src/history/mod.ts";
import { registryOn, RunJournalFaultFiles } from "../runs/_run_fault_rig.ts";
import { incidentRig } from "./_incident_rig.ts";

/** Devices lost beyond the bound, in the same step. */
const BEYOND = 7;

Deno.test("Runs: an incident event says how many triggers its incident leaves out (triggers_not_listed), 0 when none", async () => {
  const registry = registryOn(new RunJournalFaultFiles());
  await registry.start();
  const { run } = await registry.open({});
  const rig = incidentRig();
  const { clock, incidents, loss, session } = rig;
  incidents.onIncident((i) => registry.recordIncident(i)); // as src/app/kernel.ts
  try {
    await session(async () => {
      // Every device of the provider lost at once: one incident, its first loss leading.
      const devices = 1 + INCIDENT_MAX_TRIGGERS + BEYOND;
      for (let i = 0; i < devices; i++) loss(`d${i}`);
      clock.advance(5_000);
      // A lone loss later: nothing left out.
      loss("e0");
      clock.advance(5_000);
      await incidents.settled();
      const [lone, many] = incidents.list();
      assert.equal(many!.triggers_not_listed, BEYOND, "the record counts them");
      assert.equal(lone!.triggers_not_listed, 0);

      const { events } = await registry.listEvents(run.run_id, {});
      const told = events.filter((e) => e.category === "incident").map((e) => {
        const p = e.payload as { incident_id: string; also: unknown[] };
        return [p.incident_id, p.also.length, e.payload.triggers_not_listed];
      });
      assert.deepEqual(told, [
        [many!.incident_id, INCIDENT_MAX_TRIGGERS, BEYOND],
        [lone!.incident_id, 0, 0],
      ], "the run's events say what the records say");
    });
  } finally {
    await registry.shutdown();
  }
});
