/**
 * A DCMD's one argument written as a Sparkplug integer metric is read as its datatype says:
 * `int_value` and `long_value` travel unsigned (Sparkplug B: an Int32 -5 is the uint32
 * 4294967291, an Int64 -5 the uint64 2^64-5), so an Int8/Int16/Int32 metric is taken signed, and
 * a UInt64 one is not turned negative. Read as the raw field, an Int32 -5 called the function
 * with 4294967291.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { ArgSpec } from "../../src/common/mod.ts";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { argSpec, edgeNodeRig, oneDevice } from "./_edge_node_rig.ts";

const P = "p0";
const DEVICE = sparkplugDeviceId(P, "dev0");

function fn(name: string, type: ArgSpec["type"]) {
  return {
    functionId: 1,
    name,
    description: "",
    category: "CONFIG" as const,
    actuating: true,
    args: [argSpec("n", type)],
  };
}

Deno.test("a DCMD's integer metric is read as its datatype says: an Int32 -5 is -5, a UInt64 beyond 2^63 is not made negative", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", {
      functions: [fn("offset", "int64"), fn("trim", "double"), fn("count", "uint64")],
    }),
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  const dcmd = (metric: Record<string, unknown>) =>
    rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [metric]);
  dcmd({ name: "Functions/offset", datatype: DataType.Int32, int_value: -5 >>> 0 });
  dcmd({ name: "Functions/trim", datatype: DataType.Int32, int_value: -7 >>> 0 });
  dcmd({ name: "Functions/offset", datatype: DataType.Int64, long_value: BigInt.asUintN(64, -9n) });
  dcmd({ name: "Functions/count", datatype: DataType.UInt64, long_value: 2n ** 63n + 1n });
  await flushMicrotasks();
  // A UInt64 beyond int64 to an int64 argument: refused, not wrapped to a negative.
  const from = rig.session.published.length;
  dcmd({ name: "Functions/offset", datatype: DataType.UInt64, long_value: 2n ** 63n + 1n });
  await flushMicrotasks();
  assert.deepEqual(
    rig.session.published.slice(from).flatMap((m) =>
      (m.payload.metrics ?? []).map((x) => x.string_value)
    ),
    ["REFUSED: argument n: 9223372036854775809 is out of range for int64"],
  );
  assert.deepEqual(rig.calls.map((c) => c.args), [
    { n: { type: "int64", int64: -5 } },
    { n: { type: "double", double: -7 } },
    { n: { type: "int64", int64: -9 } },
    { n: { type: "uint64", uint64: 2n ** 63n + 1n } },
  ]);
  await rig.stop();
});
