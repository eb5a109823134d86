/**
 * A DCMD's arguments as a JSON object in a String metric: an int64/uint64 argument whose JSON
 * number parsing rounded (digits beyond 2^53, a fraction below a double's precision) is refused,
 * naming the text, as the HTTP API refuses it -- not called with another integer than the one
 * written. (A Sparkplug Int64/UInt64 metric carries the exact value: the way to write beyond 2^53.)
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

const arg = (name: string, type: ArgSpec["type"]): ArgSpec => ({
  name,
  type,
  unit: "",
  description: "",
  required: true,
  allowedValues: [],
});

Deno.test("a DCMD's JSON arguments: an int64 the JSON parse rounded is refused, an exact one (and a double) taken", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", {
      functions: [{
        functionId: 1,
        name: "set",
        description: "",
        category: "CONFIG",
        actuating: true,
        args: [arg("count", "int64"), arg("level", "double")],
      }],
    }),
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  const from = rig.session.published.length;
  for (
    const text of [
      '{"count": 9007199254740993, "level": 1}',
      '{"count": 42.0, "level": 9007199254740993}',
    ]
  ) {
    rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
      { name: "Functions/set", datatype: DataType.String, string_value: text },
    ]);
  }
  await flushMicrotasks();
  const answers = rig.session.published.slice(from).flatMap((m) =>
    m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`
      ? (m.payload.metrics ?? []).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(answers, [
    "REFUSED: argument count: 9007199254740993 is not an integer as written (a JSON number read " +
    "as a double: it would arrive as 9007199254740992)",
    "OK",
  ]);
  assert.deepEqual(rig.calls.map((c) => c.args), [{
    count: { type: "int64", int64: 42 },
    level: { type: "double", double: 9007199254740992 },
  }]);
  await rig.stop();
});
