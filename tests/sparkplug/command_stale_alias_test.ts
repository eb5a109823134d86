/**
 * A DCMD naming its metric by an alias the device's current DBIRTH does not declare -- typically
 * one from before the device was born again (its provider restarted: DDEATH, then a DBIRTH with
 * new aliases) -- is answered like any refused command (the node's `Runtime/Command Result`,
 * naming the device), not only logged: a host that used the old alias is told to take the new
 * one rather than waiting for an answer that never comes.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig, oneDevice, pulseFunction } from "./_edge_node_rig.ts";

const P = "p0";
const DEVICE = sparkplugDeviceId(P, "dev0");

Deno.test("a DCMD by an alias from before the device's provider restarted is answered REFUSED, naming the device", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", { functions: [pulseFunction("pulse")] }),
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const dbirth = () =>
    rig.session.published.findLast((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`)!;
  const aliasOf = () =>
    (dbirth().payload.metrics ?? []).find((m) => m.name === "Functions/pulse")!.alias;
  const old = aliasOf();

  // The provider restarts: DDEATH, then a DBIRTH with new aliases.
  rig.setAvailable(P, false);
  await flushMicrotasks();
  rig.setAvailable(P, true);
  await flushMicrotasks();
  assert.notEqual(Number(aliasOf()), Number(old), "born again with a new alias");

  const from = rig.session.published.length;
  rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
    { alias: old, datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  assert.deepEqual(rig.calls, []);
  const answers = rig.session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(
    answers,
    [
      `${DEVICE}/alias ${String(old)}: REFUSED: unknown metric (no metric of the device's ` +
      `current DBIRTH has this alias: a device born again has new aliases)`,
    ],
    "the refusal reaches the host",
  );
  await rig.stop();
});
