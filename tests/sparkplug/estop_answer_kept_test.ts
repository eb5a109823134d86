/**
 * The answer to an NCMD `Node Control/E-Stop` the node could not publish -- it was taken while
 * the node was not online (connected, waiting for its primary host), or its NDATA was cut off with
 * the connection -- is store and forward's like the node metric changes: kept at its time and
 * published after the next births as an NDATA of `Runtime/Command Result` with is_historical, so
 * the host's history says the stop it asked for was taken. The node runs among doubles
 * (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType, MAX_ANSWERS_WAITING, MAX_IN_FLIGHT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const NCMD = "spBv1.0/g/NCMD/n";
const ESTOP = { name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true };

Deno.test("an NCMD e-stop taken while the node waits for its primary host is answered after the births, with is_historical", async () => {
  const rig = edgeNodeRig({ primaryHostId: "scada", latchEstops: true });
  await rig.online();
  await rig.hostState(true, 1);
  assert.ok(rig.node.online);
  // The primary host goes offline: NDEATH, a new session that waits for it.
  await rig.hostState(false, 2);
  await rig.clock.advanceAsync(0);
  assert.equal(rig.sessions.length, 2, "a new session");
  rig.session.up();
  await flushMicrotasks();
  assert.equal(rig.node.online, false, "waiting for the primary host");

  rig.clock.advance(5);
  const at = rig.clock.nowMs();
  rig.command(NCMD, [ESTOP]);
  await flushMicrotasks();
  assert.equal(rig.status.estopLatched, true, "the e-stop is taken while not online");

  rig.clock.advance(5);
  await rig.hostState(true, 3);
  assert.ok(rig.node.online, "born again");
  assert.deepEqual(rig.answers(), [["Node Control/E-Stop: OK", true]]);
  const ndata = rig.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n").at(-1)!;
  assert.equal(Number(ndata.payload.metrics?.[0]?.timestamp), at, "at the time it was taken");
  await rig.stop();
});

Deno.test("an NCMD e-stop answer cut off with the connection reaches the host after the next births", async () => {
  const rig = edgeNodeRig({ hold: true, latchEstops: true });
  await rig.online();
  rig.session.complete();
  await flushMicrotasks();
  rig.command(NCMD, [ESTOP]);
  await flushMicrotasks();
  assert.deepEqual(rig.answers(), [["Node Control/E-Stop: OK", false]], "sent live");
  rig.session.cut();
  await flushMicrotasks();

  await rig.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  rig.session.up();
  await flushMicrotasks();
  while (rig.session.complete() > 0) await flushMicrotasks();
  assert.deepEqual(rig.answers(), [["Node Control/E-Stop: OK", true]]);
  await rig.stop();
});

Deno.test("an NCMD e-stop answer is not dropped when MAX_ANSWERS_WAITING other answers wait for the writes", async () => {
  const rig = edgeNodeRig({ hold: true, latchEstops: true });
  await rig.online();
  rig.session.complete();
  await flushMicrotasks();
  // The broker stops taking writes; births published again meanwhile fill the writes in flight.
  while (rig.session.inFlight < MAX_IN_FLIGHT) rig.node.rebirth();
  // A host keeps writing: each DCMD to a device this node does not have is answered by the node.
  for (let i = 0; i < MAX_ANSWERS_WAITING; i++) {
    rig.command(`spBv1.0/g/DCMD/n/nodev${i}`, [{ name: "Functions/x", boolean_value: true }]);
  }
  await flushMicrotasks();
  rig.command(NCMD, [ESTOP]);
  await flushMicrotasks();
  assert.equal(rig.status.estopLatched, true);
  while (rig.session.complete() > 0) await flushMicrotasks();
  assert.ok(
    rig.answers().some(([v]) => v === "Node Control/E-Stop: OK"),
    `the e-stop's answer was dropped: ${rig.answers().length} answers went out`,
  );
  await rig.stop();
});
