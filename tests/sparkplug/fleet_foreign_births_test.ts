/**
 * Two runtimes of one copied configuration (one `runtime.name`, a `sparkplug.client_id` each)
 * publish as one edge node: each counts the other's NBIRTHs
 * (runtime_sparkplug_foreign_births_total) but the fleet view could not tell (the same bdSeq in
 * both copies looks like a reconnect). The node metric `Sparkplug/Foreign Births` is its
 * FOREIGN BIRTHS column, flagged above 0. On a real Mosquitto; then the view's reading of the
 * metric over a session double.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { DataType, fleetTable } from "../../src/sparkplug/mod.ts";
import { listeningFleet, withFleetLab } from "./_fleet_rig.ts";

const FLAG = "SHARED NODE ID";

Deno.test({
  name:
    "the fleet view's FOREIGN BIRTHS column flags a node two runtimes publish as (a copied configuration); a node alone shows 0",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const a = await lab.runtime("rig-twin", { clientId: "machine-a" });
      await waitFor("the first copy's births", () => a.sparkplug!.online);
      const b = await lab.runtime("rig-twin", { clientId: "machine-b" });
      await waitFor("the second copy's births", () => b.sparkplug!.online);
      // The first heard the second's NBIRTH (the second subscribed after the first was born).
      await waitFor("the first copy's count", () => a.sparkplug!.counts.foreignBirths > 0 || null);
      await lab.runtime("rig-solo");
      const { nodes } = await lab.collect();
      const twin = nodes.find((n) => n.node === "rig-twin");
      const solo = nodes.find((n) => n.node === "rig-solo");
      assert.ok(twin?.born && solo?.born, JSON.stringify(nodes));
      assert.ok((twin.foreignBirths ?? 0) > 0, `twin: ${twin.foreignBirths}`);
      assert.equal(solo.foreignBirths, 0);
      const table = fleetTable(nodes).split("\n");
      assert.match(table[0]!, /FOREIGN BIRTHS$/);
      const row = (name: string) => table.find((l) => l.includes(name))!;
      assert.ok(row("rig-twin").endsWith(`${twin.foreignBirths} ${FLAG}`), row("rig-twin"));
      assert.match(row("rig-solo"), / 0$/);
    }),
});

Deno.test("the fleet view keeps the highest Sparkplug/Foreign Births of a node in its window (a birth of the other copy, which heard none, takes none back); none published shows ?", async () => {
  const { clock, collected, send } = await listeningFleet();
  const birth = (foreign: number | null) => [
    { name: "bdSeq", datatype: DataType.UInt64, long_value: 0 },
    { name: "Runtime/Mode", alias: 1, datatype: DataType.String, string_value: "IDLE" },
    ...(foreign === null ? [] : [{
      name: "Sparkplug/Foreign Births",
      alias: 2,
      datatype: DataType.UInt64,
      long_value: foreign,
    }]),
  ];
  // The copy that heard the other's birth, then the other (its count still 0).
  send("NBIRTH/twin", birth(1));
  send("NBIRTH/twin", birth(0));
  // The first hears that birth: its NDATA, by alias.
  send("NDATA/twin", [{ alias: 2, long_value: 3 }]);
  send("NDATA/twin", [{ alias: 2, long_value: 0 }]);
  send("NBIRTH/old", birth(null));
  clock.advance(1000);
  const { nodes } = await collected;
  assert.deepEqual(nodes.map((n) => [n.node, n.foreignBirths]), [["old", null], ["twin", 3]]);
  const rows = fleetTable(nodes).split("\n");
  assert.match(rows[1]!, /^g +old .* \?$/);
  assert.match(rows[2]!, new RegExp(`^g +twin .* 3 ${FLAG}$`));
});
