/**
 * Store and forward without the history ring (the DDATA queue) meets a signal retyped between two
 * types Sparkplug carries in one field: Int64 and UInt64 both travel in `long_value` (an Int64 as
 * its two's complement). A provider that comes back during a broker outage declaring a signal
 * uint64 where it was int64 (or the reverse) has its DBIRTH declare the new type, and a host reads
 * every value of that alias as that type: a kept -5 polled as int64 would read as
 * 18446744073709551611. Such values are of the old type and are left out, as every other
 * retyped signal's (docs/sparkplug.md, "Store and forward").
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts), no history ring.
 */
import assert from "node:assert/strict";
import type { SignalSpec, TypedValue } from "../../src/common/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";
const D = "d0";
const DEV = sparkplugDeviceId(P, D);

function update(value: TypedValue, id: number): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: D,
      signal_id: "x",
      value,
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

/**
 * Declared before, a value polled then, declared after, a value polled then, and that value as
 * the host reads it (`long_value`, or `string_value`). A typeless signal (declared null) is born
 * a String: its values travel as text whatever their type, so a double polled then is kept as
 * the text "2.5", which a String birth's field takes too.
 */
const cases: Array<
  [SignalSpec["valueType"], TypedValue, SignalSpec["valueType"], TypedValue, bigint | string]
> = [
  ["int64", { type: "int64", int64: -5n }, "uint64", { type: "uint64", uint64: 7n }, 7n],
  ["uint64", { type: "uint64", uint64: 2n ** 63n + 1n }, "int64", { type: "int64", int64: 7n }, 7n],
  [null, { type: "double", double: 2.5 }, "string", { type: "string", string: "warm" }, "warm"],
];

for (const [before, old, after, now, want] of cases) {
  Deno.test(`store and forward (no history ring): a signal retyped ${before} -> ${after} during an outage replays none of its values polled as the old type`, async () => {
    const provider = {
      id: P,
      available: true,
      devices: [deviceCaps(P, D, { signals: [signalSpec("x", before)] })],
    };
    const r = edgeNodeRig({ providers: [provider] });
    await r.online();
    // The broker goes away; a change polled meanwhile is kept in the queue.
    r.session.cut();
    await flushMicrotasks();
    r.emit(update(old, 1));
    await flushMicrotasks();
    assert.equal(r.node.stored.messages, 1, `the DDATA of the ${before} value is kept`);
    // The provider comes back (a restart) declaring x with the other type; a poll of it.
    provider.devices = [deviceCaps(P, D, { signals: [signalSpec("x", after)] })];
    r.changed(P);
    r.emit(update(now, 2));
    await flushMicrotasks();
    const dropped = r.node.counts.storeDropped;

    await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
    r.session.up();
    await flushMicrotasks();
    const birth = r.session.published.findLast((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEV}`)!;
    const alias = (birth.payload.metrics ?? []).find((m) => m.name === "x")!.alias;
    const xs = r.session.published
      .filter((m) => m.topic === `spBv1.0/g/DDATA/n/${DEV}`)
      .flatMap((m) => (m.payload.metrics ?? []).filter((x) => x.alias === alias))
      .map((x) =>
        x.string_value !== undefined ? x.string_value : BigInt(x.long_value as bigint | number)
      );
    assert.deepEqual(
      xs,
      [want],
      `only the ${after} value goes out under the alias its DBIRTH declares ${after}`,
    );
    assert.equal(r.node.counts.storeDropped, dropped + 1, "the left-out value is counted");
    await r.stop();
  });
}

/**
 * The same for a unit: a provider that comes back declaring x in K where it was in degC (the same
 * type) has its DBIRTH declare engUnit K, and a host reads every value of that alias in K: a kept
 * 20 polled in degC would be stored as 20 K. It is left out, as a retyped signal's.
 */
Deno.test("store and forward (no history ring): a signal declared in another unit during an outage replays none of its values polled in the old unit", async () => {
  const inUnit = (unit: string) => ({ ...signalSpec("x", "double"), unit });
  const provider = {
    id: P,
    available: true,
    devices: [deviceCaps(P, D, { signals: [inUnit("degC")] })],
  };
  const r = edgeNodeRig({ providers: [provider] });
  await r.online();
  r.session.cut();
  await flushMicrotasks();
  r.emit(update({ type: "double", double: 20 }, 1));
  await flushMicrotasks();
  assert.equal(r.node.stored.messages, 1, "the DDATA of 20 (degC) is kept");
  // The provider comes back declaring x in K, the same type; a poll of it.
  provider.devices = [deviceCaps(P, D, { signals: [inUnit("K")] })];
  r.changed(P);
  r.emit(update({ type: "double", double: 293.15 }, 2));
  await flushMicrotasks();
  const dropped = r.node.counts.storeDropped;

  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  const birth = r.session.published.findLast((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEV}`)!;
  const x = (birth.payload.metrics ?? []).find((m) => m.name === "x")!;
  const props = x.properties as { keys: string[]; values: { string_value?: string }[] };
  assert.equal(props.values[props.keys.indexOf("engUnit")]?.string_value, "K", "born in K");
  const xs = r.session.published
    .filter((m) => m.topic === `spBv1.0/g/DDATA/n/${DEV}`)
    .flatMap((m) => (m.payload.metrics ?? []).filter((v) => v.alias === x.alias))
    .map((v) => v.double_value);
  assert.deepEqual(xs, [293.15], "a host would store 20 degC as 20 K under that birth");
  assert.equal(r.node.counts.storeDropped, dropped + 1, "the left-out value is counted");
  await r.stop();
});
