/**
 * A device DDEATH'd while its data still waits in the store-and-forward queue (writes stalled at
 * MAX_IN_FLIGHT), that then returns (its provider rediscovers it): nothing of it goes out between
 * its DDEATH and its new DBIRTH, and what the queue then drains is historical data on aliases that
 * DBIRTH declares, typed as it declares them -- also when the device came back without a signal
 * whose change was queued (that alias is no metric of the new birth: a host cannot read it).
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts) whose writes complete when the
 * test says so.
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { MAX_IN_FLIGHT, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";
const DEV1 = sparkplugDeviceId(P, "dev1");

const capsOf = (deviceId: string, signals: string[]) =>
  deviceCaps(P, deviceId, { signals: signals.map((s) => signalSpec(s, "double")) });

function update(signalId: string, value: number, id: number): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: "dev1",
      signal_id: signalId,
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

/** dev1's messages from its DDEATH on: the test takes it away with `a` and `b` queued. */
async function leaveAndReturn(returning: string[]) {
  const dev0 = capsOf("dev0", ["a"]);
  const provider = { id: P, available: true, devices: [dev0, capsOf("dev1", ["a", "b", "c"])] };
  const r = edgeNodeRig({ providers: [provider], hold: true });
  await r.online();
  r.session.complete();
  await flushMicrotasks();

  // The broker stops confirming writes: dev1's changes are queued.
  while (r.session.inFlight < MAX_IN_FLIGHT) r.node.rebirth();
  r.emit(update("a", 2, 1));
  r.emit(update("b", 3, 2));
  await flushMicrotasks();
  assert.equal(r.node.counts.stored, 1, "dev1's changes queued");
  provider.devices = [dev0];
  r.changed(P);
  await flushMicrotasks();
  const ddeath = `spBv1.0/g/DDEATH/n/${DEV1}`;
  for (let i = 0; i < 10 && !r.session.published.some((m) => m.topic === ddeath); i++) {
    r.session.completeOne();
    await flushMicrotasks();
  }
  const from = r.session.published.findIndex((m) => m.topic === ddeath);
  assert.ok(from >= 0, "dev1's DDEATH");

  // dev1 comes back (a rediscovery) before the queue drained.
  provider.devices = [dev0, capsOf("dev1", returning)];
  r.changed(P);
  await flushMicrotasks();
  while (r.session.complete() > 0) await flushMicrotasks();
  const messages = r.session.published.slice(from).filter((m) => m.topic.endsWith(`/${DEV1}`));
  await r.stop();
  return messages;
}

function check(messages: Awaited<ReturnType<typeof leaveAndReturn>>) {
  const kinds = messages.map((m) => m.topic.split("/")[2]);
  assert.equal(kinds[0], "DDEATH");
  const birth = kinds.indexOf("DBIRTH");
  assert.ok(birth > 0, `born again: ${kinds.join(" ")}`);
  assert.deepEqual(kinds.slice(1, birth), [], "nothing of dev1 between its DDEATH and DBIRTH");
  const declared = new Map(
    (messages[birth]!.payload.metrics ?? []).map((m) => [Number(m.alias), String(m.name)]),
  );
  const data = messages.slice(birth + 1).flatMap((m) => m.payload.metrics ?? []);
  for (const m of data) {
    assert.ok(declared.has(Number(m.alias)), `alias ${m.alias} is not in dev1's new DBIRTH`);
    assert.equal(m.is_historical, true, "queued data is historical");
  }
  return data.map((m) => [declared.get(Number(m.alias)), m.double_value]);
}

Deno.test("a device DDEATH'd with data queued that returns: no data between its DDEATH and DBIRTH, the queue drains after, historical, on its new birth's aliases", async () => {
  const data = check(await leaveAndReturn(["a", "b", "c"]));
  assert.deepEqual(data, [["a", 2], ["b", 3]]);
});

Deno.test("a device DDEATH'd with data queued that returns without one of those signals: that signal's data is not drained on an alias its new DBIRTH lacks", async () => {
  const data = check(await leaveAndReturn(["a", "c"]));
  assert.deepEqual(data, [["a", 2]]);
});
