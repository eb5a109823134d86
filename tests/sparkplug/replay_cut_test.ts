/**
 * Store and forward's replay after a reconnect is handed to the MQTT client like any write; when
 * the connection goes away again before those writes are done, what they carried is not lost:
 * it is replayed again after the births after. With the history ring (the device's outage starts
 * again at the first poll not known written) and with the queue (the DDATA are kept again, in
 * their order, before anything newer).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";
import { ringRig } from "./_ring_rig.ts";

Deno.test("with the history ring, a replay cut off by the next connection loss is replayed again after the births after", async () => {
  const rig = ringRig();
  await rig.history.start();
  rig.addDevice("a");
  await rig.node.start();
  rig.poll("a", 0);
  rig.session().up();
  await flushMicrotasks();
  while (rig.session().complete() > 0) await flushMicrotasks();
  rig.session().cut();
  await flushMicrotasks();
  for (const v of [1, 2, 3]) {
    rig.poll("a", v);
    await flushMicrotasks();
  }
  // Back: the births and the replay of polls 1..3 handed over; the connection goes under them.
  await rig.reconnect();
  assert.deepEqual(rig.ddata(rig.session(), "a").map((d) => d.v), [1, 2, 3], "handed over");
  rig.session().cut();
  await flushMicrotasks();
  rig.poll("a", 4);
  await flushMicrotasks();

  await rig.reconnect();
  while (rig.session().complete() > 0) await flushMicrotasks();
  assert.deepEqual(
    rig.ddata(rig.session(), "a"),
    [1, 2, 3, 4].map((v) => ({ v, historical: true })),
    "every poll the host did not get, once, in order",
  );
  await rig.stop();
});

Deno.test("with the queue, DDATA replayed and cut off by the next connection loss are kept again, before newer ones", async () => {
  const P = "p0";
  const caps = deviceCaps(P, "dev0", { signals: [signalSpec("a", "double")] });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }], hold: true });
  const update = (value: number): PublishedEvent => ({
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
  });
  const topic = `spBv1.0/g/DDATA/n/${sparkplugDeviceId(P, "dev0")}`;
  const values = () =>
    r.session.published.filter((m) => m.topic === topic).flatMap((m) => m.payload.metrics ?? [])
      .map((x) => ({ v: x.double_value, historical: x.is_historical === true }));
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  r.session.cut();
  await flushMicrotasks();
  for (const v of [1, 2]) {
    r.clock.advance(10);
    r.emit(update(v));
    await flushMicrotasks();
  }
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  assert.deepEqual(values().map((d) => d.v), [1, 2], "handed over");
  r.session.cut();
  await flushMicrotasks();
  r.clock.advance(10);
  r.emit(update(3));
  await flushMicrotasks();

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  assert.deepEqual(
    values(),
    [1, 2, 3].map((v) => ({ v, historical: true })),
    "every change the host did not get, once, in order",
  );
  await r.stop();
});
