/**
 * A device first seen while the node is offline (a provider restart brings it during a broker
 * outage): its changes meanwhile are in the history ring like every other device's, so after its
 * DBIRTH they are replayed with is_historical (docs/sparkplug.md, store and forward), not skipped.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { ringRig } from "./_ring_rig.ts";

Deno.test("a device that appeared while offline has its outage changes replayed after its DBIRTH", async () => {
  const rig = ringRig();
  await rig.history.start();
  rig.addDevice("a");
  await rig.node.start();
  rig.poll("a", 0);
  rig.session().up();
  await flushMicrotasks();
  assert.ok(rig.node.online);
  // The broker goes away; meanwhile the provider brings a new device, which changes twice.
  rig.session().cut();
  await flushMicrotasks();
  rig.addDevice("b");
  await flushMicrotasks();
  rig.poll("b", 1);
  rig.poll("b", 2);
  rig.poll("a", 5);
  await flushMicrotasks();
  const s1 = rig.session();
  await rig.reconnect();
  const s2 = rig.session();
  assert.notEqual(s1, s2, "a new session");
  assert.ok(
    s2.published.some((m) => m.topic === "spBv1.0/g/DBIRTH/n/p0:b"),
    "the new device is born",
  );
  assert.deepEqual(rig.ddata(s2, "a"), [{ v: 5, historical: true }], "a's change replayed");
  assert.deepEqual(
    rig.ddata(s2, "b"),
    [{ v: 1, historical: true }, { v: 2, historical: true }],
    "b's outage changes replayed after its DBIRTH",
  );
  await rig.stop();
});
