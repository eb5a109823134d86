/**
 * The answer to a DCMD that waited for the writes in flight (MAX_IN_FLIGHT) goes out under an
 * alias of the device's current DBIRTH, or by the node: when a Rebirth served meanwhile born the
 * device again without the function it wrote (its provider dropped it), the answer is the node's
 * `Runtime/Command Result` naming the device -- never a DDATA under the alias of a metric its
 * latest DBIRTH no longer declares, which a host cannot read (the answer as if never given).
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts): a real broker gives no handle
 * on the writes in flight.
 */
import assert from "node:assert/strict";
import { MAX_IN_FLIGHT, NODE_METRICS, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, oneDevice, pulseFunction } from "./_edge_node_rig.ts";

const P = "p0";
const DEVICE = sparkplugDeviceId(P, "dev0");

Deno.test("a DCMD's answer that waited for the writes across a Rebirth without its function is the node's", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", {
      functions: [pulseFunction("pulse", 1), pulseFunction("other", 2)],
    }),
    mode: "MANUAL",
    recordCalls: true,
    hold: true,
  });
  await rig.online();
  rig.session.complete();
  await flushMicrotasks();
  const resultAlias = rig.nodeAlias(NODE_METRICS.commandResult);

  // The writes full: the DCMD's answer waits for one to complete. Full of answers to NCMDs, not
  // of births: a Rebirth while births are going out waits for all of them (it is folded), not
  // for the next completed write.
  for (let i = 0; i < 4 * MAX_IN_FLIGHT && rig.session.inFlight < MAX_IN_FLIGHT; i++) {
    rig.command("spBv1.0/g/NCMD/n", [{ name: `Nothing/${i}`, datatype: 11, boolean_value: true }]);
  }
  assert.equal(rig.session.inFlight, MAX_IN_FLIGHT, "the writes are full");
  rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
    { name: "Functions/pulse", datatype: 11, boolean_value: true },
  ]);
  await flushMicrotasks();
  assert.equal(rig.calls.length, 1, "the call is made");

  // Its provider drops the function; a host asks for a Rebirth (due at the next completed write).
  rig.providers[0]!.devices = [deviceCaps(P, "dev0", { functions: [pulseFunction("other", 2)] })];
  rig.changed(P);
  rig.command("spBv1.0/g/NCMD/n", [
    { name: NODE_METRICS.rebirth, datatype: 11, boolean_value: true },
  ]);
  await flushMicrotasks();
  const from = rig.session.published.length;
  for (let i = 0; i < 4 * MAX_IN_FLIGHT && rig.session.inFlight > 0; i++) {
    rig.session.completeOne();
    await flushMicrotasks();
  }

  const after = rig.session.published.slice(from);
  const dbirth = after.findLast((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`);
  assert.ok(dbirth !== undefined, "the Rebirth's DBIRTH went out");
  const born = new Set((dbirth.payload.metrics ?? []).map((m) => Number(m.alias)));
  const undeclared = after.filter((m) => m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`)
    .flatMap((m) => m.payload.metrics ?? []).filter((x) => !born.has(Number(x.alias)));
  assert.deepEqual(
    undeclared.map((x) => ({ alias: Number(x.alias), value: x.string_value })),
    [],
    "no DDATA under an alias the device's latest DBIRTH does not declare",
  );
  const answers = after.flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(answers, [`${DEVICE}/Functions/pulse: OK`], "the node gives the answer");
  await rig.stop();
});
