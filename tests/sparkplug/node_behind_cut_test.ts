/**
 * A node metric change that could not be handed over (MAX_IN_FLIGHT writes unconfirmed: a broker
 * that stalls) waits to go out when a write completes. When the connection goes away instead (a
 * stalled broker usually ends so), that change is the node's history all the same: kept at its
 * time like a change while not online, and published with is_historical after the next births.
 * Else an e-stop latched while the broker stalled and released before the node is back never
 * reaches the host. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
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

Deno.test("an e-stop latched while the writes are full and released after the connection went away reaches the host's history", async () => {
  const r = edgeNodeRig({ hold: true, recordCalls: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  // The broker stops taking writes; rebirths asked for meanwhile fill the writes in flight.
  const rebirth = { name: "Node Control/Rebirth", datatype: DataType.Boolean, boolean_value: true };
  while (r.session.inFlight < MAX_IN_FLIGHT) {
    r.command("spBv1.0/g/NCMD/n", [rebirth]);
    await flushMicrotasks();
  }
  // The latch engages: its NDATA cannot be handed over.
  r.clock.advance(10);
  const latchedAt = r.clock.nowMs();
  r.status.estopLatched = true;
  r.emit(estop(true));
  await flushMicrotasks();
  // The stalled connection ends; the operator releases the latch while the node is away.
  r.clock.advance(10);
  r.session.cut();
  await flushMicrotasks();
  r.clock.advance(10);
  r.status.estopLatched = false;
  r.emit(estop(false));
  await flushMicrotasks();

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const history = r.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n").flatMap((
    m,
  ) => (m.payload.metrics ?? []).filter((x) => x.alias === latchAlias))
    .map((x) => [x.boolean_value, x.is_historical === true, Number(x.timestamp)]);
  assert.deepEqual(
    history.map(([v, h]) => [v, h]),
    [[true, true], [false, true]],
    "the host's history has the latch and its release, in order",
  );
  assert.equal(history[0]![2], latchedAt, "the latch at its time");
  await r.stop();
});

Deno.test("node changes kept through an outage whose replay is cut off by the next connection loss reach the host after the births after", async () => {
  const r = edgeNodeRig({ hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  r.session.cut();
  await flushMicrotasks();
  // Latched and released while the node is away.
  r.clock.advance(10);
  r.status.estopLatched = true;
  r.emit(estop(true));
  await flushMicrotasks();
  r.clock.advance(10);
  r.status.estopLatched = false;
  r.emit(estop(false));
  await flushMicrotasks();
  const latchHistory = () =>
    r.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n").flatMap((m) =>
      (m.payload.metrics ?? []).filter((x) => x.alias === latchAlias)
    ).map((x) => [x.boolean_value, x.is_historical === true]);

  // Back: the births, and the replay handed over; the connection goes before it is written.
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  assert.deepEqual(latchHistory(), [[true, true], [false, true]], "handed over");
  r.session.cut();
  await flushMicrotasks();

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  assert.deepEqual(
    latchHistory(),
    [[true, true], [false, true]],
    "the replay whose writes failed goes out again after the next births",
  );
  await r.stop();
});

Deno.test("beyond MAX_NODE_CHANGES_KEPT the oldest changes go, not the e-stop latch's", async () => {
  const r = edgeNodeRig({ hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  r.session.cut();
  await flushMicrotasks();
  // Latched at the start of a long outage, then more mode changes than are kept.
  r.clock.advance(10);
  r.status.estopLatched = true;
  r.emit(estop(true));
  await flushMicrotasks();
  for (let i = 0; i < MAX_NODE_CHANGES_KEPT; i++) {
    r.clock.advance(1);
    r.status.mode = i % 2 === 0 ? "MANUAL" : "IDLE";
    r.emit({
      id: 1,
      event: { kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 0 },
    });
    await flushMicrotasks();
  }
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const ndata = r.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n");
  assert.equal(ndata.length, MAX_NODE_CHANGES_KEPT, "the bound holds");
  assert.ok(
    (ndata[0]!.payload.metrics ?? []).some((x) =>
      x.alias === latchAlias && x.boolean_value === true && x.is_historical === true
    ),
    "the latch of the outage's start is in the host's history",
  );
  assert.equal(r.node.counts.storeDropped, 1);
  await r.stop();
});
