/**
 * An NCMD `Node Control/E-Stop` that arrives on a session the node has already left -- its
 * primary host went offline, the NDEATH went out, and the session is being ended while the next
 * one is not open yet -- is still taken: the latch comes first whatever the connection does
 * (docs/sparkplug.md). MQTT.js hands on the packets it parsed before a forced end (HeldSession's
 * `holdEnd`), so a command can reach the node in that window. Other commands from such a session
 * stay dropped. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { type EdgeNodeRig, edgeNodeRig } from "./_edge_node_rig.ts";

const NCMD = "spBv1.0/g/NCMD/n";
const ESTOP = { name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true };
const REBIRTH = { name: "Node Control/Rebirth", datatype: DataType.Boolean, boolean_value: true };

/**
 * Born with the primary host online, then left for it: the old session's end() still waits.
 * Every e-stop latches at once (the rig's `latchEstops`).
 */
async function leftForHost(): Promise<EdgeNodeRig> {
  const rig = edgeNodeRig({ primaryHostId: "scada", latchEstops: true, holdEnd: true });
  await rig.online();
  await rig.hostState(true, 1);
  assert.ok(rig.node.online);
  await rig.hostState(false, 2);
  const old = rig.session;
  assert.ok(
    old.published.some((m) => m.topic === "spBv1.0/g/NDEATH/n"),
    "the NDEATH went out",
  );
  assert.ok(old.ending, "the old session is being ended");
  assert.equal(rig.sessions.length, 1, "the next session is not open yet");
  return rig;
}

/** Ends the old session and lets the next one open and come up (waiting for the host). */
async function nextSession(rig: EdgeNodeRig): Promise<void> {
  rig.sessions[0]!.ended();
  await flushMicrotasks();
  await rig.clock.advanceAsync(0);
  assert.equal(rig.sessions.length, 2, "a new session");
  rig.session.up();
  await flushMicrotasks();
}

Deno.test("an NCMD e-stop on the session being ended after the NDEATH is taken; its answer is kept for the next births", async () => {
  const rig = await leftForHost();
  rig.sessions[0]!.deliver(NCMD, encode({ timestamp: 1, metrics: [ESTOP] }));
  assert.deepEqual(rig.estops, ["Sparkplug NCMD Node Control/E-Stop"], "the latch, at once");
  await flushMicrotasks();
  assert.equal(rig.status.estopLatched, true);
  assert.equal(rig.node.counts.commandsAccepted, 1);
  // The answer goes out with the next births (the host saw this session's NDEATH).
  await nextSession(rig);
  await rig.hostState(true, 3);
  assert.ok(rig.node.online, "born again");
  assert.deepEqual(rig.answers(), [["Node Control/E-Stop: OK", true]]);
  await rig.stop();
});

Deno.test("other commands on the session being ended are dropped, as before", async () => {
  const rig = await leftForHost();
  const before = { ...rig.node.counts };
  rig.sessions[0]!.deliver(
    NCMD,
    encode({ timestamp: 1, metrics: [REBIRTH, { ...ESTOP, boolean_value: false }] }),
  );
  rig.sessions[0]!.deliver(
    "spBv1.0/g/DCMD/n/d1",
    encode({ timestamp: 1, metrics: [{ name: "x", int_value: 1 }] }),
  );
  // A retained copy of an e-stop is not taken on any session.
  rig.sessions[0]!.deliver(NCMD, encode({ timestamp: 1, metrics: [ESTOP] }), true);
  await flushMicrotasks();
  assert.deepEqual(rig.estops, []);
  assert.equal(rig.status.estopLatched, false);
  assert.deepEqual(rig.node.counts, before, "nothing counted: dropped");
  await nextSession(rig);
  await rig.stop();
});
