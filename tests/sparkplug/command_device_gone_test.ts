/**
 * A DCMD whose device leaves while its call runs (the provider crashes or restarts, a reload
 * removes it): the call's outcome still reaches the host. The device's own metric is gone with
 * its DDEATH, so the node answers, naming the device (`Runtime/Command Result`), as for a DCMD
 * to a device it does not have.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts): the test hands the node its
 * DCMD, holds the call and takes the provider away meanwhile.
 */
import assert from "node:assert/strict";
import type { CallResult } from "../../src/control/mod.ts";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig, oneDevice, pulseFunction } from "./_edge_node_rig.ts";

const P = "p0";
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

Deno.test("a DCMD whose device leaves while its call runs is still answered: by the node, naming the device", async () => {
  let answerCall: (() => void) | null = null;
  const rig = edgeNodeRig({
    providers: oneDevice(P, D, { functions: [pulseFunction("pulse")] }),
    mode: "MANUAL",
    commands: {
      call: () =>
        new Promise<CallResult>((resolve) => answerCall = () => resolve({} as CallResult)),
      estop: () => Promise.resolve(),
    },
  });
  await rig.online();
  const session = rig.session;
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  rig.command(`spBv1.0/g/DCMD/n/${DEVICE}`, [
    { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  assert.ok(answerCall !== null, "the call runs");

  // The provider goes away while the call runs (its process died; the call was sent).
  rig.setAvailable(P, false);
  await flushMicrotasks();
  assert.ok(
    session.published.some((m) => m.topic === `spBv1.0/g/DDEATH/n/${DEVICE}`),
    "the DDEATH",
  );
  const from = session.published.length;
  (answerCall as () => void)();
  await flushMicrotasks();
  const answers = session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n" || m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`
      ? (m.payload.metrics ?? []).map((x) => [m.topic.split("/")[2], x.alias, x.string_value])
      : []
  );
  assert.deepEqual(
    answers,
    [["NDATA", resultAlias, `${DEVICE}/Functions/pulse: OK`]],
    "the call's outcome never reached the host",
  );
  await rig.stop();
});
