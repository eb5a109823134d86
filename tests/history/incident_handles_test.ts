/**
 * An incident names its devices by their parts, never by re-splitting a joined
 * `provider/device`: a provider id may hold a "/" (the configuration allows it), a device id too
 * (ADPP allows any string).
 */
import assert from "node:assert/strict";
import { incidentRig } from "./_incident_rig.ts";

Deno.test("IncidentRecorder records a device loss of a provider whose id holds a '/' with that device's signals", async () => {
  const { clock, incidents, poll, feed, loss, session } = incidentRig();
  await session(async () => {
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
    loss("pump", "line/a");
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
  });
});
