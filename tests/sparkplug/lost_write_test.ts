/**
 * A live DDATA handed to the MQTT client whose write then fails because the connection went away
 * (MQTT.js fails a QoS 0 write on the closed socket, and the session's end a QoS 1 one never
 * acknowledged) is store and forward's to keep: without the history ring it joins the
 * store-and-forward queue and goes out, with is_historical, after the next births. (With the ring:
 * tests/sparkplug/replay_walk_test.ts.)
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts) whose writes complete, or fail
 * with the connection, when the test says so.
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";
const DEV = sparkplugDeviceId(P, "dev0");

function update(value: number): PublishedEvent {
  return {
    id: 1,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: "dev0",
      signal_id: "a",
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

Deno.test("a live DDATA whose write fails as the connection is cut is kept and forwarded after the next births", async () => {
  const caps = deviceCaps(P, "dev0", { signals: [signalSpec("a", "double")] });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }], hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  r.emit(update(2.5));
  await flushMicrotasks();
  const topic = `spBv1.0/g/DDATA/n/${DEV}`;
  assert.equal(r.session.published.filter((m) => m.topic === topic).length, 1, "sent live");
  r.session.cut();
  await flushMicrotasks();
  assert.equal(r.node.counts.publishFailures, 1);

  // The next session (after reconnect_ms and the bdSeq record) comes up: births, then the queue.
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  assert.equal(r.sessions.length, 2, "a new session");
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const forwarded = r.session.published.filter((m) => m.topic === topic);
  assert.deepEqual(
    forwarded.map((m) => (m.payload.metrics ?? []).map((x) => [x.double_value, x.is_historical])),
    [[[2.5, true]]],
    "the change whose write failed reaches the host, with is_historical, after the births",
  );
  assert.equal(r.node.counts.stored, 1);
  await r.stop();
});

Deno.test("an NDATA of the e-stop latch whose write fails as the connection is cut reaches the host's history after the next births", async () => {
  const r = edgeNodeRig({ hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const latchAlias = r.nodeAlias("Runtime/Estop Latched");
  const estop = (latched: boolean): PublishedEvent => ({
    id: 1,
    event: { kind: "estop_change", latched, reason: null, cause: null, timestamp_ms: 0 },
  });
  // The latch engages: its NDATA goes out live, and the connection is cut under it.
  r.status.estopLatched = true;
  r.emit(estop(true));
  await flushMicrotasks();
  assert.equal(r.session.published.at(-1)?.topic, "spBv1.0/g/NDATA/n", "sent live");
  r.clock.advance(10);
  r.session.cut();
  await flushMicrotasks();
  // Released while the node is away (the latch's whole episode happened around the outage).
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
    .map((x) => [x.boolean_value, x.is_historical === true]);
  assert.deepEqual(
    history,
    [[true, true], [false, true]],
    "the host's history has the latch and its release, in order",
  );
  await r.stop();
});

// After a step back of the wall clock (NTP on a Raspberry Pi without a real-time clock) a change
// polled after the step carries an earlier time than one polled before it: both failing with the
// connection are kept again "in [their] place, before anything newer" (docs/sparkplug.md), in the
// order they were polled, not by their wall-clock times, so the host's last value is the newest.
Deno.test("live DDATA whose writes fail as the connection is cut are forwarded in poll order after a step back of the wall clock", async () => {
  const caps = deviceCaps(P, "dev0", { signals: [signalSpec("a", "double")] });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }], hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const topic = `spBv1.0/g/DDATA/n/${DEV}`;
  r.emit(update(1));
  await flushMicrotasks();
  // NTP steps the wall clock back an hour; the next change goes out live too.
  r.clock.advance(100);
  r.clock.stepWall(-3_600_000);
  r.emit(update(2));
  await flushMicrotasks();
  assert.equal(r.session.published.filter((m) => m.topic === topic).length, 2, "both sent live");
  r.session.cut();
  await flushMicrotasks();
  assert.equal(r.node.counts.publishFailures, 2);

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const forwarded = r.session.published.filter((m) => m.topic === topic);
  assert.deepEqual(
    forwarded.map((m) => (m.payload.metrics ?? []).map((x) => x.double_value)),
    [[1], [2]],
    "forwarded in the order they were polled: the newest value last",
  );
  await r.stop();
});
