/**
 * A device declaring one function name twice: the call path reaches the LAST declaration
 * (src/control/call_router.ts #select, as anolis indexes functions by name), and so does the AUTO
 * gate. A DCMD writing `Functions/<name>` must type its arguments by that same declaration (it
 * typed them by the first: the call was refused, or sent with the first's types and validated
 * against the last), and the DBIRTH must declare the metric once, as that declaration.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts): the test hands the node its
 * DCMD and reads what it publishes.
 */
import assert from "node:assert/strict";
import type { ArgSpec, FunctionSpec } from "../../src/common/mod.ts";
import type { CallRequest, CallResult } from "../../src/control/mod.ts";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { argSpec, deviceCaps, edgeNodeRig } from "./_edge_node_rig.ts";

const P = "p0";
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

function fn(functionId: number, args: ArgSpec[]): FunctionSpec {
  return {
    functionId,
    name: "set_level",
    description: `declaration ${functionId}`,
    category: "CONFIG",
    actuating: true,
    args,
  };
}

// The same name twice: a bool first, a double last (the one a call by name reaches).
const caps = deviceCaps(P, D, {
  functions: [fn(1, [argSpec("level", "bool")]), fn(2, [argSpec("level", "double")])],
});

Deno.test("a DCMD on a duplicated function name is typed by its last declaration, the one the call reaches; the DBIRTH declares that one once", async () => {
  const calls: CallRequest[] = [];
  const rig = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [caps] }],
    mode: "MANUAL",
    commands: {
      call(req) {
        calls.push(req);
        return Promise.resolve({} as CallResult);
      },
      estop: () => Promise.resolve(),
    },
  });
  await rig.online();
  const session = rig.session;
  const dbirth = session.published.find((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`);
  assert.ok(dbirth, "the DBIRTH");
  rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
    { name: "Functions/set_level", datatype: DataType.Double, double_value: 2.5 },
  ]);
  await flushMicrotasks();
  const answers = session.published.flatMap((m) =>
    m.topic === `spBv1.0/g/DDATA/n/${DEVICE}` ? m.payload.metrics ?? [] : []
  ).map((m) => m.string_value);
  assert.deepEqual(answers, ["OK"], "answered");
  assert.deepEqual(
    calls.map((c) => [c.functionName, c.args]),
    [["set_level", { level: { type: "double", double: 2.5 } }]],
  );
  const declared = (dbirth.payload.metrics ?? []).filter((m) => m.name === "Functions/set_level");
  assert.deepEqual(
    declared.map((m) => m.string_value),
    ["declaration 2"],
    "one metric per name, as the declaration a call reaches",
  );

  await rig.stop();
});
