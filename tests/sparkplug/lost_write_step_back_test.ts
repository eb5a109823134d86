/**
 * Without the history ring, a live DDATA whose write fails as the connection is cut is kept again
 * "in its place, before anything newer" (docs/sparkplug.md): the queue is in the order the data
 * was polled, not by its wall-clock time. After a step back of the wall clock (NTP on a Raspberry
 * Pi without a real-time clock), a change polled after the step carries an earlier time than one
 * polled before it; both failing with the connection must still be forwarded in poll order, so the
 * host's last value is the newest one.
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
