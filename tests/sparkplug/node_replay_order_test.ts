/**
 * The node metric changes kept while the node was not online go out after the next births as
 * NDATA with is_historical, oldest first, under MAX_IN_FLIGHT. A live change of the node metrics
 * (the e-stop latch) while that replay waits for writes goes out after the last historical NDATA:
 * on the wire history comes first, then the present, or a host's history would show the latch
 * followed by older changes as if they came after it.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts) whose writes complete when the
 * test says so.
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { MAX_IN_FLIGHT, MAX_NODE_CHANGES_KEPT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const modeChange: PublishedEvent = {
  id: 1,
  event: { kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 0 },
};
const estopChange: PublishedEvent = {
  id: 2,
  event: { kind: "estop_change", latched: true, reason: null, cause: null, timestamp_ms: 0 },
};

Deno.test("a live NDATA while an outage's node changes are replayed at MAX_IN_FLIGHT goes after the last historical one", async () => {
  const r = edgeNodeRig({ hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  r.session.cut();
  await flushMicrotasks();

  // More node changes while away than the writes in flight take at once (and fewer than kept).
  const changes = MAX_IN_FLIGHT + 10;
  assert.ok(changes <= MAX_NODE_CHANGES_KEPT);
  for (let i = 0; i < changes; i++) {
    r.clock.advance(1);
    r.status.mode = i % 2 === 0 ? "MANUAL" : "IDLE";
    r.emit(modeChange);
    await flushMicrotasks();
  }

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  assert.equal(r.session.inFlight, MAX_IN_FLIGHT, "the replay fills the writes in flight");

  // The e-stop latches while the rest of the replay waits for the writes.
  r.clock.advance(1);
  r.status.estopLatched = true;
  r.emit(estopChange);
  await flushMicrotasks();
  while (r.session.inFlight > 0) {
    r.session.completeOne();
    await flushMicrotasks();
  }

  const ndata = r.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n");
  const historical = ndata.map((m) => (m.payload.metrics ?? []).every((x) => x.is_historical));
  const firstLive = historical.indexOf(false);
  assert.equal(historical.filter((h) => h).length, changes, "every kept change replayed");
  assert.ok(firstLive >= 0, "the latch went out live");
  assert.equal(
    historical.lastIndexOf(true),
    firstLive - 1,
    `a live NDATA (#${firstLive}) went out before historical ones (the last: ` +
      `#${historical.lastIndexOf(true)}) of the outage`,
  );
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  assert.ok(
    (ndata[firstLive]!.payload.metrics ?? []).some((x) =>
      x.alias === latchAlias && x.boolean_value === true
    ),
    "the first live NDATA carries the latch",
  );
  await r.stop();
});

Deno.test("node changes kept while the wall clock stepped back are replayed in the order they happened, not by their times", async () => {
  const r = edgeNodeRig({ hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const modeAlias = r.nodeAlias("Runtime/Mode");

  // A mode change goes out live; the connection goes down before its write completes.
  r.clock.advance(1);
  r.status.mode = "MANUAL";
  r.emit(modeChange);
  await flushMicrotasks();
  const first = r.session;
  assert.equal(first.inFlight, 1, "the live NDATA is in flight");
  first.down();
  await flushMicrotasks();

  // NTP steps the wall clock back 10 s; the mode changes again while the node is away; then the
  // live write fails (the session's end fails a write never acknowledged).
  r.clock.stepWall(-10_000);
  r.clock.advance(1);
  r.status.mode = "IDLE";
  r.emit(modeChange);
  await flushMicrotasks();
  first.failOne();
  await flushMicrotasks();

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  assert.notEqual(r.session, first, "a new session");
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const replayed = r.session.published
    .filter((m) => m.topic === "spBv1.0/g/NDATA/n")
    .flatMap((m) => m.payload.metrics ?? [])
    .filter((x) => x.alias === modeAlias && x.is_historical);
  assert.deepEqual(
    replayed.map((x) => x.string_value),
    ["MANUAL", "IDLE"],
    "the mode as it went MANUAL, then IDLE: " +
      JSON.stringify(replayed.map((x) => [x.string_value, Number(x.timestamp)])),
  );
  await r.stop();
});
