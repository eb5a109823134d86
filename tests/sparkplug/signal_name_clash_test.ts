/**
 * A signal whose id is the name of a metric the node makes for its device (`Functions/<name>` of
 * a function the device declares, `Properties/Type`) is not born: one DBIRTH must not declare two
 * metrics of one name and alias (a host keeps one of them and reads the other's data under its
 * datatype), and no DDATA of the signal may land on the function's or the type's alias.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { Logger } from "../../src/common/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { deviceCaps, edgeNodeRig, pulseFunction, signalSpec } from "./_edge_node_rig.ts";
import { MIN_REBIRTH_INTERVAL_MS } from "../../src/sparkplug/mod.ts";

const P = "p0";

function update(signalId: string, value: number): PublishedEvent {
  return {
    id: 1,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: "dev0",
      signal_id: signalId,
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

Deno.test("SparkplugEdgeNode leaves out of the DBIRTH a signal named as the device's function or type metric, and publishes no DDATA of it", async () => {
  const caps = deviceCaps(P, "dev0", {
    signals: [
      signalSpec("temp", "double"),
      signalSpec("Functions/pulse", "double"),
      signalSpec("Properties/Type", "double"),
    ],
    functions: [pulseFunction("pulse")],
  });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }] });
  try {
    await r.online();
    const dbirth = r.session.published.find((m) => m.topic === "spBv1.0/g/DBIRTH/n/p0:dev0");
    assert.ok(dbirth !== undefined, "DBIRTH published");
    const metrics = dbirth.payload.metrics ?? [];
    const names = metrics.map((m) => m.name);
    assert.deepEqual(names, ["temp", "Functions/pulse", "Properties/Type"]);
    assert.equal(new Set(metrics.map((m) => m.alias)).size, metrics.length, "aliases distinct");
    // The function and the type metric are the node's (Strings), not the signals (Doubles).
    assert.deepEqual(metrics.map((m) => m.datatype), [10, 12, 12]);
    const aliasOf = (name: string) => metrics.find((m) => m.name === name)?.alias;
    // A poll's changes: only temp's goes out, on temp's alias.
    r.emit(update("temp", 1));
    r.emit(update("Functions/pulse", 2));
    r.emit(update("Properties/Type", 3));
    await flushMicrotasks();
    const ddata = r.session.published.filter((m) => m.topic === "spBv1.0/g/DDATA/n/p0:dev0");
    assert.equal(ddata.length, 1);
    assert.deepEqual(ddata[0]!.payload.metrics?.map((m) => m.alias), [aliasOf("temp")]);
  } finally {
    await r.stop();
  }
});

Deno.test("SparkplugEdgeNode says a signal named as a node-made metric once per clash, not at every birth (Rebirth, reconnect)", async () => {
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (m) => void warnings.push(m),
    error: () => {},
    child: () => log,
  };
  const caps = deviceCaps(P, "dev0", {
    signals: [signalSpec("temp", "double"), signalSpec("Functions/pulse", "double")],
    functions: [pulseFunction("pulse")],
  });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }], log });
  const clashLines = () => warnings.filter((w) => w.includes("not published (named as a"));
  const dbirths = () =>
    r.sessions.flatMap((s) => s.published).filter((m) => m.topic === "spBv1.0/g/DBIRTH/n/p0:dev0")
      .length;
  try {
    await r.online();
    assert.equal(dbirths(), 1);
    // A host's Rebirth, twice (MIN_REBIRTH_INTERVAL_MS apart: a second one sooner is folded and
    // waits): each births the device again; the clash is the same.
    for (let i = 0; i < 2; i++) {
      r.command("spBv1.0/g/NCMD/n", [
        { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
      ]);
      await flushMicrotasks();
      r.clock.advance(MIN_REBIRTH_INTERVAL_MS);
      await flushMicrotasks();
    }
    // The broker connection drops; the node reconnects after reconnect_ms: births again.
    r.session.down();
    await flushMicrotasks();
    r.clock.advance(testConfig().sparkplug.reconnectMs);
    await flushMicrotasks();
    assert.equal(r.sessions.length, 2, "the node reconnected");
    r.session.up();
    await flushMicrotasks();
    assert.ok(dbirths() >= 4, `DBIRTHs: ${dbirths()}`);
    assert.deepEqual(clashLines(), [
      'sparkplug: device "p0:dev0": signals "Functions/pulse" not published (named as a metric the ' +
      "node makes for the device: a function's or Properties/Type)",
    ]);
    // Another clash (the device now also has a signal named as its type metric) is said too.
    r.providers[0]!.devices = [
      deviceCaps(P, "dev0", {
        signals: [...caps.signals, signalSpec("Properties/Type", "double")],
        functions: [pulseFunction("pulse")],
      }),
    ];
    r.changed(P);
    await flushMicrotasks();
    assert.equal(clashLines().length, 2, clashLines().join("\n"));
    assert.match(clashLines()[1]!, /signals "Functions\/pulse", "Properties\/Type" not published/);
  } finally {
    await r.stop();
  }
});

Deno.test("SparkplugEdgeNode keeps per device what its clash line says, not the whole clash: thousands of clashing signal ids keep one line's text", async () => {
  const warnings: string[] = [];
  const log: Logger = {
    debug: () => {},
    info: () => {},
    warn: (m) => void warnings.push(m),
    error: () => {},
    child: () => log,
  };
  // 3000 functions, each with a signal of 100 characters named as its metric: a clash of each.
  const names = Array.from({ length: 3000 }, (_, i) => `f${String(i).padStart(99, "0")}`);
  const caps = deviceCaps(P, "dev0", {
    signals: names.map((n) => signalSpec(`Functions/${n}`, "double")),
    functions: names.map((n, i) => pulseFunction(n, i + 1)),
  });
  const r = edgeNodeRig({ providers: [{ id: P, available: true, devices: [caps] }], log });
  const clashLines = () => warnings.filter((w) => w.includes("not published (named as a"));
  try {
    await r.online();
    assert.equal(clashLines().length, 1, clashLines().map((l) => l.slice(0, 200)).join("\n"));
    const line = clashLines()[0]!;
    assert.ok(line.includes(" and 2980 more not published"), line.slice(-200));
    // What the node keeps to say the clash once is no longer than the line it said.
    assert.ok(
      r.node.clashTextChars <= line.length,
      `kept ${r.node.clashTextChars} chars, the line has ${line.length}`,
    );
    // Still said once: a Rebirth births the device again with the same clash.
    r.command("spBv1.0/g/NCMD/n", [
      { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
    ]);
    await flushMicrotasks();
    assert.equal(clashLines().length, 1);
  } finally {
    await r.stop();
  }
});
