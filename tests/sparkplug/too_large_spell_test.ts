/**
 * `sparkplug.max_message_bytes`: a device held back for its DBIRTH's size is WARNed once per
 * spell, and the spell outlasts its provider going down and coming back with the same
 * capabilities (a flapping provider is not a WARN each time it is back). It ends when the device
 * is born or leaves the configuration; a spell after that is WARNed again, and so are changed
 * capabilities still too large. While its provider is down it is not listed as held back for its
 * size. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { DataType } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p";
/** 40 signals: a DBIRTH of some 1.5 kB, over a bound of 1024. */
const big = () =>
  deviceCaps(P, "big", {
    signals: Array.from({ length: 40 }, (_, i) => signalSpec(`temperature_${i}`, "double")),
  });
const small = () => deviceCaps(P, "small", { signals: [signalSpec("s0", "string")] });

/** The devices the node lists as held back for their size. */
const listed = (r: ReturnType<typeof rig>["r"]) => r.node.unbornTooLarge.map((t) => t.deviceId);

function rig(restarting = new Set<string>()) {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    restarting,
    providers: [{ id: P, available: true, devices: [big(), small()] }],
    log,
    maxMessageBytes: 1024,
    mode: "MANUAL",
    recordCalls: true,
  });
  const warns = () =>
    lines.filter((l) => l.startsWith("WARN") && /device "p:big" not born/.test(l)).length;
  return { r, warns, lines };
}

Deno.test("SparkplugEdgeNode: a device too large to be born is WARNed once across its provider going down and up with the same capabilities", async () => {
  const { r, warns, lines } = rig();
  await r.online();
  assert.equal(warns(), 1);
  for (let i = 0; i < 3; i++) {
    r.setAvailable(P, false);
    await flushMicrotasks();
    // The provider comes back with new objects of the same capabilities (a rediscovery).
    r.providers[0]!.devices = [big(), small()];
    r.setAvailable(P, true);
    await flushMicrotasks();
  }
  // Down across a reconnect: the births while it is down keep the spell too.
  r.setAvailable(P, false);
  await flushMicrotasks();
  // A DCMD to it meanwhile: refused for the provider down, the first reason it is not born.
  const resultAlias = r.nodeAlias("Runtime/Command Result");
  const from = r.session.published.length;
  r.command("spBv1.0/g/DCMD/n/p:big", [
    { name: "temperature_0", datatype: DataType.Double, double_value: 1 },
  ]);
  await flushMicrotasks();
  const answers = r.session.published.slice(from).flatMap((m) =>
    (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
  );
  assert.equal(answers.length, 1, JSON.stringify(answers));
  assert.match(String(answers[0]), /REFUSED: device down \(provider p /);
  assert.deepEqual(r.calls, []);
  r.session.cut();
  await flushMicrotasks();
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  r.setAvailable(P, true);
  await flushMicrotasks();
  assert.equal(warns(), 1, lines.join("\n"));
  assert.deepEqual(r.node.unbornTooLarge.map((t) => t.deviceId), ["p:big"]);
  assert.ok(!r.session.published.some((m) => m.topic === "spBv1.0/g/DBIRTH/n/p:big"));
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a too-large spell ends when the device leaves its provider's inventory: back, it is WARNed again", async () => {
  const { r, warns } = rig();
  await r.online();
  assert.equal(warns(), 1);
  r.providers[0]!.devices = [small()];
  r.changed(P);
  await flushMicrotasks();
  assert.deepEqual(r.node.unbornTooLarge, []);
  r.providers[0]!.devices = [big(), small()];
  r.changed(P);
  await flushMicrotasks();
  assert.equal(warns(), 2);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a too-large spell ends when its provider leaves the configuration (a reload), even while down", async () => {
  const { r, warns } = rig();
  await r.online();
  r.setAvailable(P, false);
  await flushMicrotasks();
  r.providers.splice(0);
  r.changed(P);
  await flushMicrotasks();
  assert.deepEqual(r.node.unbornTooLarge, []);
  // Configured again (a reload), up with the same device: a new spell, WARNed again.
  r.providers.push({ id: P, available: true, devices: [big(), small()] });
  r.changed(P);
  await flushMicrotasks();
  assert.deepEqual(listed(r), ["p:big"]);
  assert.equal(warns(), 2);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a too-large spell outlasts a reload restarting its provider (its entry changed): back with the same capabilities, not WARNed again", async () => {
  const restarting = new Set<string>();
  const { r, warns, lines } = rig(restarting);
  await r.online();
  assert.equal(warns(), 1);
  // The reload takes the old process out; the provider stays configured (not gone) meanwhile.
  restarting.add(P);
  r.providers.splice(0);
  r.changed(P);
  await flushMicrotasks();
  // Down while restarting: not held back for its size, and a DCMD to it says why it is down.
  assert.deepEqual(listed(r), []);
  const resultAlias = r.nodeAlias("Runtime/Command Result");
  const from = r.session.published.length;
  r.command("spBv1.0/g/DCMD/n/p:big", [
    { name: "temperature_0", datatype: DataType.Double, double_value: 1 },
  ]);
  await flushMicrotasks();
  const answers = r.session.published.slice(from).flatMap((m) =>
    (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
  );
  assert.deepEqual(answers, [
    "p:big/temperature_0: REFUSED: device down (provider p is being restarted by a " +
    "configuration reload)",
  ]);
  // Its successor registered (down), then up with the same capabilities.
  restarting.delete(P);
  r.providers.push({ id: P, available: false, devices: [] });
  r.changed(P);
  await flushMicrotasks();
  r.providers[0]!.devices = [big(), small()];
  r.setAvailable(P, true);
  await flushMicrotasks();
  assert.deepEqual(listed(r), ["p:big"]);
  assert.equal(warns(), 1, lines.join("\n"));
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a device too large is not listed as held back for its size while its provider is down, and is again once it is back", async () => {
  const { r } = rig();
  await r.online();
  assert.deepEqual(listed(r), ["p:big"]);
  const bytes = r.node.unbornTooLarge[0]!.bytes;
  r.setAvailable(P, false);
  await flushMicrotasks();
  assert.deepEqual(listed(r), []);
  r.providers[0]!.devices = [big(), small()];
  r.setAvailable(P, true);
  await flushMicrotasks();
  assert.deepEqual(r.node.unbornTooLarge, [{ deviceId: "p:big", bytes }]);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a device back with changed capabilities still too large is WARNed again once, with its new size", async () => {
  const { r, warns, lines } = rig();
  await r.online();
  assert.equal(warns(), 1);
  const before = r.node.unbornTooLarge[0]!.bytes;
  /** 50 signals: a larger DBIRTH, still over the bound. */
  const bigger = () =>
    deviceCaps(P, "big", {
      signals: Array.from({ length: 50 }, (_, i) => signalSpec(`temperature_${i}`, "double")),
    });
  // Its provider goes down and comes back with the changed device (a provider restart).
  r.setAvailable(P, false);
  await flushMicrotasks();
  r.providers[0]!.devices = [bigger(), small()];
  r.setAvailable(P, true);
  await flushMicrotasks();
  assert.equal(warns(), 2, lines.join("\n"));
  const after = r.node.unbornTooLarge[0]!.bytes;
  assert.ok(after > before, `${after} > ${before}`);
  const said = lines.filter((l) => /device "p:big" not born/.test(l)).at(-1)!;
  assert.match(said, new RegExp(`^WARN .*its DBIRTH is ${after} bytes`));
  // The same changed device again (a flap, a rediscovery): the same spell, no WARN.
  r.setAvailable(P, false);
  await flushMicrotasks();
  r.providers[0]!.devices = [bigger(), small()];
  r.setAvailable(P, true);
  await flushMicrotasks();
  r.providers[0]!.devices = [bigger(), small()];
  r.changed(P);
  await flushMicrotasks();
  assert.equal(warns(), 2, lines.join("\n"));
  // Changed again while up (a reload): a new fact, WARNed once more.
  r.providers[0]!.devices = [big(), small()];
  r.changed(P);
  await flushMicrotasks();
  assert.equal(warns(), 3, lines.join("\n"));
  // Its size as measured now (its aliases were numbered again), the one the WARN names.
  const now = r.node.unbornTooLarge[0]!.bytes;
  assert.ok(now < after, `${now} < ${after}`);
  assert.match(
    lines.filter((l) => /device "p:big" not born/.test(l)).at(-1)!,
    new RegExp(` ${now} bytes`),
  );
  await r.stop();
});
