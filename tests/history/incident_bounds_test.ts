/**
 * The bounds of the incident records (incident_max_count, incident_max_bytes) and the e-stop's
 * records: a flaky device's losses must not push an e-stop's record out; the oldest record that
 * is not an e-stop's goes first, an e-stop's only when nothing else is left.
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { IncidentRecorder } from "../../src/history/mod.ts";
import type { HistoryConfig } from "../../src/config/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { testLogger } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

function rig(o: Partial<HistoryConfig>) {
  const { clock, history, files, poll } = handFedHistory({ diskMaxBytes: 0 });
  const config = { ...testConfig().history, incidentBeforeS: 1, incidentAfterS: 1, ...o };
  const bus = new EventBus();
  const incidents = new IncidentRecorder({
    config,
    history,
    files,
    dir: "/data/history/incidents",
    clock,
    log: testLogger(),
  });
  /** Publishes a trigger and lets its record be written (a window later). */
  const record = async (what: "estop" | "loss", device = "d0") => {
    poll("p0", device, 1);
    if (what === "estop") {
      bus.publish({
        kind: "estop_change",
        latched: true,
        reason: null,
        cause: "api",
        timestamp_ms: clock.nowMs(),
      });
    } else {
      bus.publish({
        kind: "device_availability",
        provider_id: "p0",
        device_id: device,
        available: false,
        timestamp_ms: clock.nowMs(),
      });
    }
    clock.advance(5_000);
    await incidents.settled();
  };
  const kept = () => incidents.list().map((h) => h.trigger).reverse();
  return { history, bus, incidents, record, kept };
}

Deno.test("incident_max_count removes the oldest record that is not an e-stop's: a flaky device's losses never push an e-stop's record out", async () => {
  const { history, bus, incidents, record, kept } = rig({ incidentMaxCount: 3 });
  await history.start();
  await incidents.start(bus);
  try {
    await record("loss");
    await record("estop");
    for (let i = 0; i < 5; i++) await record("loss");
    assert.deepEqual(
      kept(),
      ["estop", "device_loss", "device_loss"],
      "the e-stop's record was removed for device losses",
    );
    // With only e-stop records older than the newest, the oldest e-stop goes.
    await record("estop");
    await record("estop");
    await record("estop");
    assert.deepEqual(kept(), ["estop", "estop", "estop"]);
    assert.equal(incidents.status().count, 3);
  } finally {
    await incidents.stop();
    await history.stop();
  }
});

Deno.test("incident_max_bytes removes the oldest record that is not an e-stop's first too", async () => {
  // Measure one record, then keep room for three.
  const probe = rig({});
  await probe.history.start();
  await probe.incidents.start(probe.bus);
  await probe.record("loss");
  const one = probe.incidents.list()[0]!.bytes;
  await probe.incidents.stop();
  await probe.history.stop();

  const { history, bus, incidents, record, kept } = rig({ incidentMaxBytes: 3 * one + one / 2 });
  await history.start();
  await incidents.start(bus);
  try {
    await record("estop");
    for (let i = 0; i < 4; i++) await record("loss");
    assert.equal(kept()[0], "estop", "the e-stop's record was removed for device losses");
    assert.ok(incidents.status().bytes <= 3 * one + one / 2);
  } finally {
    await incidents.stop();
    await history.stop();
  }
});
