/**
 * The answer to an NCMD `Node Control/E-Stop` (Runtime/Command Result): OK once the latch is
 * engaged (the trigger's synchronous part), not waiting for the safe-state ladder; FAILED when the
 * trigger threw before the latch engaged. The node runs among doubles
 * (tests/sparkplug/_edge_node_rig.ts), the e-stop port too: a trigger that throws cannot be had
 * from the real one.
 */
import assert from "node:assert/strict";
import { type CommandPorts, DataType } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

async function answerTo(estop: CommandPorts["estop"]): Promise<string[]> {
  const rig = edgeNodeRig({
    mode: "MANUAL",
    commands: { call: () => Promise.reject(new Error("no calls")), estop },
  });
  await rig.online();
  const session = rig.session;
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const from = session.published.length;
  rig.command("spBv1.0/g/NCMD/n", [
    { name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  const answers = session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) =>
        String(x.string_value)
      )
      : []
  );
  await rig.stop();
  return answers;
}

Deno.test("an NCMD e-stop whose trigger threw before the latch is answered FAILED, not OK", async () => {
  const answers = await answerTo(() => Promise.reject(new Error("audit journal closed")));
  assert.deepEqual(
    answers,
    ["Node Control/E-Stop: FAILED: audit journal closed"],
    "the host is told the e-stop it asked for was taken",
  );
});

Deno.test("an NCMD e-stop is answered OK once the latch engaged, while its ladder still runs", async () => {
  const answers = await answerTo((_reason, _source, onLatched) => {
    onLatched?.();
    return new Promise(() => {}); // the ladder never ends in this test
  });
  assert.deepEqual(answers, ["Node Control/E-Stop: OK"]);
});

Deno.test("an NCMD Node Control/E-Stop written as no Boolean is refused naming the type it takes, not as an unknown node command", async () => {
  let stops = 0;
  const rig = edgeNodeRig({
    mode: "MANUAL",
    commands: {
      call: () => Promise.reject(new Error("no calls")),
      estop: (_reason, _source, onLatched) => {
        stops++;
        onLatched?.();
        return Promise.resolve();
      },
    },
  });
  await rig.online();
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const from = rig.session.published.length;
  rig.command("spBv1.0/g/NCMD/n", [
    { name: "Node Control/E-Stop", datatype: DataType.Int32, int_value: 1 },
  ]);
  await flushMicrotasks();
  const answers = rig.session.published.slice(from).flatMap((m) =>
    (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
  );
  assert.equal(stops, 0, "not taken: the metric is a Boolean");
  assert.deepEqual(answers, [
    "Node Control/E-Stop: REFUSED: Node Control/E-Stop is a Boolean: write true to trigger the " +
    "e-stop (written: int_value 1)",
  ]);
  await rig.stop();
});
