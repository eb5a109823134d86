/**
 * The broker's acknowledgement of the node's NDEATH and an NCMD in one read (one TCP segment):
 * MQTT.js hands both on in one turn, the NCMD before or after the acknowledgement, and the node's
 * continuation of the NDEATH write may run before the NCMD is heard or after it. Whatever the
 * order, an NCMD `Node Control/E-Stop` is taken (the latch), its answer is kept for the next
 * births, and nothing is published on the session after its NDEATH. For both NDEATHs the node
 * writes on a live session: the primary host going offline, and stop().
 *
 * The node among doubles (tests/sparkplug/_edge_node_rig.ts): a real broker gives no handle on
 * which packets share a read. The session's end waits (`holdEnd`), its listeners still heard, as
 * MQTT.js hands on the packets it parsed before an end.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const NCMD = "spBv1.0/g/NCMD/n";
const NDEATH = "spBv1.0/g/NDEATH/n";
const ESTOP = [{ name: "Node Control/E-Stop", datatype: 11, boolean_value: true }];

/** In one read: the NCMD before the acknowledgement, right after it, or after its continuation. */
const ORDERS = ["ncmd, ack", "ack, ncmd", "ack, continuation, ncmd"] as const;

/** What `session` published after its NDEATH (topics). */
function afterDeath(published: readonly { topic: string }[]): string[] {
  const i = published.findIndex((m) => m.topic === NDEATH);
  assert.ok(i >= 0, "the NDEATH was written");
  return published.slice(i + 1).map((m) => m.topic);
}

/** The ack of the held NDEATH and the NCMD e-stop, delivered to `rig`'s session in `order`. */
async function oneRead(
  rig: ReturnType<typeof edgeNodeRig>,
  order: typeof ORDERS[number],
): Promise<void> {
  const session = rig.session;
  assert.equal(session.inFlight, 1, "the NDEATH is in flight");
  const ncmd = () => rig.command(NCMD, ESTOP);
  if (order === "ncmd, ack") {
    ncmd();
    session.complete();
  } else if (order === "ack, ncmd") {
    session.complete();
    ncmd();
  } else {
    session.complete();
    await flushMicrotasks();
    ncmd();
  }
  await flushMicrotasks();
}

for (const order of ORDERS) {
  Deno.test(`the primary host going offline: NDEATH's ack and an NCMD e-stop in one read (${order})`, async () => {
    const rig = edgeNodeRig({ primaryHostId: "scada", latchEstops: true, holdEnd: true });
    await rig.online();
    await rig.hostState(true, 1);
    assert.ok(rig.node.online, "born once the host is online");
    const first = rig.session;
    first.hold = true;
    await rig.hostState(false, 1);
    await oneRead(rig, order);
    assert.deepEqual(rig.estops, ["Sparkplug NCMD Node Control/E-Stop"], "the e-stop is taken");
    first.complete();
    first.ended();
    await flushMicrotasks();
    assert.deepEqual(afterDeath(first.published), [], "nothing after the NDEATH");
    // The next session, once the host is back: its births carry the latch, then the answer.
    assert.notEqual(rig.session, first, "a new session");
    rig.session.up();
    await flushMicrotasks();
    await rig.hostState(true, 2);
    assert.ok(rig.node.online);
    const nbirth = rig.session.published.find((m) => m.topic === "spBv1.0/g/NBIRTH/n");
    const latched = (nbirth?.payload.metrics ?? []).find((m) => m.name === "Runtime/Estop Latched");
    assert.equal(latched?.boolean_value, true, "the births carry the latch");
    assert.deepEqual(rig.answers().map(([v]) => v), ["Node Control/E-Stop: OK"]);
    await rig.stop();
  });

  Deno.test(`stop(): NDEATH's ack and an NCMD e-stop in one read (${order})`, async () => {
    const rig = edgeNodeRig({ latchEstops: true, holdEnd: true });
    await rig.online();
    assert.ok(rig.node.online);
    const session = rig.session;
    session.hold = true;
    const stopping = rig.node.stop();
    await flushMicrotasks();
    await oneRead(rig, order);
    assert.deepEqual(rig.estops, ["Sparkplug NCMD Node Control/E-Stop"], "the e-stop is taken");
    session.complete();
    session.ended();
    await stopping;
    assert.deepEqual(afterDeath(session.published), [], "nothing after the NDEATH");
    assert.equal(rig.sessions.length, 1, "no new session after stop()");
  });
}
