/**
 * A node the fleet view saw die (its NDEATH) that publishes again came back with births the view
 * missed (QoS 0, or sent while the view's connection was down): docs/sparkplug.md, "The fleet
 * view": it is asked for a Rebirth and "stays dead in the table, with the metrics of its last
 * births, until its NBIRTH comes", and "a dead node has none" (devices). Its NDATA and DBIRTH of
 * the session the view did not see born changed the dead row: a node listed dead with devices
 * born and the latch of a session the view knows nothing of.
 *
 * The broker session is a test double (tests/helpers/held_session.ts).
 */
import assert from "node:assert/strict";
import { DataType } from "../../src/sparkplug/mod.ts";
import { listeningFleet } from "./_fleet_rig.ts";

Deno.test("a dead node's data and DBIRTH before its NBIRTH leave it dead with its last births' metrics and no devices", async () => {
  const { clock, collected, send, session } = await listeningFleet(60000);
  const asks = () => session.published.filter((m) => m.topic === "spBv1.0/g/NCMD/n").length;
  const bdSeq = (n: number) => [{ name: "bdSeq", datatype: DataType.UInt64, long_value: n }];
  send("NBIRTH/n", [
    ...bdSeq(1),
    { name: "Runtime/Mode", alias: 2, datatype: DataType.String, string_value: "MANUAL" },
    { name: "Runtime/Estop Latched", alias: 3, datatype: DataType.Boolean, boolean_value: false },
  ]);
  send("DBIRTH/n/p0:dev0", [{ name: "a", alias: 10, datatype: DataType.Double }]);
  send("NDEATH/n", bdSeq(1));
  // Back with bdSeq 2, its NBIRTH missed: its data and a device born later reach the view.
  send("NDATA/n", [{ alias: 3, boolean_value: true }, { alias: 2, string_value: "AUTO" }]);
  send("DBIRTH/n/p0:dev1", [{ name: "a", alias: 11, datatype: DataType.Double }]);
  assert.equal(asks(), 1, "a node that publishes after its NDEATH is asked for its births");
  clock.advance(60000);
  const { nodes } = await collected;
  assert.deepEqual(
    nodes.map((n) => [n.node, n.reachable, n.mode, n.estopLatched, n.devices]),
    [["n", false, "MANUAL", false, 0]],
    "dead, with the metrics of its last births and no device, until its NBIRTH",
  );
});
