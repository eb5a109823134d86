/**
 * A node metric change that could not be handed over (MAX_IN_FLIGHT writes unconfirmed: a broker
 * that stalls) waits to go out when a write completes. When the connection goes away instead (a
 * stalled broker usually ends so), that change is the node's history all the same: kept at its
 * time like a change while not online, and published with is_historical after the next births.
 * Else an e-stop latched while the broker stalled and released before the node is back never
 * reaches the host. The same when the broker takes writes again with the change overtaken
 * meanwhile -- an e-stop latched and released while it stalled: the first change left behind goes
 * out at its time (is_historical), then the present; else the host's NDATA compares the released
 * latch with what it last got and says nothing. The node runs among doubles
 * (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import type { RuntimeMode } from "../../src/config/mod.ts";
import { DataType, MAX_IN_FLIGHT, MAX_NODE_CHANGES_KEPT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

type Rig = ReturnType<typeof edgeNodeRig>;

const estop = (latched: boolean): PublishedEvent => ({
  id: 1,
  event: { kind: "estop_change", latched, reason: null, cause: null, timestamp_ms: 0 },
});

const REBIRTH = { name: "Node Control/Rebirth", datatype: DataType.Boolean, boolean_value: true };

/** A node online with its births written, its writes held until the test completes them. */
async function onlineHeld(o: { recordCalls?: boolean } = {}): Promise<Rig> {
  const r = edgeNodeRig({ hold: true, ...o });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  return r;
}

/** The broker stops taking writes: NCMDs meanwhile (`metric`: each one's) fill the writes in flight. */
async function fillWrites(
  r: Rig,
  metric: (i: number) => Record<string, unknown>,
): Promise<void> {
  for (let i = 0; r.session.inFlight < MAX_IN_FLIGHT; i++) {
    r.command("spBv1.0/g/NCMD/n", [metric(i)]);
    await flushMicrotasks();
  }
}

/** 10 ms on, the latch engages (`mode`: the mode with it) or is released; its time. */
async function setLatch(r: Rig, latched: boolean, mode?: RuntimeMode): Promise<number> {
  r.clock.advance(10);
  if (mode !== undefined) r.status.mode = mode;
  r.status.estopLatched = latched;
  r.emit(estop(latched));
  await flushMicrotasks();
  return r.clock.nowMs();
}

/** The broker takes writes again: one completes, then every other. */
async function drain(r: Rig): Promise<void> {
  r.session.completeOne();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
}

/** The latch metric of the node's NDATA published from `from` on: value, is_historical, time. */
function latchNdata(r: Rig, from = 0): [unknown, boolean, number][] {
  const alias = r.nodeAlias("Runtime/Estop Latched");
  return r.session.published.slice(from)
    .filter((m) => m.topic === "spBv1.0/g/NDATA/n")
    .flatMap((m) => (m.payload.metrics ?? []).filter((x) => x.alias === alias))
    .map((x) => [x.boolean_value, x.is_historical === true, Number(x.timestamp)]);
}

Deno.test("an e-stop latched while the writes are full and released after the connection went away reaches the host's history", async () => {
  const r = await onlineHeld({ recordCalls: true });
  while (r.session.inFlight < MAX_IN_FLIGHT) r.node.rebirth(); // births fill the writes
  // The latch engages: its NDATA cannot be handed over.
  const latchedAt = await setLatch(r, true);
  // The stalled connection ends; the operator releases the latch while the node is away.
  r.clock.advance(10);
  r.session.cut();
  await flushMicrotasks();
  await setLatch(r, false);

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const history = latchNdata(r);
  assert.deepEqual(
    history.map(([v, h]) => [v, h]),
    [[true, true], [false, true]],
    "the host's history has the latch and its release, in order",
  );
  assert.equal(history[0]![2], latchedAt, "the latch at its time");
  await r.stop();
});

Deno.test("an e-stop latched and released while the writes are full reaches the host once the broker takes writes again", async () => {
  const r = await onlineHeld({ recordCalls: true });
  // Answers to NCMDs the node refuses (one NDATA each) fill the writes in flight.
  await fillWrites(r, (i) => ({ name: `Nothing/${i}`, datatype: DataType.Boolean }));
  const before = r.session.published.length;
  // The latch engages and is released while no write completes.
  const latchedAt = await setLatch(r, true, "FAULT");
  await setLatch(r, false, "IDLE");
  await drain(r);
  const latch = latchNdata(r, before);
  assert.deepEqual(
    latch.map(([v, h]) => [v, h]),
    [[true, true], [false, false]],
    "the host gets the latch (history, at its time), then its release (the present)",
  );
  assert.equal(latch[0]![2], latchedAt, "the latch at its time");
  await r.stop();
});

Deno.test("an e-stop latched and released while a Rebirth waited for the writes reaches the host after the births", async () => {
  const r = await onlineHeld({ recordCalls: true });
  // Answers to NCMDs (no births: a Rebirth while births are going out waits for all of them).
  await fillWrites(r, (i) => ({ name: `Nothing/${i}`, datatype: DataType.Boolean }));
  // One more: it waits for a write to complete.
  r.command("spBv1.0/g/NCMD/n", [REBIRTH]);
  await flushMicrotasks();
  const before = r.session.published.length;
  const latchedAt = await setLatch(r, true);
  await setLatch(r, false);
  // The first write completes: the Rebirth that waited goes, its NBIRTH with the latch released.
  await drain(r);
  assert.ok(
    r.session.published.slice(before).some((m) => m.topic === "spBv1.0/g/NBIRTH/n"),
    "the births went",
  );
  assert.deepEqual(
    latchNdata(r, before),
    [[true, true, latchedAt]],
    "the latch the births overtook follows them as history, at its time",
  );
  await r.stop();
});

/**
 * Not only the first change left behind and the last: each change while the writes are full is
 * the node's history at its own time (#keepOvertaken keeps each one the next overtakes), so a
 * latch engaged, released and engaged again before a write completes is three changes at the
 * host, not one merged into the next.
 */
for (const cut of [true, false]) {
  Deno.test(
    "every node change left behind while the writes are full reaches the host at its time, none merged into the next " +
      (cut ? "(the connection goes away)" : "(the broker takes writes again)"),
    async () => {
      const r = await onlineHeld({ recordCalls: true });
      await fillWrites(r, (i) => ({ name: `Nothing/${i}`, datatype: DataType.Boolean }));
      const before = r.session.published.length;
      const times = [
        await setLatch(r, true, "FAULT"),
        await setLatch(r, false, "IDLE"),
        await setLatch(r, true, "FAULT"),
        await setLatch(r, false, "IDLE"),
      ];
      if (cut) {
        r.clock.advance(10);
        r.session.cut();
        await flushMicrotasks();
        await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
        r.session.up();
        await flushMicrotasks();
        while (r.session.complete() > 0) await flushMicrotasks();
      } else {
        await drain(r);
      }
      // After a cut the new connection's session records from its births on.
      assert.deepEqual(
        latchNdata(r, cut ? 0 : before),
        [
          [true, true, times[0]],
          [false, true, times[1]],
          [true, true, times[2]],
          // The present: history after a cut (the births carry it too), live when writes resume.
          [false, cut, times[3]],
        ],
        "each change at its time, in order",
      );
      await r.stop();
    },
  );
}

Deno.test("a node change left behind and not overtaken goes out once, live, when a write completes", async () => {
  const r = await onlineHeld({ recordCalls: true });
  await fillWrites(r, (i) => ({ name: `Nothing/${i}`, datatype: DataType.Boolean }));
  const before = r.session.published.length;
  await setLatch(r, true);
  await drain(r);
  assert.deepEqual(
    latchNdata(r, before).map(([v, h]) => [v, h]),
    [[true, false]],
    "one live NDATA of the latch",
  );
  await r.stop();
});

Deno.test("node changes kept through an outage whose replay is cut off by the next connection loss reach the host after the births after", async () => {
  const r = await onlineHeld();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  r.session.cut();
  await flushMicrotasks();
  // Latched and released while the node is away.
  await setLatch(r, true);
  await setLatch(r, false);
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
  const r = await onlineHeld();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  r.session.cut();
  await flushMicrotasks();
  // Latched at the start of a long outage, then more mode changes than are kept.
  await setLatch(r, true);
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
