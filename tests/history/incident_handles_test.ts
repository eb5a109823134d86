/**
 * An incident names its devices by their parts, never by re-splitting a joined
 * `provider/device`: a provider id may hold a "/" (the configuration allows it), a device id too
 * (ADPP allows any string).
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { IncidentRecorder } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { testLogger } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("IncidentRecorder records a device loss of a provider whose id holds a '/' with that device's signals", async () => {
  const { clock, history, files, poll, feed } = handFedHistory({ diskMaxBytes: 0 });
  const config = { ...testConfig().history, incidentBeforeS: 1, incidentAfterS: 1 };
  const bus = new EventBus();
  const incidents = new IncidentRecorder({
    config,
    history,
    files,
    dir: "/data/history/incidents",
    clock,
    log: testLogger(),
  });
  await history.start();
  await incidents.start(bus);
  try {
    poll("line/a", "pump", 1);
    // Another device whose joined handle is the same text: `line` / `a/pump`.
    feed({
      providerId: "line",
      deviceId: "a/pump",
      pollable: ["y"],
      signals: new Map([["y", {
        value: { type: "double", double: 2 },
        quality: "OK",
        timestampMs: clock.wall,
        receivedMono: clock.mono,
      }]]),
      lastPollMs: 0,
      lastPollMono: 0,
      available: true,
    });
    bus.publish({
      kind: "device_availability",
      provider_id: "line/a",
      device_id: "pump",
      available: false,
      timestamp_ms: clock.nowMs(),
    });
    clock.advance(5_000);
    await incidents.settled();
    const [header] = incidents.list();
    assert.ok(header !== undefined, "no incident recorded");
    const { signals } = await incidents.get(header.incident_id);
    assert.deepEqual(
      signals.map((s) => [s.provider_id, s.device_id, s.signal_id, s.samples[0]?.[1]]),
      [["line/a", "pump", "x", 1]],
      "the incident holds another device's signals",
    );
  } finally {
    await incidents.stop();
    await history.stop();
  }
});
