/**
 * An NCMD `Node Control/E-Stop` latches the e-stop whatever the node's logger does: the latch is
 * the command's first act, and a log line that fails (a closed stderr) is lost, never the stop.
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType } from "../../src/sparkplug/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

Deno.test("an NCMD e-stop triggers the e-stop and is answered OK when the node's logger throws on every WARN and ERROR line", async () => {
  let logFails = false;
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (_line, level) => {
      if (logFails && (level === "warn" || level === "error")) throw new Error("stderr is closed");
    },
  });
  const triggers: string[] = [];
  const rig = edgeNodeRig({
    mode: "MANUAL",
    log,
    commands: {
      call: () => Promise.reject(new Error("no calls")),
      estop: (reason, _source, onLatched) => {
        triggers.push(reason);
        onLatched?.();
        return Promise.resolve();
      },
    },
  });
  await rig.online();
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const from = rig.session.published.length;
  logFails = true;
  let thrown: unknown = null;
  try {
    rig.command("spBv1.0/g/NCMD/n", [
      { name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true },
    ]);
  } catch (err) {
    thrown = err; // out of the broker's callback: the node's own containment failed too
  }
  await flushMicrotasks();
  logFails = false;
  const answers = rig.session.published.slice(from).flatMap((m) =>
    (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
  );
  await rig.stop();
  assert.deepEqual(triggers, ["Sparkplug NCMD Node Control/E-Stop"], "the e-stop was triggered");
  assert.equal(thrown, null, "nothing escapes into the broker's callback");
  assert.deepEqual(answers, ["Node Control/E-Stop: OK"]);
});
