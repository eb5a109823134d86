/**
 * The edge node's metric aliases follow the devices born now, not every device id the process
 * ever saw: a provider whose devices come and go (a reload replacing them, device ids that change
 * at each rediscovery) does not grow the alias maps, whether the device leaves while the node is
 * online (DDEATH) or while it is away (not born again at the next births).
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts), the session's writes complete
 * at once.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";

function capsOf(deviceId: string) {
  return deviceCaps(P, deviceId, {
    label: deviceId,
    functions: [{
      name: "set",
      functionId: 1,
      description: "",
      category: "CONFIG",
      actuating: true,
      args: [],
    }],
    signals: ["a", "b", "c"].map((signalId) => signalSpec(signalId, "double")),
  });
}

function rig() {
  const provider = { id: P, available: true, devices: [capsOf("dev0")] };
  const r = edgeNodeRig({ providers: [provider] });
  /** The provider now declares this device instead (a reload, a rediscovery). */
  const replaceDevice = (deviceId: string, tell: boolean) => {
    provider.devices = [capsOf(deviceId)];
    if (tell) r.changed(P);
  };
  return { node: r.node, sessions: r.sessions, replaceDevice };
}

Deno.test("devices that come and go while the node is online leave no aliases behind", async () => {
  const { node, sessions, replaceDevice } = rig();
  await node.start();
  sessions[0]!.up();
  await flushMicrotasks();
  assert.ok(node.online);
  const born = node.aliasCount;
  for (let i = 1; i <= 200; i++) {
    replaceDevice(`dev${i}`, true);
    await flushMicrotasks();
  }
  const topics = sessions[0]!.published.map((m) => m.topic);
  assert.equal(topics.filter((t) => t.includes("/DDEATH/")).length, 200);
  assert.equal(topics.filter((t) => t.includes("/DBIRTH/")).length, 201);
  assert.equal(
    node.aliasCount,
    born,
    `the alias maps grew by every device id seen: ${born} aliases at the first births, ` +
      `${node.aliasCount} after 200 devices came and went`,
  );
  // The current device's birth and its aliases: distinct from the node's own.
  const last = sessions[0]!.published.findLast((m) => m.topic.includes("/DBIRTH/"))!;
  const nbirth = sessions[0]!.published.find((m) => m.topic.includes("/NBIRTH/"))!;
  const aliases = [...last.payload.metrics ?? [], ...nbirth.payload.metrics ?? []]
    .map((m) => m.alias).filter((a) => a !== undefined).map(Number);
  assert.equal(new Set(aliases).size, aliases.length, "aliases unique across the node");
  await node.stop();
});

Deno.test("devices gone while the node was away leave their aliases at the next births", async () => {
  const { node, sessions, replaceDevice } = rig();
  await node.start();
  sessions[0]!.up();
  await flushMicrotasks();
  const born = node.aliasCount;
  for (let i = 1; i <= 50; i++) {
    // Away: no births meanwhile; a rebirth (or the next connection's births) meets the new device.
    replaceDevice(`dev${i}`, false);
    node.rebirth();
    await flushMicrotasks();
  }
  assert.equal(
    node.aliasCount,
    born,
    `aliases of devices not born again are kept: ${born} at the first births, ${node.aliasCount} now`,
  );
  await node.stop();
});
