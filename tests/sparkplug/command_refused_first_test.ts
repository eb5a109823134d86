/**
 * Commands off (or the viewer role, or the runtime stopping) refuse every DCMD with that reason,
 * whatever it names: a DCMD to a device the node has not born (a mistyped id, one still to be
 * born) or by an alias of no metric is not answered with a reason about the device or the alias,
 * which would tell the host to send it again by another name -- and that could not succeed either.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig, oneDevice, pulseFunction } from "./_edge_node_rig.ts";

const P = "p0";
const DEVICE = sparkplugDeviceId(P, "dev0");
const OFF = "REFUSED: commands are off (sparkplug.commands: false)";

Deno.test("SparkplugEdgeNode with commands off answers every DCMD 'commands are off', an unknown device's and a stale alias' too", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", { functions: [pulseFunction("pulse")] }),
    mode: "MANUAL",
  });
  await rig.online();
  const session = rig.session;
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const from = session.published.length;
  const unknown = sparkplugDeviceId(P, "nosuch");
  rig.command(`spBv1.0/g/DCMD/n/${unknown}`, [
    { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
  ]);
  rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
    { alias: 987654, datatype: DataType.Boolean, boolean_value: true },
  ]);
  rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
    { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  const answers = session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n" || m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`
      ? (m.payload.metrics ?? []).flatMap((x) =>
        typeof x.string_value === "string" ? [[m.topic.split("/")[2], x.string_value]] : []
      )
      : []
  );
  assert.deepEqual(answers, [
    ["NDATA", `${unknown}/Functions/pulse: ${OFF}`],
    ["NDATA", `${DEVICE}/alias 987654: ${OFF}`],
    ["DDATA", OFF],
  ]);
  assert.ok(resultAlias !== undefined);
  await rig.stop();
});
