/**
 * An NCMD/DCMD payload over MAX_COMMAND_BYTES is refused before it is decoded: nothing of it
 * reaches a provider, and the node answers why (`Runtime/Command Result`). Before, only the broker
 * bounded a command's size (Mosquitto's default is some 256 MB): a 5 MB DCMD of 500k metrics held
 * the event loop about 0.5 s while it was decoded and each metric refused. A DCMD of normal size
 * is carried out as before, and an NCMD e-stop, far below the bound, is taken.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { CallRequest, CallResult } from "../../src/control/mod.ts";
import { DataType, encode, MAX_COMMAND_BYTES, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { edgeNodeRig, oneDevice, pulseFunction } from "./_edge_node_rig.ts";

const P = "p0";
const DEVICE = sparkplugDeviceId(P, "dev0");
const DCMD = `spBv1.0/g/DCMD/n/${DEVICE}`;
const NCMD = "spBv1.0/g/NCMD/n";
const PULSE = { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true };

Deno.test("SparkplugEdgeNode: an NCMD/DCMD over MAX_COMMAND_BYTES is refused unread and answered; a normal DCMD and an NCMD e-stop are taken", async () => {
  const calls: CallRequest[] = [];
  const estops: string[] = [];
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", { functions: [pulseFunction("pulse")] }),
    mode: "MANUAL",
    commands: {
      call(req) {
        calls.push(req);
        return Promise.resolve({} as CallResult);
      },
      estop(reason, _source, onLatched) {
        estops.push(reason);
        onLatched?.();
        return Promise.resolve();
      },
    },
  });
  await rig.online();

  // A DCMD of valid metrics, each a call: over the bound by its count.
  const many = encode({ timestamp: 1, metrics: Array.from({ length: 10_000 }, () => PULSE) });
  assert.ok(many.length > MAX_COMMAND_BYTES, `${many.length} bytes`);
  rig.session.deliver(DCMD, many);
  // Bytes that are no Sparkplug payload: decoded they would be "undecodable", not "too large".
  const junk = new Uint8Array(MAX_COMMAND_BYTES + 1).fill(0xff);
  rig.session.deliver(DCMD, junk);
  rig.session.deliver(NCMD, junk);
  await flushMicrotasks();
  assert.deepEqual(calls, [], "nothing of an oversize DCMD reaches the provider");
  assert.equal(rig.node.counts.commandsRefused, 3);
  assert.equal(rig.node.counts.commandsIgnored, 0, "refused, not decoded and ignored");
  const why = (bytes: number) =>
    `REFUSED: payload of ${bytes} bytes, over ${MAX_COMMAND_BYTES} (MAX_COMMAND_BYTES): not read; ` +
    `send fewer or smaller metrics per command`;
  assert.deepEqual(rig.answers(), [
    [`DCMD ${DEVICE}: ${why(many.length)}`, false],
    [`DCMD ${DEVICE}: ${why(junk.length)}`, false],
    [`NCMD: ${why(junk.length)}`, false],
  ]);

  // A DCMD of normal size is carried out, and an NCMD e-stop is taken.
  rig.command(DCMD, [PULSE]);
  rig.command(NCMD, [{
    name: "Node Control/E-Stop",
    datatype: DataType.Boolean,
    boolean_value: true,
  }]);
  await flushMicrotasks();
  assert.equal(calls.length, 1, "the normal DCMD's call");
  assert.equal(estops.length, 1, "the e-stop taken");
  await rig.stop();
});

Deno.test("SparkplugEdgeNode: an oversize DCMD with commands off is answered that commands are off, as any DCMD", async () => {
  const rig = edgeNodeRig({
    providers: oneDevice(P, "dev0", { functions: [pulseFunction("pulse")] }),
  });
  await rig.online();
  rig.session.deliver(DCMD, new Uint8Array(MAX_COMMAND_BYTES + 1));
  await flushMicrotasks();
  assert.deepEqual(rig.answers(), [
    [`DCMD ${DEVICE}: REFUSED: commands are off (sparkplug.commands: false)`, false],
  ]);
  await rig.stop();
});
