/**
 * The fleet view's device count is the devices born now, not the DBIRTHs seen: an edge node
 * publishes a DBIRTH again, without a DDEATH, for a device whose description changed (its provider
 * restarted or was reloaded with a signal retyped, a function added:
 * tests/sparkplug/rediscovery_birth_test.ts), and counting each DBIRTH listed one device twice.
 *
 * The broker session is a test double (tests/helpers/held_session.ts) that hands the fleet view
 * the messages of one edge node.
 */
import assert from "node:assert/strict";
import { DataType } from "../../src/sparkplug/mod.ts";
import { listeningFleet } from "./_fleet_rig.ts";

Deno.test("a device born again (a DBIRTH without a DDEATH) is one device in the fleet view; a DDEATH of one never born takes none away", async () => {
  const { clock, collected, send } = await listeningFleet();
  send("NBIRTH/n", [{ name: "bdSeq", datatype: DataType.UInt64, long_value: 0 }]);
  const signal = (datatype: number) => [{ name: "a", alias: 10, datatype }];
  send("DBIRTH/n/p0:dev0", signal(DataType.Double));
  send("DBIRTH/n/p0:dev1", signal(DataType.Double));
  // p0 restarts declaring `a` as a String: dev0 and dev1 are born again, no DDEATH between.
  send("DBIRTH/n/p0:dev0", signal(DataType.String));
  send("DBIRTH/n/p0:dev1", signal(DataType.String));
  // A DDEATH of a device this view never saw born (a late duplicate, another id).
  send("DDEATH/n/p9:ghost");
  clock.advance(1000);
  const { nodes } = await collected;
  assert.deepEqual(nodes.map((n) => [n.node, n.devices]), [["n", 2]]);
});

Deno.test("a node's NDEATH (of its birth's bdSeq) leaves it no devices born; a stale NDEATH of an older bdSeq takes none", async () => {
  const { clock, collected, send } = await listeningFleet();
  const bdSeq = (n: number) => [{ name: "bdSeq", datatype: DataType.UInt64, long_value: n }];
  const signal = [{ name: "a", alias: 10, datatype: DataType.Double }];
  for (const node of ["dead", "alive"]) {
    send(`NBIRTH/${node}`, bdSeq(3));
    send(`DBIRTH/${node}/p0:dev0`, signal);
    send(`DBIRTH/${node}/p0:dev1`, signal);
  }
  // "dead" dies (its will, the bdSeq of its birth); "alive" gets the late will of an older session.
  send("NDEATH/dead", bdSeq(3));
  send("NDEATH/alive", bdSeq(2));
  clock.advance(1000);
  const { nodes } = await collected;
  assert.deepEqual(nodes.map((n) => [n.node, n.reachable, n.devices]), [
    ["alive", true, 2],
    ["dead", false, 0],
  ]);
});

Deno.test("historical node metrics (store and forward's NDATA with is_historical) do not overwrite what the fleet view shows as now", async () => {
  // An edge node back from an outage publishes its births (the metrics as they are now), then
  // what changed while it was away, flagged is_historical and oldest first; with its writes at
  // their bound a live change can even go out before the last of those. The e-stop latched and
  // released while it was away is history: the node's latch is off now.
  const { clock, collected, send } = await listeningFleet();
  send("NBIRTH/n", [
    { name: "bdSeq", datatype: DataType.UInt64, long_value: 1 },
    { name: "Runtime/Mode", alias: 2, datatype: DataType.String, string_value: "MANUAL" },
    { name: "Runtime/Estop Latched", alias: 3, datatype: DataType.Boolean, boolean_value: false },
  ]);
  // A live change first, then the last historical ones (writes were at their bound).
  send("NDATA/n", [{ alias: 2, string_value: "AUTO" }]);
  send("NDATA/n", [
    { alias: 3, boolean_value: true, is_historical: true },
    { alias: 2, string_value: "FAULT", is_historical: true },
  ]);
  clock.advance(1000);
  const { nodes } = await collected;
  assert.deepEqual(
    nodes.map((n) => [n.node, n.mode, n.estopLatched]),
    [["n", "AUTO", false]],
    "the fleet view shows the node as it is now",
  );
});

Deno.test("a message whose payload does not decode lists no node: something publishing garbage under a node's topic is not a reachable node", async () => {
  const { clock, collected, send, session } = await listeningFleet();
  send("NBIRTH/n", [{ name: "bdSeq", datatype: DataType.UInt64, long_value: 0 }]);
  // A field of wire type 7 (none exists): no Sparkplug payload.
  session.deliver("spBv1.0/g/NDATA/ghost", new Uint8Array([0x0f, 0x01]));
  clock.advance(1000);
  const { nodes } = await collected;
  // Before: ["ghost", true] listed too, every field unknown.
  assert.deepEqual(nodes.map((n) => [n.node, n.reachable]), [["n", true]]);
});
