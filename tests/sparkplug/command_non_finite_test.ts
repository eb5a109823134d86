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
import { DataType } from "../../src/sparkplug/mod.ts";
import { argSpec, dcmdAnswers, setFunctionNode } from "./_edge_node_rig.ts";

Deno.test("a DCMD's double argument that is NaN or +/-Infinity is refused, never called", async () => {
  const rig = await setFunctionNode("ACTUATE", [argSpec("level", "double", { min: 0, max: 1 })]);
  const answers = await dcmdAnswers(rig, [
    { name: "Functions/set", datatype: DataType.Double, double_value: NaN },
    { name: "Functions/set", datatype: DataType.Double, double_value: Infinity },
    { name: "Functions/set", datatype: DataType.Double, double_value: -Infinity },
    { name: "Functions/set", datatype: DataType.String, string_value: '{"level": 1e400}' },
    { name: "Functions/set", datatype: DataType.Double, double_value: 0.5 },
  ]);
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
