/**
 * The edge node reconnects after a lost broker connection whatever its logger does: the line
 * that says so (`sparkplug lost the broker; reconnecting ...`) came before the reconnect was
 * scheduled, so a logger that throws on it (a custom one: the process logger swallows its own
 * write failures) left the node offline for good, and the ERROR line of its containment threw
 * out of the broker's close callback. The node takes its logger wrapped in neverThrowing, as the
 * run registry does. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

Deno.test("SparkplugEdgeNode reconnects after a lost connection when its logger throws on every WARN and ERROR line", async () => {
  let logFails = false;
  let failedLines = 0;
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (_line, level) => {
      if (logFails && (level === "warn" || level === "error")) {
        failedLines++;
        throw new Error("log sink failed");
      }
    },
  });
  const rig = edgeNodeRig({ log });
  await rig.online();
  assert.equal(rig.sessions.length, 1);
  logFails = true;
  let thrown: unknown = null;
  try {
    rig.session.down();
  } catch (err) {
    thrown = err; // out of the broker's close callback: the node's own containment failed too
  }
  await flushMicrotasks();
  await rig.clock.advanceAsync(60_000);
  logFails = false;
  const sessions: number = rig.sessions.length;
  const internalErrors = rig.node.counts.internalErrors;
  if (sessions === 2) {
    rig.session.up();
    await flushMicrotasks();
  }
  const online = rig.node.online;
  await rig.stop();
  assert.ok(failedLines > 0, "the reconnect's WARN line was attempted and failed");
  assert.equal(sessions, 2, "the node opened its next connection");
  assert.equal(online, true, "and came back online on it");
  assert.equal(thrown, null, "nothing escapes into the broker's close callback");
  assert.equal(internalErrors, 0, "a lost log line is no internal error of the node");
});
