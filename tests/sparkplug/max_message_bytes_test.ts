/**
 * `sparkplug.max_message_bytes` (docs/sparkplug.md): the node never publishes a message whose MQTT
 * packet, counted as Mosquitto counts max_packet_size, is over the bound. A device whose DBIRTH is
 * larger stays unborn (WARNed once, in the status, DCMDs refused naming the size) while the others
 * are born; a DDATA larger is split in order under consecutive seq; a metric alone too large is
 * left out, counted.
 */
import assert from "node:assert/strict";
import { DataType, encode, mqttPacketBytes, splitMetrics } from "../../src/sparkplug/mod.ts";
import type { Metric, Payload } from "../../src/sparkplug/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { deviceCaps, type EdgeNodeRig, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p";
/** 40 signals: a DBIRTH of some 1.5 kB (names, datatypes, properties). */
const big = deviceCaps(P, "big", {
  signals: Array.from({ length: 40 }, (_, i) => signalSpec(`temperature_${i}`, "double")),
});
/** Ten string signals: a small DBIRTH (no values yet), a DDATA as large as its strings. */
const small = deviceCaps(P, "small", {
  signals: Array.from({ length: 10 }, (_, i) => signalSpec(`s${i}`, "string")),
});
const DBIRTH_BIG = "spBv1.0/g/DBIRTH/n/p:big";

function rig(maxMessageBytes?: number) {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [big, small] }],
    mode: "MANUAL",
    recordCalls: true,
    log,
    ...(maxMessageBytes === undefined ? {} : { maxMessageBytes }),
  });
  return { r, lines };
}

/** Each message's packet size as the bound counts it (payload re-encoded from the decoded one). */
function packetBytes(m: EdgeNodeRig["session"]["published"][number]): number {
  return mqttPacketBytes(m.topic, encode(m.payload as Payload).length, 0);
}

function update(signalId: string, text: string, id: number): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: "small",
      signal_id: signalId,
      value: { type: "string", string: text },
      quality: "OK",
      timestamp_ms: 0,
    },
  } as PublishedEvent;
}

Deno.test("mqttPacketBytes counts as Mosquitto does: 1 + remaining length (topic, packet id at QoS 1, payload)", () => {
  // Mosquitto 2.0.11, max_packet_size 1024: topic "t", QoS 1, 1018 payload bytes is accepted,
  // 1019 closes the connection (tests/sparkplug/max_message_bytes_broker_test.ts).
  assert.equal(mqttPacketBytes("t", 1018, 1), 1024);
  assert.equal(mqttPacketBytes("t", 1018, 0), 1022);
  assert.equal(mqttPacketBytes("\u00e9", 0, 0), 5, "the topic's UTF-8 bytes");
});

Deno.test("splitMetrics keeps order, fills each part up to the limit exactly, and drops a metric alone too large", () => {
  const m = (n: number): Metric => ({ alias: n, timestamp: 1, string_value: "x".repeat(n) });
  const size = (x: Metric) =>
    encode({ timestamp: 0, metrics: [x] }).length - encode({ timestamp: 0, metrics: [] }).length;
  const metrics = [m(10), m(20), m(30), m(200), m(5)];
  const fixed = 50;
  const limit = fixed + size(metrics[0]!) + size(metrics[1]!);
  const { parts, dropped } = splitMetrics(metrics, fixed, limit);
  assert.deepEqual(parts.map((p) => p.map((x) => x.alias)), [[10, 20], [30], [5]]);
  assert.deepEqual(dropped.map((x) => x.alias), [200]);
  for (const p of parts) {
    assert.ok(fixed + p.reduce((n, x) => n + size(x), 0) <= limit);
  }
  // One byte less: the first two no longer share a part.
  assert.deepEqual(
    splitMetrics(metrics, fixed, limit - 1).parts.map((p) => p.map((x) => x.alias)),
    [[10], [20], [30], [5]],
  );
});

Deno.test("SparkplugEdgeNode: a DBIRTH over max_message_bytes leaves that device unborn, said once; the others are born and publish", async () => {
  // Its DBIRTH's size without a bound, then the bound at it and one below.
  const free = rig();
  await free.r.online();
  const birth = free.r.session.published.find((m) => m.topic === DBIRTH_BIG)!;
  const bytes = packetBytes(birth);
  await free.r.stop();
  assert.ok(bytes > 1024, `${bytes}`);

  const exact = rig(bytes);
  await exact.r.online();
  assert.ok(exact.r.session.published.some((m) => m.topic === DBIRTH_BIG), "born at the bound");
  assert.deepEqual(exact.r.node.unbornTooLarge, []);
  await exact.r.stop();

  const { r, lines } = rig(bytes - 1);
  await r.online();
  const topics = () => r.session.published.map((m) => m.topic);
  assert.ok(!topics().includes(DBIRTH_BIG), "not born one byte over");
  assert.ok(topics().includes("spBv1.0/g/DBIRTH/n/p:small"));
  assert.deepEqual(r.node.unbornTooLarge, [{ deviceId: "p:big", bytes }]);
  for (const m of r.session.published) assert.ok(packetBytes(m) <= bytes - 1, m.topic);
  r.node.rebirth();
  await flushMicrotasks();
  r.setAvailable(P, true);
  await flushMicrotasks();
  const warns = lines.filter((l) => l.startsWith("WARN") && /device "p:big" not born/.test(l));
  assert.equal(warns.length, 1, lines.join("\n"));
  assert.match(
    warns[0]!,
    new RegExp(`its DBIRTH is ${bytes} bytes, over .*max_message_bytes ${bytes - 1}`),
  );
  assert.equal(topics().filter((t) => t === DBIRTH_BIG).length, 0);
  assert.ok(r.node.online);
  // A DCMD to it: refused by the node, naming the size.
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
  assert.match(
    String(answers[0]),
    new RegExp(
      `REFUSED: device not born: its DBIRTH is ${bytes} bytes, over sparkplug.max_message_bytes ${
        bytes - 1
      }`,
    ),
  );
  assert.deepEqual(r.calls, []);
  // Smaller capabilities: born.
  r.providers[0]!.devices = [deviceCaps(P, "big", { signals: [signalSpec("t", "double")] }), small];
  r.changed(P);
  await flushMicrotasks();
  assert.ok(topics().includes(DBIRTH_BIG));
  assert.deepEqual(r.node.unbornTooLarge, []);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a DDATA over max_message_bytes goes out as several, in order, under consecutive seq; a metric alone too large is left out, counted", async () => {
  const limit = 1024;
  const { r, lines } = rig(limit);
  await r.online();
  const from = r.session.published.length;
  const texts = Array.from({ length: 10 }, (_, i) => `${i}`.repeat(300));
  texts[7] = "7".repeat(2000); // alone over the bound
  texts.forEach((t, i) => r.emit(update(`s${i}`, t, i + 1)));
  await flushMicrotasks();
  const ddata = r.session.published.slice(from).filter((m) =>
    m.topic === "spBv1.0/g/DDATA/n/p:small"
  );
  assert.ok(ddata.length >= 3, `${ddata.length} messages`);
  for (const m of ddata) assert.ok(packetBytes(m) <= limit, `${packetBytes(m)}`);
  const seqs = ddata.map((m) => Number(m.payload.seq));
  seqs.forEach((s, i) => i > 0 && assert.equal(s, (seqs[i - 1]! + 1) % 256));
  const values = ddata.flatMap((m) => (m.payload.metrics ?? []).map((x) => x.string_value));
  assert.deepEqual(values, texts.filter((_, i) => i !== 7));
  assert.equal(r.node.counts.tooLargeDropped, 1);
  assert.equal(lines.filter((l) => l.startsWith("WARN") && /left out/.test(l)).length, 1);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: an NBIRTH over max_message_bytes keeps the node from coming online, said at ERROR once, without reconnecting", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [small] }],
    log,
    maxMessageBytes: 1024,
    groupId: "g".repeat(900),
  });
  await r.online();
  assert.deepEqual(r.session.published, [], "nothing published: no births");
  assert.equal(r.node.connected, true);
  assert.equal(r.node.online, false);
  r.node.rebirth();
  r.emit(update("s0", "x", 1));
  await flushMicrotasks();
  await r.clock.advanceAsync(60_000);
  assert.equal(r.sessions.length, 1, "no reconnect");
  assert.deepEqual(r.session.published, []);
  const errors = lines.filter((l) => l.startsWith("ERROR") && /NBIRTH is \d+ bytes/.test(l));
  assert.equal(errors.length, 1, lines.join("\n"));
  assert.match(errors[0]!, /over sparkplug\.max_message_bytes 1024: the node cannot come online/);
  // What makes the NBIRTH fit, and so brings the node online, on this connection (the node
  // metrics' values), then at a restart.
  assert.match(
    errors[0]!,
    /cannot come online \(a shorter mode name \(IDLE, not MANUAL\) or smaller alarm or provider counts make the NBIRTH fit; else, at a restart, shorten group_id\/edge_node_id or raise the bound\)$/,
  );
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a Rebirth whose NBIRTH grew over max_message_bytes publishes nothing and says the node stays online on its previous births, as it does", async () => {
  // The NBIRTH's size in mode IDLE, measured on a node without a bound: the bound is exactly
  // that, so the first births fit and the NBIRTH of mode MANUAL (2 bytes more) does not.
  const measure = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [small] }],
    recordCalls: true, // commands on: the NBIRTH offers Node Control/E-Stop
  });
  await measure.online();
  const first = measure.session.published.find((m) => m.topic === "spBv1.0/g/NBIRTH/n")!;
  const limit = packetBytes(first);
  await measure.stop();

  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [small] }],
    log,
    recordCalls: true,
    maxMessageBytes: limit,
  });
  await r.online();
  const nbirths = () => r.session.published.filter((m) => m.topic === "spBv1.0/g/NBIRTH/n");
  assert.equal(nbirths().length, 1, "born: the NBIRTH fits the bound exactly");
  assert.equal(packetBytes(nbirths()[0]!), limit);
  r.status.mode = "MANUAL";
  const from = r.session.published.length;
  const rebirth = [{ name: "Node Control/Rebirth", datatype: 11, boolean_value: true }];
  r.command("spBv1.0/g/NCMD/n", rebirth);
  r.command("spBv1.0/g/NCMD/n", rebirth);
  r.node.rebirth();
  await flushMicrotasks();
  // State: still online on the births published before, no NDEATH, no births.
  assert.equal(r.node.online, true);
  assert.equal(r.sessions.length, 1);
  assert.deepEqual(
    r.session.published.slice(from).map((m) => m.topic).filter((t) => /BIRTH|DEATH/.test(t)),
    [],
  );
  assert.equal(r.node.counts.births, 1);
  // Log: agrees with that state.
  assert.deepEqual(
    lines.filter((l) => /cannot come online|publishing births/.test(l)),
    [],
    "no line says the node cannot come online, nor that births are published",
  );
  assert.equal(r.node.counts.commandsIgnored, 2, "each Rebirth asked is counted as ignored");
  const said = lines.filter((l) => /births not published again; the node stays online/.test(l));
  assert.equal(said.length, 3, lines.join("\n")); // two Rebirth commands, one rebirth()
  for (const l of said) {
    assert.match(l, /^WARN /);
    assert.match(l, new RegExp(`NBIRTH is now ${limit + 2} bytes, over [^ ]+ ${limit}:`));
    // What makes it fit on this connection, then at a restart; the command lines not cut.
    assert.ok(
      l.endsWith(
        "the node stays online on its previous births (a shorter mode name (IDLE, not MANUAL) " +
          "or smaller alarm or provider counts make the NBIRTH fit; else, at a restart, shorten " +
          "group_id/edge_node_id or raise the bound)",
      ),
      l,
    );
  }
  // Data still goes out under the births that stand; back under the bound, a Rebirth is served.
  r.status.mode = "IDLE";
  r.command("spBv1.0/g/NCMD/n", rebirth);
  await flushMicrotasks();
  assert.equal(nbirths().length, 2);
  assert.equal(r.node.online, true);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: an NBIRTH over max_message_bytes at the births is measured again at each node metric change: still over, nothing; within, the births follow, said at INFO once", async () => {
  // The NBIRTH's size in mode IDLE, measured on a node without a bound: the bound is exactly
  // that, so mode MANUAL (2 bytes more) and FAULT (1 more) are over it.
  const measure = edgeNodeRig({ providers: [{ id: P, available: true, devices: [small] }] });
  await measure.online();
  const first = measure.session.published.find((m) => m.topic === "spBv1.0/g/NBIRTH/n")!;
  const limit = packetBytes(first);
  await measure.stop();

  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [small] }],
    log,
    mode: "MANUAL",
    maxMessageBytes: limit,
  });
  const modeChange = (from: string, to: string, id: number) => {
    r.status.mode = to;
    r.emit(
      {
        id,
        event: { kind: "mode_change", previous_mode: from, new_mode: to, timestamp_ms: 0 },
      } as PublishedEvent,
    );
  };
  const nbirths = () => r.session.published.filter((m) => m.topic === "spBv1.0/g/NBIRTH/n");
  await r.online();
  assert.equal(r.node.online, false);
  assert.equal(r.session.published.length, 0);
  // Shorter, still over the bound (FAULT: one byte over): no births, nothing said again.
  modeChange("MANUAL", "FAULT", 1);
  await flushMicrotasks();
  assert.equal(r.node.online, false);
  assert.equal(r.session.published.length, 0);
  // Within the bound (IDLE: exactly it): the births, on the same connection.
  modeChange("FAULT", "IDLE", 2);
  await flushMicrotasks();
  assert.equal(r.node.online, true);
  assert.equal(r.sessions.length, 1);
  assert.equal(nbirths().length, 1);
  assert.equal(packetBytes(nbirths()[0]!), limit);
  const errors = lines.filter((l) => /NBIRTH is \d+ bytes, over/.test(l));
  assert.equal(errors.length, 1, lines.join("\n"));
  assert.match(errors[0]!, new RegExp(`^ERROR .*NBIRTH is ${limit + 2} bytes`));
  const comes = lines.filter((l) => /the node comes online/.test(l));
  assert.equal(comes.length, 1, lines.join("\n"));
  assert.match(comes[0]!, new RegExp(`^INFO .*NBIRTH is now ${limit} bytes, within `));
  // Grown over it again while online: stays online on those births (31496ff3).
  modeChange("IDLE", "MANUAL", 3);
  await flushMicrotasks();
  assert.equal(r.node.online, true);
  assert.equal(nbirths().length, 1);
  await r.stop();
});
