/**
 * A provider rediscovered (restarted, reloaded) with the same signal ids but another description
 * -- a signal retyped, a function added -- must be born again: the DBIRTH is what tells a host
 * each alias's datatype and the functions it may write. Compared by signal ids alone, no DBIRTH
 * went out and the DDATA that followed carried values of the new type on an alias the host reads
 * as the old one.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { SignalSpec } from "../../src/common/mod.ts";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

function capsWith(valueType: SignalSpec["valueType"]) {
  return deviceCaps(P, D, { signals: [signalSpec("a", valueType)] });
}

Deno.test("a provider rediscovered with a signal retyped is born again: a DBIRTH declares the new type", async () => {
  const provider = { id: P, available: true, devices: [capsWith("double")] };
  const rig = edgeNodeRig({ providers: [provider] });
  await rig.online();
  const session = rig.session;
  const births = () =>
    session.published.filter((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`).map((m) =>
      (m.payload.metrics ?? []).find((x) => x.name === "a")?.datatype
    );
  assert.deepEqual(births(), [DataType.Double]);

  // The provider restarts declaring `a` as a string: the inventory says so.
  provider.devices = [capsWith("string")];
  rig.changed(P);
  await flushMicrotasks();
  assert.deepEqual(births(), [DataType.Double, DataType.String], "born again with the new type");
  await rig.stop();
});
