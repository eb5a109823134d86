/**
 * The node's monotonic clock reads go through one guard (#monoRead/#monoNow), as its wall-clock
 * reads do (#wallNow): a read that throws, returns NaN or steps back does not leave the births half
 * done, the node unconnected after a close, or store and forward out of poll order. It is WARNed
 * once per failing spell, not counted as an internal error.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts); its monotonic clock fails at the
 * reads the node's own code makes (edge_node.ts on the stack) while the test says so. The
 * ManualClock's timers do not read it (they run on its `mono` field).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { edgeNodeRig, type EdgeNodeRigOptions, oneDevice, signalSpec } from "./_edge_node_rig.ts";

const NBIRTH = "spBv1.0/g/NBIRTH/n";
const DBIRTH = "spBv1.0/g/DBIRTH/n/p0:dev0";
const DDATA = "spBv1.0/g/DDATA/n/p0:dev0";

/**
 * The rig whose monotonic clock, read from edge_node.ts, does what `failing.mono` says: throws,
 * returns NaN, or reads 25 s back.
 */
function monoRig(o: EdgeNodeRigOptions = {}) {
  const { log, lines } = capturingLogger();
  const r = edgeNodeRig({ ...o, log });
  const failing: { mono: "no" | "throw" | "nan" | "back" } = { mono: "no" };
  const mono = r.clock.monoMs.bind(r.clock);
  r.clock.monoMs = () => {
    if (!/edge_node\.ts/.test(new Error().stack ?? "")) return mono();
    switch (failing.mono) {
      case "throw":
        throw new Error("clock_gettime(CLOCK_MONOTONIC) failed");
      case "nan":
        return NaN;
      case "back":
        return mono() - 25_000;
      default:
        return mono();
    }
  };
  const warned = () => lines.filter((l) => l.includes("the monotonic clock failed"));
  return { r, failing, lines, warned };
}

function count(r: ReturnType<typeof edgeNodeRig>, topic: string): number {
  return r.session.published.filter((m) => m.topic === topic).length;
}

function temp(value: number): PublishedEvent {
  return {
    id: value,
    event: {
      kind: "state_update",
      provider_id: "p0",
      device_id: "dev0",
      signal_id: "temp",
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 1_700_000_000_000 + value,
    },
  };
}

const tempDevice = () => oneDevice("p0", "dev0", { signals: [signalSpec("temp", "double")] });

Deno.test("a monotonic read that throws at the births leaves them whole: NBIRTH and DBIRTH go out", async () => {
  const { r, failing, warned } = monoRig({ providers: tempDevice() });
  failing.mono = "throw";
  await r.online();
  assert.equal(count(r, NBIRTH), 1, "NBIRTH published");
  assert.equal(count(r, DBIRTH), 1, "DBIRTH published");
  assert.ok(r.node.online);
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  assert.equal(warned().length, 1, "said once per spell: " + warned().join("\n"));
  await r.stop();
});

Deno.test("a monotonic read that throws as the connection closes: the node reconnects", async () => {
  const { r, failing } = monoRig({ providers: tempDevice() });
  await r.online();
  failing.mono = "throw";
  r.session.cut();
  await flushMicrotasks();
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  assert.equal(r.sessions.length, 2, "a new connection opened");
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("a connection that held, closed while the monotonic clock steps back, is not a birth loss", async () => {
  const { r, failing, lines } = monoRig({ providers: tempDevice() });
  const reconnectMs = testConfig().sparkplug.reconnectMs;
  await r.online();
  for (let i = 0; i < 6; i++) {
    // Each connection holds 20 s (past BIRTH_LOSS_WINDOW_MS); the clock read at its close is
    // 25 s back, behind the births' read (a step back): not counted as closed at its births.
    await r.clock.advanceAsync(20_000);
    failing.mono = "back";
    r.session.cut();
    await flushMicrotasks();
    failing.mono = "no";
    await r.clock.advanceAsync(reconnectMs);
    r.session.up();
    await flushMicrotasks();
  }
  assert.equal(r.sessions.length, 7);
  assert.ok(
    !lines.some((l) => l.includes("of its births 5 times in a row")),
    "no back-off for connections that held: " + lines.join("\n"),
  );
  await r.stop();
});

for (const kind of ["nan", "back"] as const) {
  Deno.test(`DDATA whose writes fail come back in poll order when a monotonic read failed (${kind})`, async () => {
    const { r, failing } = monoRig({ providers: tempDevice(), hold: true });
    await r.online();
    r.session.complete(); // the births
    await r.clock.advanceAsync(10);
    // Poll 1 goes out live; poll 2 too, while the monotonic clock fails (behind poll 1's read).
    r.emit(temp(1));
    await flushMicrotasks();
    await r.clock.advanceAsync(10);
    failing.mono = kind;
    r.emit(temp(2));
    await flushMicrotasks();
    failing.mono = "no";
    assert.equal(count(r, DDATA), 2, "both went out live");
    // Both writes fail with the connection: kept for store and forward, then replayed.
    r.session.cut();
    await flushMicrotasks();
    await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
    r.session.up();
    await flushMicrotasks();
    r.session.complete();
    await flushMicrotasks();
    const replayed = r.session.published.filter((m) => m.topic === DDATA).map((m) =>
      m.payload.metrics?.[0]?.double_value
    );
    assert.deepEqual(replayed, [1, 2], "replayed in poll order");
    assert.equal(r.node.counts.internalErrors, 0);
    await r.stop();
  });
}

Deno.test("an NCMD e-stop taken on a session being ended, its monotonic read failing: its answer reaches the host's history", async () => {
  const { r, failing } = monoRig({ primaryHostId: "scada", latchEstops: true, holdEnd: true });
  await r.online();
  await r.hostState(true, 1);
  await r.hostState(false, 2); // the NDEATH out, the old session being ended
  failing.mono = "throw";
  r.sessions[0]!.deliver(
    "spBv1.0/g/NCMD/n",
    encode({
      timestamp: 1,
      metrics: [{ name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true }],
    }),
  );
  await flushMicrotasks();
  assert.equal(r.status.estopLatched, true, "the latch, whatever the clock");
  failing.mono = "no";
  r.sessions[0]!.ended();
  await flushMicrotasks();
  await r.clock.advanceAsync(0);
  r.session.up();
  await flushMicrotasks();
  await r.hostState(true, 3);
  assert.ok(r.node.online, "born again");
  assert.deepEqual(r.answers(), [["Node Control/E-Stop: OK", true]], "the answer kept as history");
  assert.equal(r.node.counts.internalErrors, 0);
  await r.stop();
});
