/**
 * A DCMD's String of arguments is the host's text: the refusal published back names an unknown
 * argument, or an integer not written exactly, cut to SPARKPLUG_QUOTED_NAME_CHARS and quoted as a
 * log line does, not echoed whole. A 10 kB argument name came back as a 10 kB answer (and, near
 * `sparkplug.max_message_bytes`, as no answer: a metric alone over the bound is left out).
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType, SPARKPLUG_QUOTED_NAME_CHARS } from "../../src/sparkplug/mod.ts";
import { argSpec, dcmdAnswers, setFunctionNode } from "./_edge_node_rig.ts";

Deno.test("a DCMD's unknown argument name and inexact integer are answered cut and quoted, never called", async () => {
  const rig = await setFunctionNode("ACTUATE", [argSpec("count", "int64")]);
  // A quote and a line break in a 10 kB name; a 10 kB number that reads as the integer 1.
  const name = `x"\n${"y".repeat(10_000)}`;
  const digits = `1.${"0".repeat(10_000)}1`;
  const answers = await dcmdAnswers(
    rig,
    [JSON.stringify({ [name]: 1 }), `{"count": ${digits}}`].map((args) => ({
      name: "Functions/set",
      datatype: DataType.String,
      string_value: args,
    })),
  );
  const cut = SPARKPLUG_QUOTED_NAME_CHARS;
  assert.deepEqual(answers, [
    `REFUSED: unknown argument ${JSON.stringify(`${name.slice(0, cut)}\u2026`)}`,
    `REFUSED: argument count: ${digits.slice(0, cut)}\u2026 is not an integer as written ` +
    "(a JSON number read as a double: it would arrive as 1)",
  ]);
  assert.deepEqual(rig.calls, [], "nothing reaches the call path");
  await rig.stop();
});
