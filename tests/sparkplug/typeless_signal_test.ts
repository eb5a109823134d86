/**
 * A signal whose provider declares no value type is born as a String metric (a host needs one
 * datatype per alias, and a typeless signal may carry any). Sparkplug B reads a metric's value from
 * the field its datatype names, so its values travel as text in `string_value` -- in the DBIRTH and
 * in every DDATA -- never in the field of the type a poll happened to return, which a host reading
 * the String would see as no value at all.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { TypedValue } from "../../src/common/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { DataType, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";
const DEV = sparkplugDeviceId(P, "dev0");

function update(id: number, value: TypedValue): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: "dev0",
      signal_id: "any",
      value,
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

Deno.test("a typeless signal is born as a String and each of its values travels as text in string_value", async () => {
  const caps = deviceCaps(P, "dev0", {
    signals: [{ ...signalSpec("any", "double"), valueType: null }],
  });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }] });
  await r.online();
  const dbirth = r.session.published.find((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEV}`);
  const born = (dbirth?.payload.metrics ?? []).find((m) => m.name === "any");
  assert.equal(born?.datatype, DataType.String);
  const values: TypedValue[] = [
    { type: "double", double: 2.5 },
    { type: "int64", int64: -7 },
    { type: "uint64", uint64: 2n ** 60n },
    { type: "bool", bool: true },
    { type: "string", string: "on" },
  ];
  for (const [i, v] of values.entries()) {
    r.emit(update(i + 1, v));
    await flushMicrotasks();
  }
  const data = r.session.published.filter((m) => m.topic === `spBv1.0/g/DDATA/n/${DEV}`);
  const fields = data.map((m) => {
    const x = (m.payload.metrics ?? [])[0]!;
    const set = Object.keys(x).filter((k) => k.endsWith("_value") && x[k] !== undefined);
    return [set, x.string_value];
  });
  assert.deepEqual(fields, [
    [["string_value"], "2.5"],
    [["string_value"], "-7"],
    [["string_value"], String(2n ** 60n)],
    [["string_value"], "true"],
    [["string_value"], "on"],
  ], "a String metric's value is in string_value, whatever type the poll returned");
  await r.stop();
});
