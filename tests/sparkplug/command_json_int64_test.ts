/**
 * A DCMD's arguments as a JSON object in a String metric: an int64/uint64 argument whose JSON
 * number parsing rounded (digits beyond 2^53, a fraction below a double's precision) is refused,
 * naming the text, as the HTTP API refuses it -- not called with another integer than the one
 * written. (A Sparkplug Int64/UInt64 metric carries the exact value: the way to write beyond 2^53.)
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType } from "../../src/sparkplug/mod.ts";
import { argSpec, dcmdAnswers, setFunctionNode } from "./_edge_node_rig.ts";

Deno.test("a DCMD's JSON arguments: an int64 the JSON parse rounded is refused, an exact one (and a double) taken", async () => {
  const rig = await setFunctionNode("CONFIG", [
    argSpec("count", "int64"),
    argSpec("level", "double"),
  ]);
  const answers = await dcmdAnswers(
    rig,
    [
      '{"count": 9007199254740993, "level": 1}',
      '{"count": 42.0, "level": 9007199254740993}',
    ].map((text) => ({ name: "Functions/set", datatype: DataType.String, string_value: text })),
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
