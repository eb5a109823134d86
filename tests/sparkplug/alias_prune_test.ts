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
import type { PublishedEvent } from "../../src/events/mod.ts";
import { DataType, MAX_IN_FLIGHT, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { deviceCaps, type EdgeNodeRig, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

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

/** A state_update of a signal of `deviceId` (as the cache publishes a poll's change). */
function update(deviceId: string, signalId: string, value: number, id: number): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: deviceId,
      signal_id: signalId,
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

/** The aliases a DBIRTH gave its metrics, by name. */
function birthAliases(r: EdgeNodeRig, deviceId: string): Map<string, unknown> {
  const birth = r.session.published.findLast((m) =>
    m.topic === `spBv1.0/g/DBIRTH/n/${sparkplugDeviceId(P, deviceId)}`
  )!;
  return new Map((birth.payload.metrics ?? []).map((m) => [String(m.name), m.alias]));
}

Deno.test("a DDEATH forgets the aliases of that device alone: the others' and the node's still name their metrics", async () => {
  const provider = { id: P, available: true, devices: [capsOf("dev0"), capsOf("dev1")] };
  const r = edgeNodeRig({
    providers: [provider],
    mode: "MANUAL",
    recordCalls: true,
  });
  await r.online();
  const born = r.node.aliasCount;
  const dev0 = birthAliases(r, "dev0");
  const dev1 = birthAliases(r, "dev1");

  provider.devices = [capsOf("dev0")];
  r.changed(P);
  await flushMicrotasks();
  assert.equal(r.node.aliasCount, born - dev1.size, "dev1's aliases, and only those, forgotten");

  // dev0's data and commands by alias are as its DBIRTH declared; the node's answer alias too.
  const from = r.session.published.length;
  r.emit(update("dev0", "b", 1.5, 1));
  await flushMicrotasks();
  r.command(`spBv1.0/g/DCMD/n/${sparkplugDeviceId(P, "dev0")}`, [
    { alias: dev0.get("Functions/set"), datatype: DataType.Boolean, boolean_value: true },
  ]);
  r.command(`spBv1.0/g/DCMD/n/${sparkplugDeviceId(P, "dev0")}`, [
    { alias: dev1.get("Functions/set"), datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  const after = r.session.published.slice(from);
  assert.deepEqual(
    after.filter((m) => m.topic.includes("/DDATA/")).map((m) =>
      (m.payload.metrics ?? []).map((x) => [x.alias, x.double_value ?? x.string_value])
    ),
    [[[dev0.get("b"), 1.5]], [[dev0.get("Functions/set"), "OK"]]],
  );
  assert.deepEqual(
    r.calls.map((c) => `${c.deviceId}/${c.functionName}`),
    ["dev0/set"],
    "dev0's function by its alias; dev1's alias names nothing",
  );
  await r.stop();
});

Deno.test("a device DDEATH'd with data still queued keeps its aliases until that data is drained, then forgets them", async () => {
  const provider = { id: P, available: true, devices: [capsOf("dev0"), capsOf("dev1")] };
  const r = edgeNodeRig({ providers: [provider], hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const born = r.node.aliasCount;
  const dev1 = birthAliases(r, "dev1");

  // The broker stops confirming writes: dev1's change is queued (store and forward).
  while (r.session.inFlight < MAX_IN_FLIGHT) r.node.rebirth();
  r.emit(update("dev1", "a", 2, 1));
  await flushMicrotasks();
  assert.equal(r.node.counts.stored, 1, "dev1's change queued");
  provider.devices = [capsOf("dev0")];
  r.changed(P);
  await flushMicrotasks();
  // Writes complete one by one until dev1's DDEATH goes out; its queued DDATA still waits.
  const ddeath = `spBv1.0/g/DDEATH/n/${sparkplugDeviceId(P, "dev1")}`;
  for (let i = 0; i < 10 && !r.session.published.some((m) => m.topic === ddeath); i++) {
    r.session.completeOne();
    await flushMicrotasks();
  }
  assert.ok(r.session.published.some((m) => m.topic === ddeath), "dev1's DDEATH");
  assert.equal(r.node.aliasCount, born, "kept while dev1's data is queued");
  while (r.session.complete() > 0) await flushMicrotasks();
  assert.equal(r.node.aliasCount, born - dev1.size, "forgotten once its queued data went");
  await r.stop();
});
