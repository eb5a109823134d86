/**
 * `sparkplug.max_message_bytes` and the in-flight bound (MAX_IN_FLIGHT): a DDATA/NDATA split into
 * parts goes out whole or not at all. A split that found room for its first parts only handed
 * those over, and the node metric change (#publishNode) was sent again whole once a write
 * completed: the host got the first parts twice. The node runs among doubles
 * (tests/sparkplug/_edge_node_rig.ts), whose held writes show the bound.
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { MAX_IN_FLIGHT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const estop = (latched: boolean): PublishedEvent => ({
  id: 1,
  event: { kind: "estop_change", latched, reason: null, cause: null, timestamp_ms: 0 },
});

/** A mode name that fits an NDATA under 1024 bytes alone, not with the latch beside it. */
const LONG_MODE = "M".repeat(970);
const NDATA = "spBv1.0/g/NDATA/n";

Deno.test("SparkplugEdgeNode: an NDATA split over max_message_bytes with room for one part only goes out whole after a write completes, each part once", async () => {
  const r = edgeNodeRig({ hold: true, maxMessageBytes: 1024 });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const modeAlias = r.nodeAlias("Runtime/Mode");
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  // The broker stalls: rebirths (an NBIRTH each, no devices) fill the writes to one below the bound.
  while (r.session.inFlight < MAX_IN_FLIGHT - 1) r.node.rebirth();
  assert.equal(r.session.inFlight, MAX_IN_FLIGHT - 1);
  const from = r.session.published.length;
  // Mode and latch change together: two parts, room for one.
  r.status.mode = LONG_MODE;
  r.status.estopLatched = true;
  r.emit(estop(true));
  await flushMicrotasks();
  const early = r.session.published.slice(from).filter((m) => m.topic === NDATA);
  assert.deepEqual(early, [], "no part goes out while the split does not fit whole");
  // Completing the writes lets it out; before, each completed write handed over its first part
  // again (a flood of duplicates that never drained): a bounded number of rounds.
  for (let round = 0; round < 5 && r.session.complete() > 0; round++) await flushMicrotasks();
  assert.equal(r.session.inFlight, 0, "every write completed within 5 rounds");
  const ndata = r.session.published.slice(from).filter((m) => m.topic === NDATA);
  assert.equal(ndata.length, 2, "the change went out split in two");
  const of = (alias: unknown) =>
    ndata.flatMap((m) => (m.payload.metrics ?? []).filter((x) => x.alias === alias));
  assert.deepEqual(of(modeAlias).map((x) => x.string_value), [LONG_MODE], "the mode once");
  assert.deepEqual(of(latchAlias).map((x) => x.boolean_value), [true], "the latch once");
  const seqs = ndata.map((m) => Number(m.payload.seq));
  assert.equal(seqs[1], (seqs[0]! + 1) % 256, "consecutive seq");
  await r.stop();
});

Deno.test("SparkplugEdgeNode: an NDATA with a node metric alone over max_message_bytes goes out once without it, not again at each completed write", async () => {
  const r = edgeNodeRig({ hold: true, maxMessageBytes: 1024 });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  const from = r.session.published.length;
  r.status.mode = "M".repeat(1024); // alone over the bound: left out, counted
  r.status.estopLatched = true;
  r.emit(estop(true));
  await flushMicrotasks();
  for (let round = 0; round < 5 && r.session.complete() > 0; round++) await flushMicrotasks();
  assert.equal(r.session.inFlight, 0, "every write completed within 5 rounds");
  const ndata = r.session.published.slice(from).filter((m) => m.topic === NDATA);
  assert.equal(ndata.length, 1, `${ndata.length} NDATA`);
  assert.deepEqual(
    (ndata[0]!.payload.metrics ?? []).map((x) => [x.alias, x.boolean_value]),
    [[latchAlias, true]],
  );
  assert.equal(r.node.counts.tooLargeDropped, 1);
  await r.stop();
});
