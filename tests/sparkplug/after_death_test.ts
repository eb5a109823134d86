/**
 * Nothing of the edge node follows its NDEATH on a stop: a poll pass's changes queued just before
 * (their DDATA due a microtask later) and the work a write's completion starts while the session
 * ends gracefully (a ring replay, the answers, the births waiting) are not published after the
 * node declared itself dead -- a host would read data, or births, of a node it holds dead.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { MAX_IN_FLIGHT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";

function update(deviceId: string, value: number): PublishedEvent {
  return {
    id: 1,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: deviceId,
      signal_id: "a",
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

Deno.test("nothing is published after the NDEATH of a stop: not a poll's DDATA due, nor what a completed write starts", async () => {
  const caps = (d: string) => deviceCaps(P, d, { signals: [signalSpec("a", "double")] });
  const provider = { id: P, available: true, devices: [caps("dev0")] };
  const r = edgeNodeRig({ providers: [provider], hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  // Writes at their bound: a new device's DBIRTH waits for a write to complete.
  while (r.session.inFlight < MAX_IN_FLIGHT) r.node.rebirth();
  provider.devices = [caps("dev0"), caps("dev1")];
  r.changed(P);
  // A poll pass's change, its DDATA due a microtask later, and then the stop.
  r.emit(update("dev0", 1.5));
  const stopping = r.node.stop();
  await flushMicrotasks();
  // The broker confirms the writes (the NDEATH with them) while the session ends.
  while (r.session.complete() > 0) await flushMicrotasks();
  await stopping;
  const topics = r.session.published.map((m) => m.topic);
  const death = topics.indexOf("spBv1.0/g/NDEATH/n");
  assert.ok(death >= 0, "NDEATH published");
  assert.deepEqual(topics.slice(death + 1), [], "nothing after the NDEATH");
});
