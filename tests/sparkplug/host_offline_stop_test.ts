/**
 * stop() while the NDEATH for the primary host going offline is being written: the session has
 * one NDEATH (its bdSeq is dead once), not a second one from stop(). The node among doubles
 * (tests/sparkplug/_edge_node_rig.ts): a real broker gives no handle on a write in flight.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const NDEATH = "spBv1.0/g/NDEATH/n";

Deno.test("stop() during the primary host's NDEATH publishes no second NDEATH", async () => {
  const rig = edgeNodeRig({ primaryHostId: "scada" });
  await rig.online();
  const session = rig.session;
  await rig.hostState(true, 1);
  assert.ok(rig.node.online, "born once the host is online");
  session.hold = true;
  await rig.hostState(false, 1);
  assert.equal(session.published.filter((m) => m.topic === NDEATH).length, 1, "NDEATH written");
  assert.equal(session.inFlight, 1, "the NDEATH is still in flight");
  const stopping = rig.node.stop();
  await flushMicrotasks();
  session.complete();
  await flushMicrotasks();
  session.complete();
  await stopping;
  const deaths = rig.sessions.flatMap((s) => s.published).filter((m) => m.topic === NDEATH);
  assert.equal(deaths.length, 1, `one NDEATH for the session, got ${deaths.length}`);
  assert.equal(rig.sessions.length, 1, "no new session after stop()");
});
