/**
 * OWN_BDSEQS_KEPT (edge_node.ts, 60961fb9): an NBIRTH of one of the node's own earlier connections
 * that a stalled broker routes late, after the next connection subscribed to its own NBIRTH topic,
 * is not taken for another client's (runtime_sparkplug_foreign_births_total); the bdSeq of the
 * latest OWN_BDSEQS_KEPT connections are known as the node's own, one further back is not (the
 * bound is a bound). The node among doubles (HeldSession per connection, no bdSeq store: the first
 * connection's bdSeq is 0, each reconnect the next).
 */
import assert from "node:assert/strict";
import { encode, OWN_BDSEQS_KEPT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const NBIRTH = "spBv1.0/g/NBIRTH/n";

Deno.test("SparkplugEdgeNode: a late NBIRTH of one of its latest OWN_BDSEQS_KEPT connections is its own, not another client's; one further back is another client's", async () => {
  const rig = edgeNodeRig();
  await rig.online();
  const reconnect = async () => {
    const before = rig.sessions.length;
    rig.session.down();
    await flushMicrotasks();
    await rig.clock.advanceAsync(60_000);
    assert.equal(rig.sessions.length, before + 1, "a new session opened");
    rig.session.up();
    await flushMicrotasks();
    assert.ok(rig.node.online, "born on the new connection");
  };
  // The broker routes a birth of that bdSeq to the node's subscription now.
  const lateBirth = async (bdSeq: number) => {
    rig.session.deliver(
      NBIRTH,
      encode({
        timestamp: 1,
        seq: 0,
        metrics: [{ name: "bdSeq", datatype: 8, long_value: bdSeq }],
      }),
    );
    await flushMicrotasks();
  };
  const bdSeqOfLatestBirth = () => {
    const nbirth = rig.session.published.findLast((m) => m.topic === NBIRTH);
    return Number(nbirth?.payload.metrics?.find((m) => m.name === "bdSeq")?.long_value);
  };
  try {
    assert.equal(bdSeqOfLatestBirth(), 0);
    // The previous connection's birth, late: its own.
    await reconnect();
    assert.equal(bdSeqOfLatestBirth(), 1);
    await lateBirth(0);
    assert.equal(rig.node.counts.foreignBirths, 0, "the previous connection's late NBIRTH");

    // OWN_BDSEQS_KEPT connections back, each of them its own.
    for (let i = 1; i < OWN_BDSEQS_KEPT; i++) await reconnect();
    const now = bdSeqOfLatestBirth();
    assert.equal(now, OWN_BDSEQS_KEPT);
    for (let back = 1; back <= OWN_BDSEQS_KEPT; back++) await lateBirth(now - back);
    assert.equal(rig.node.counts.foreignBirths, 0, `the latest ${OWN_BDSEQS_KEPT} connections'`);

    // One connection more: the first one's bdSeq is OWN_BDSEQS_KEPT + 1 back, no longer known.
    await reconnect();
    await lateBirth(0);
    assert.equal(rig.node.counts.foreignBirths, 1, "a bdSeq beyond OWN_BDSEQS_KEPT back");
    await lateBirth(1);
    assert.equal(rig.node.counts.foreignBirths, 1, `${OWN_BDSEQS_KEPT} back is still its own`);
  } finally {
    await rig.stop();
  }
});
