/**
 * Which down provider a DCMD's device id belongs to is the id's provider part exactly, not a
 * string prefix of it. A never-started provider "sim1" (no devices known, so any device id of its
 * own is taken as its) claimed every id beginning `sim1:`, among them `sim1:10:ghost`, which no
 * device of sim1 can have (the device part of a Sparkplug device id encodes `:`): a host that
 * wrote provider "sim1:10"'s device unencoded was told sim1 is down. Ids of "sim10" and of
 * "sim1:10" (encoded, `sim1%3a10:`) were never claimed: the `:` ends the prefix.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType, sparkplugDeviceId, sparkplugDeviceProvider } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, pulseFunction } from "./_edge_node_rig.ts";

Deno.test("a never-started provider claims the device ids of its own id exactly, not those it is a prefix of", async () => {
  const rig = edgeNodeRig({
    providers: [
      { id: "sim1", available: false, lifecycle: "DOWN", devices: [] },
      {
        id: "sim10",
        available: true,
        devices: [deviceCaps("sim10", "dev0", { functions: [pulseFunction("pulse")] })],
      },
      {
        id: "sim1:10",
        available: true,
        devices: [deviceCaps("sim1:10", "dev0", { functions: [pulseFunction("pulse")] })],
      },
    ],
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const ids = [
    sparkplugDeviceId("sim1", "dev0"),
    sparkplugDeviceId("sim10", "ghost"),
    sparkplugDeviceId("sim1:10", "ghost"),
    // Not an id the node makes (its provider part is not encoded), nor sim1's.
    "sim1:10:ghost",
  ];
  const from = rig.session.published.length;
  for (const id of ids) {
    rig.command(`spBv1.0/g/DCMD/n/${id}`, [
      { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
    ]);
  }
  await flushMicrotasks();
  const answers = rig.session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(answers, [
    "sim1:dev0/Functions/pulse: REFUSED: device down (provider sim1 DOWN)",
    "sim10:ghost/Functions/pulse: REFUSED: no such device on this node",
    "sim1%3a10:ghost/Functions/pulse: REFUSED: no such device on this node",
    "sim1:10:ghost/Functions/pulse: REFUSED: no such device on this node",
  ]);
  await rig.stop();
});

Deno.test("sparkplugDeviceProvider inverts sparkplugDeviceId and names no provider for an id it never makes", () => {
  for (const [p, d] of [["sim1", "dev0"], ["a:b", "c:d"], ["%3a", "x/y+z#"], ["", ""]]) {
    assert.equal(sparkplugDeviceProvider(sparkplugDeviceId(p!, d!)), p);
  }
  for (const id of ["sim1", "sim1:10:ghost", "sim1:%3A", "sim1:%41", "a%3ab:%"]) {
    assert.equal(sparkplugDeviceProvider(id), null, id);
  }
});

Deno.test("a down provider that came up with no devices claims no device id: only one never up claims its own", async () => {
  const rig = edgeNodeRig({
    providers: [
      // Came up with no devices (host requirements unmet), then went down.
      { id: "bare", available: true, devices: [] },
      // Came up with no devices after the node started, then went down.
      { id: "late", available: false, lifecycle: "DOWN", devices: [] },
      // Never came up.
      { id: "never", available: false, lifecycle: "DOWN", devices: [] },
    ],
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  rig.setAvailable("late", true);
  rig.setAvailable("bare", false);
  rig.setAvailable("late", false);
  await flushMicrotasks();
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  const from = rig.session.published.length;
  for (const p of ["bare", "late", "never"]) {
    rig.command(`spBv1.0/g/DCMD/n/${sparkplugDeviceId(p, "dev0")}`, [
      { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
    ]);
  }
  await flushMicrotasks();
  const answers = rig.session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(answers, [
    "bare:dev0/Functions/pulse: REFUSED: no such device on this node",
    "late:dev0/Functions/pulse: REFUSED: no such device on this node",
    "never:dev0/Functions/pulse: REFUSED: device down (provider never DOWN)",
  ]);
  await rig.stop();
});
