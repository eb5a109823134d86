/**
 * The node metric changes kept while the node was not online go out after the next births, oldest
 * first, before the present (docs/sparkplug.md, Store and forward: "the host gets the history
 * first, then the present"). An answer to a command is the present. With `max_message_bytes` a
 * kept change may be split in parts; the replay (#drainNode) stops at one whose parts do not all
 * fit under MAX_IN_FLIGHT though a write is still free, and an NCMD's answer took that free write:
 * `Runtime/Command Result` went out live ahead of the rest of the kept history. It waits for it
 * now. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts) whose writes complete when
 * the test says so: a real broker gives no handle on the writes in flight.
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { DataType, MAX_IN_FLIGHT, MAX_NODE_CHANGES_KEPT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const estop = (latched: boolean): PublishedEvent => ({
  id: 1,
  event: { kind: "estop_change", latched, reason: null, cause: null, timestamp_ms: 0 },
});

/** Two mode names that fit an NDATA under 1024 bytes alone, not with the latch beside them. */
const LONG_MODES = ["A".repeat(970), "B".repeat(970)];
const NDATA = "spBv1.0/g/NDATA/n";

Deno.test("SparkplugEdgeNode: an NCMD answered while the replay of kept node changes stops at a split goes out after the last kept change", async () => {
  const r = edgeNodeRig({ hold: true, maxMessageBytes: 1024, recordCalls: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  r.session.cut();
  await flushMicrotasks();

  // Each change while away is mode and latch together: two parts each. The NBIRTH and 499 of them
  // leave one write free, too few for the next.
  const changes = 600;
  assert.ok(changes <= MAX_NODE_CHANGES_KEPT && 1 + 2 * changes > MAX_IN_FLIGHT);
  for (let i = 0; i < changes; i++) {
    r.clock.advance(1);
    r.status.mode = LONG_MODES[i % 2]!;
    r.status.estopLatched = i % 2 === 0;
    r.emit(estop(r.status.estopLatched));
    await flushMicrotasks();
  }
  // Back to a mode the NBIRTH carries under the bound: one part, the last kept.
  r.clock.advance(1);
  r.status.mode = "MANUAL";
  r.emit(estop(r.status.estopLatched));
  await flushMicrotasks();

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  assert.equal(r.session.inFlight, MAX_IN_FLIGHT - 1, "the replay stopped at a split, one free");

  // The host asks for the e-stop meanwhile: the node answers it.
  r.command("spBv1.0/g/NCMD/n", [
    { name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  for (let round = 0; round < 10 && r.session.inFlight > 0; round++) {
    r.session.complete();
    await flushMicrotasks();
  }
  assert.equal(r.session.inFlight, 0, "every write completed within 10 rounds");

  const resultAlias = r.nodeAlias("Runtime/Command Result");
  const ndata = r.session.published.filter((m) => m.topic === NDATA);
  const historical = ndata.map((m) => (m.payload.metrics ?? []).every((x) => x.is_historical));
  assert.equal(historical.filter((h) => h).length, 2 * changes + 1, "every kept change");
  const answer = ndata.findIndex((m) =>
    (m.payload.metrics ?? []).some((x) =>
      x.alias === resultAlias && x.string_value === "Node Control/E-Stop: OK"
    )
  );
  assert.ok(answer >= 0, "the e-stop was answered");
  assert.ok(
    historical.lastIndexOf(true) < answer,
    `the answer (NDATA #${answer}) went out before kept changes of the outage (the last: ` +
      `#${historical.lastIndexOf(true)})`,
  );
  // On the wire as by seq: the answer's seq follows the last kept part's.
  const last = ndata[historical.lastIndexOf(true)]!;
  assert.equal(
    Number(ndata[answer]!.payload.seq),
    (Number(last.payload.seq) + 1) % 256,
    "the answer follows the last kept part",
  );
  await r.stop();
});
