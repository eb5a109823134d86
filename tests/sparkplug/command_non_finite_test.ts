/**
 * A DCMD's double argument that is no finite number (a Double metric NaN or +/-Infinity, or a JSON
 * number beyond any double, `1e400`, in a String of arguments) is refused by the node, never
 * called: the HTTP API refuses such a value in a call's arguments (400, JSON Schema `number`), and
 * the runtime's bounds check lets NaN through (it fails both comparisons), so over Sparkplug a NaN
 * setpoint reached the provider past `min`/`max`, and the audit trail recorded it as `null`.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { ArgSpec } from "../../src/common/mod.ts";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig, oneDevice } from "./_edge_node_rig.ts";

const P = "p0";
const DEVICE = sparkplugDeviceId(P, "dev0");

const level: ArgSpec = {
  name: "level",
  type: "double",
  unit: "",
  description: "",
  required: true,
  allowedValues: [],
  min: 0,
  max: 1,
};

Deno.test("a DCMD's double argument that is NaN or +/-Infinity is refused, never called", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", {
      functions: [{
        functionId: 1,
        name: "set",
        description: "",
        category: "ACTUATE",
        actuating: true,
        args: [level],
      }],
    }),
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  const from = rig.session.published.length;
  const writes: Array<Record<string, unknown>> = [
    { name: "Functions/set", datatype: DataType.Double, double_value: NaN },
    { name: "Functions/set", datatype: DataType.Double, double_value: Infinity },
    { name: "Functions/set", datatype: DataType.Double, double_value: -Infinity },
    { name: "Functions/set", datatype: DataType.String, string_value: '{"level": 1e400}' },
    { name: "Functions/set", datatype: DataType.Double, double_value: 0.5 },
  ];
  for (const w of writes) rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [w]);
  await flushMicrotasks();
  const answers = rig.session.published.slice(from).flatMap((m) =>
    m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`
      ? (m.payload.metrics ?? []).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(answers, [
    "REFUSED: argument level: NaN is not a finite double",
    "REFUSED: argument level: Infinity is not a finite double",
    "REFUSED: argument level: -Infinity is not a finite double",
    "REFUSED: argument level: Infinity is not a finite double",
    "OK",
  ]);
  assert.deepEqual(
    rig.calls.map((c) => c.args),
    [{ level: { type: "double", double: 0.5 } }],
    "only the finite value reaches the call path",
  );
  await rig.stop();
});
