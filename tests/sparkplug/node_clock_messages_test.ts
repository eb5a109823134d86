/**
 * The node's messages whose wall-clock read fails -- the births, a DBIRTH, a DDEATH, a DDATA, the
 * answer to an NCMD e-stop -- are not lost and not dated by an invented time: they wait for the
 * clock (NODE_CLOCK_RETRY_MS, or the next completed write) or, data, go out with their polls'
 * times as store and forward's. A failing clock is WARNed, not counted as an internal error.
 * (The node metric changes: node_clock_fails_test.ts.)
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts); its wall clock throws while
 * the test says so: at every read, or at the reads made from the node's code matching a pattern
 * (its private method, on the stack).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { DataType, decode, NODE_CLOCK_RETRY_MS } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { edgeNodeRig, type EdgeNodeRigOptions, oneDevice, signalSpec } from "./_edge_node_rig.ts";

const NBIRTH = "spBv1.0/g/NBIRTH/n";
const DBIRTH = "spBv1.0/g/DBIRTH/n/p0:dev0";
const DDEATH = "spBv1.0/g/DDEATH/n/p0:dev0";
const DDATA = "spBv1.0/g/DDATA/n/p0:dev0";
const NCMD = "spBv1.0/g/NCMD/n";
const ESTOP = { name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true };

/**
 * The rig with a wall clock that throws while `failing.at` holds: true (every read) or a pattern
 * the stack of the read must match (the node's method reading it); and its log lines.
 */
function failingRig(o: EdgeNodeRigOptions = {}) {
  const { log, lines } = capturingLogger();
  const r = edgeNodeRig({ ...o, log });
  const failing: { at: boolean | RegExp } = { at: false };
  const wall = r.clock.nowMs.bind(r.clock);
  r.clock.nowMs = () => {
    const at = failing.at;
    if (at === true || (at instanceof RegExp && at.test(new Error().stack ?? ""))) {
      throw new Error("clock_gettime failed");
    }
    return wall();
  };
  const warned = () => lines.filter((l) => l.includes("sparkplug: the wall clock failed dating"));
  return { r, failing, lines, warned };
}

function count(r: ReturnType<typeof edgeNodeRig>, topic: string): number {
  return r.session.published.filter((m) => m.topic === topic).length;
}

Deno.test("births the clock cannot date wait for it: the node comes online once it works", async () => {
  const { r, failing, warned } = failingRig({ providers: oneDevice("p0", "dev0") });
  failing.at = /#births/;
  await r.online();
  assert.equal(count(r, NBIRTH), 0, "no NBIRTH without a time");
  assert.equal(r.node.online, false);
  // Still failing at the first retry: tried again, said once.
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.equal(count(r, NBIRTH), 0);
  failing.at = false;
  const at = r.clock.nowMs() + NODE_CLOCK_RETRY_MS;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.ok(r.node.online, "born once the clock works");
  assert.equal(count(r, NBIRTH), 1);
  assert.equal(count(r, DBIRTH), 1);
  const nbirth = r.session.published.find((m) => m.topic === NBIRTH)!;
  assert.equal(Number(nbirth.payload.timestamp), at, "dated by the read that worked");
  assert.equal(r.clock.pendingTimers, 0, "no retry left");
  assert.equal(warned().length, 1, "said once: " + warned().join("\n"));
  assert.match(warned()[0]!, /failed dating the births \(NBIRTH\)/);
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("a Rebirth the clock cannot date waits for it: the births go out again once it works", async () => {
  const { r, failing } = failingRig({ providers: oneDevice("p0", "dev0") });
  await r.online();
  assert.equal(count(r, NBIRTH), 1);
  failing.at = /#births/;
  r.command(NCMD, [{
    name: "Node Control/Rebirth",
    datatype: DataType.Boolean,
    boolean_value: true,
  }]);
  await flushMicrotasks();
  assert.equal(count(r, NBIRTH), 1, "no NBIRTH without a time");
  assert.ok(r.node.online, "online on its previous births");
  failing.at = false;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.equal(count(r, NBIRTH), 2, "born again once the clock works");
  assert.equal(count(r, DBIRTH), 2);
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("a DBIRTH the clock cannot date waits for it: the device is born once it works", async () => {
  const { r, failing } = failingRig();
  await r.online();
  r.providers.push(...oneDevice("p0", "dev0"));
  failing.at = /#deviceBirth/;
  r.changed("p0");
  await flushMicrotasks();
  assert.equal(count(r, DBIRTH), 0, "no DBIRTH without a time");
  failing.at = false;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.equal(count(r, DBIRTH), 1, "born once the clock works");
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("a DDEATH the clock cannot date waits for it: the host is told the device died once it works", async () => {
  const { r, failing } = failingRig({ providers: oneDevice("p0", "dev0") });
  await r.online();
  assert.equal(count(r, DBIRTH), 1);
  failing.at = /#deviceDeath/;
  r.setAvailable("p0", false);
  await flushMicrotasks();
  assert.equal(count(r, DDEATH), 0, "no DDEATH without a time");
  failing.at = false;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.equal(count(r, DDEATH), 1, "the host is told once the clock works");
  // Back: born again (it was known dead).
  r.setAvailable("p0", true);
  await flushMicrotasks();
  assert.equal(count(r, DBIRTH), 2);
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("an NDEATH the clock cannot date is registered without a timestamp: the node connects all the same", async () => {
  const { r, failing } = failingRig();
  failing.at = true;
  await r.online();
  assert.equal(r.sessions.length, 1, "connected");
  const will = decode(r.wills[0]!.payload);
  assert.equal(will.timestamp, undefined, "no invented time");
  assert.equal(Number(will.metrics?.[0]?.long_value), r.node.bdSeq, "its bdSeq");
  failing.at = false;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.ok(r.node.online, "born once the clock works");
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

const temp = () => oneDevice("p0", "dev0", { signals: [signalSpec("temp", "double")] });

function update(value: number, timestampMs: number): PublishedEvent {
  return {
    id: 1,
    event: {
      kind: "state_update",
      provider_id: "p0",
      device_id: "dev0",
      signal_id: "temp",
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: timestampMs,
    },
  };
}

/** The DDATA values of the signal the latest session published: [value, is_historical, time]. */
function temps(r: ReturnType<typeof edgeNodeRig>): [unknown, boolean, number][] {
  return r.session.published.filter((m) => m.topic === DDATA).flatMap((m) =>
    (m.payload.metrics ?? []).map((
      x,
    ) =>
      [x.double_value, x.is_historical === true, Number(x.timestamp)] as [
        unknown,
        boolean,
        number,
      ]
    )
  );
}

Deno.test("a DDATA whose flush the clock cannot date is not dropped: it goes out with its poll's time, as store and forward's", async () => {
  const { r, failing } = failingRig({ providers: temp() });
  await r.online();
  const polled = r.clock.nowMs();
  failing.at = /#flush/;
  r.emit(update(21.5, polled));
  await flushMicrotasks();
  assert.deepEqual(temps(r), [[21.5, true, polled]], "the value, at its poll's time");
  failing.at = false;
  r.clock.advance(10);
  r.emit(update(22, r.clock.nowMs()));
  await flushMicrotasks();
  assert.deepEqual(temps(r).at(-1), [22, false, r.clock.nowMs()], "live again");
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("a change whose own clock read fails is dated by the poll's time the state cache read", async () => {
  const { r, failing } = failingRig({ providers: temp() });
  await r.online();
  const polled = r.clock.nowMs() - 3;
  failing.at = true;
  r.emit(update(7, polled));
  await flushMicrotasks();
  assert.deepEqual(temps(r), [[7, true, polled]], "not lost with the event");
  failing.at = false;
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("the answer to an NCMD e-stop the clock cannot date waits for it: answered once it works", async () => {
  const { r, failing } = failingRig({ latchEstops: true });
  await r.online();
  failing.at = /#commandResult|#answer/;
  r.command(NCMD, [ESTOP]);
  await flushMicrotasks();
  assert.equal(r.status.estopLatched, true, "the e-stop is taken");
  assert.deepEqual(r.answers(), [], "no answer without a time");
  failing.at = false;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.deepEqual(r.answers(), [["Node Control/E-Stop: OK", false]]);
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});

Deno.test("the answer to an NCMD e-stop taken while not online, the clock failing, reaches the host's history after the births", async () => {
  const { r, failing } = failingRig({ primaryHostId: "scada", latchEstops: true });
  await r.online();
  await r.hostState(true, 1);
  await r.hostState(false, 2);
  await r.clock.advanceAsync(0);
  r.session.up();
  await flushMicrotasks();
  assert.equal(r.node.online, false, "waiting for the primary host");
  failing.at = /#commandResult|#keepEstopAnswer/;
  r.command(NCMD, [ESTOP]);
  await flushMicrotasks();
  assert.equal(r.status.estopLatched, true);
  failing.at = false;
  r.clock.advance(5);
  const born = r.clock.nowMs();
  await r.hostState(true, 3);
  assert.ok(r.node.online);
  assert.deepEqual(r.answers(), [["Node Control/E-Stop: OK", true]], "kept as history");
  const ndata = r.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n").at(-1)!;
  assert.equal(Number(ndata.payload.metrics?.[0]?.timestamp), born, "dated by the births' read");
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  await r.stop();
});
