/**
 * A primary host back with a clock behind the one it had (its STATE timestamp older than one
 * already seen) stays ignored for the life of the process, as Sparkplug 3.0 asks of an edge node
 * (TCK message-flow-edge-node-birth-publish-phid-wait-timestamp; docs/sparkplug.md): the node
 * stays unborn, and its WARN line says that the births wait for it, until which timestamp, and
 * the way out. An `online` ignored while the host is followed as online does not say so. The node
 * runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const NBIRTH = "spBv1.0/g/NBIRTH/n";
const WAIT = "the births wait for a STATE online at or after 2000";

Deno.test("a primary host back with a clock behind: its ignored STATE online says the births wait for it, and until when", async () => {
  const { log, lines } = capturingLogger();
  const rig = edgeNodeRig({ primaryHostId: "scada", log });
  await rig.online();
  await rig.hostState(true, 2000);
  assert.ok(rig.node.online, "born once the host is online");
  // Its own retained copy again while followed as online: ignored, nothing waits on it.
  await rig.hostState(true, 1500);
  assert.ok(!lines.some((l) => l.includes("the births wait")), lines.join("\n"));
  await rig.hostState(false, 2000);
  rig.sessions[0]!.ended();
  await flushMicrotasks();
  await rig.clock.advanceAsync(0);
  assert.equal(rig.sessions.length, 2, "a new session");
  rig.session.up();
  await flushMicrotasks();
  // The host restarted with its clock behind.
  await rig.hostState(true, 1000);
  assert.ok(!rig.node.online, "still unborn (the timestamp is kept)");
  assert.equal(rig.session.published.filter((m) => m.topic === NBIRTH).length, 0);
  const said = lines.filter((l) => l.includes(WAIT));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(said[0]!, /timestamp 1000 is older than 2000 already seen/);
  assert.match(said[0]!, /restart the runtime/);
  await rig.stop();
});
