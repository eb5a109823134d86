/**
 * Store and forward from the history ring, in process with an injected clock: the edge node keeps
 * nothing while the broker is down and, after the births, walks the ring (src/history/ring.ts
 * ChangeWalk through the kernel's port) one poll at a time: one DDATA per poll with that poll's
 * changes, in poll order, the poll time on the message and every metric, values a double cannot
 * hold replayed exactly, never more than MAX_IN_FLIGHT writes outstanding (the cursor goes on as
 * writes complete). Data that cannot go out while the replay fills the writes is replayed after it.
 * Also the births' signal timestamps: the time the runtime received the value, whatever the
 * provider's clock says.
 *
 * The MQTT session is a test double here (tests/helpers/held_session.ts; the other tests of store
 * and forward run against Mosquitto): completing the broker's writes at will is what shows the
 * in-flight bound, and a real broker gives no such handle.
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities, Quality, SignalSpec, TypedValue } from "../../src/common/mod.ts";
import type { PublishedEvent, RuntimeEvent } from "../../src/events/mod.ts";
import { historyReplay } from "../../src/app/kernel.ts";
import type { InventoryReader, SignalState } from "../../src/state/mod.ts";
import {
  BDSEQ_SAVE_WAIT_MS,
  type BdSeqStore,
  MAX_IN_FLIGHT,
  type Metric,
  QUALITY_CODE,
  SparkplugEdgeNode,
} from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { HeldSession } from "../helpers/held_session.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

const P = "p0";
const D = "dev0";
const DEVICE = `${P}:${D}`;

function spec(signalId: string, valueType: SignalSpec["valueType"]): SignalSpec {
  return {
    signalId,
    name: signalId,
    description: "",
    valueType,
    unit: "",
    pollHintHz: 10,
    staleAfterMs: 0,
  };
}

const caps: DeviceCapabilities = {
  device: {
    providerId: P,
    deviceId: D,
    providerName: "test",
    typeId: "t",
    typeVersion: "1",
    label: "dev",
    address: "",
    tags: {},
  },
  functions: [],
  signals: [spec("a", "double"), spec("b", "uint64")],
};

/** The runtime around the edge node: a device polled by hand into a real History. */
function rig(o: { bdSeqStore?: BdSeqStore } = {}) {
  // The device is the cache's throughout (its ring is never swept as removed): every poll is fed.
  const { clock, history, feed } = handFedHistory({
    memorySeconds: 600,
    memoryMaxBytes: 64 << 20,
    diskMaxBytes: 0,
  });
  const config = testConfig();
  const signals = new Map<string, SignalState>();
  const bus: ((e: PublishedEvent) => void)[] = [];
  let eventId = 0;
  const summary = { id: P, available: true, devices: [caps] };
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => [caps.device],
    capabilities: () => caps,
    onChange: () => () => {},
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const session = new HeldSession();
  /** Sessions the node opened (the double stands for each). */
  let sessions = 0;
  const node = new SparkplugEdgeNode({
    config: { ...config.sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => {
      sessions++;
      return Promise.resolve(session);
    },
    bus: {
      subscribe(l) {
        bus.push(l);
        return () => {};
      },
    },
    inventory,
    reads: { signal: (_p, _d, s) => signals.get(s), qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "AUTO",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 1,
      providersDown: 0,
    }),
    // The composition root's adapter of the ring (src/app/kernel.ts), not a copy of it.
    replay: historyReplay(history),
    ...(o.bdSeqStore ? { bdSeqStore: o.bdSeqStore } : {}),
    runtimeVersion: "test",
    clock,
    log: testLogger(),
  });
  /** One poll 100 ms after the last: the changed signals' events (as the cache publishes them), then the ring. */
  const poll = (values: Record<string, { value: TypedValue; quality?: Quality }>) => {
    clock.advance(100);
    const now = clock.nowMs();
    for (const [id, v] of Object.entries(values)) {
      const quality = v.quality ?? "OK";
      signals.set(id, { value: v.value, quality, timestampMs: now, receivedMono: clock.monoMs() });
      const event: RuntimeEvent = {
        kind: "state_update",
        provider_id: P,
        device_id: D,
        signal_id: id,
        value: v.value,
        quality,
        timestamp_ms: now,
      };
      for (const l of bus) l({ id: ++eventId, event });
    }
    feed({
      providerId: P,
      deviceId: D,
      pollable: ["a", "b"],
      signals,
      lastPollMs: now,
      lastPollMono: clock.monoMs(),
      available: true,
    });
    return now;
  };
  /**
   * After a lost connection: the node opens its next session once reconnect_ms passed (and its
   * bdSeq is recorded); the broker accepts it.
   */
  const reconnect = async () => {
    await clock.advanceAsync(config.sparkplug.reconnectMs);
    session.up();
  };
  return { clock, history, node, session, poll, signals, reconnect, sessions: () => sessions };
}

const BIG = 2n ** 60n;
const big = (i: number): TypedValue => ({ type: "uint64", uint64: BIG + BigInt(i) });
const dbl = (i: number): TypedValue => ({ type: "double", double: i + 0.25 });

Deno.test("the replay walks the ring poll by poll under MAX_IN_FLIGHT, in order, grouped per poll, exact", async () => {
  const { history, node, session, poll, reconnect } = rig();
  await history.start();
  await node.start();
  poll({ a: { value: dbl(0) }, b: { value: big(0) } });
  session.up();
  await flushMicrotasks();
  const dbirth = session.published.find((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`);
  assert.ok(dbirth, "births");
  const alias = new Map((dbirth.payload.metrics ?? []).map((m) => [Number(m.alias), m.name]));
  session.complete();
  await flushMicrotasks();
  // Online: a change goes out live.
  const live = poll({ a: { value: dbl(1) } });
  await flushMicrotasks();
  const liveData = session.published.filter((m) => m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`);
  assert.equal(liveData.length, 1);
  assert.ok((liveData[0]!.payload.metrics ?? []).every((m) => m.is_historical !== true));
  session.complete();
  await flushMicrotasks();

  // The broker goes away for 2400 polls: a changes every poll, b (beyond 2^53) every third,
  // a's quality FAULT at one of them. Nothing is kept: the outage is noted.
  session.down();
  const expected: { t: number; a: TypedValue; quality: Quality; b?: TypedValue }[] = [];
  for (let i = 2; i < 2402; i++) {
    const quality: Quality = i === 500 ? "FAULT" : "OK";
    const values: Record<string, { value: TypedValue; quality?: Quality }> = {
      a: { value: dbl(i), quality },
    };
    if (i % 3 === 0) values.b = { value: big(i) };
    const t = poll(values);
    expected.push({ t, a: dbl(i), quality, ...(i % 3 === 0 ? { b: big(i) } : {}) });
  }
  await flushMicrotasks();
  assert.deepEqual(node.stored, { messages: 0, bytes: 0 });
  assert.equal(node.counts.stored, 0);
  assert.equal(node.replayPending, true);
  assert.equal(
    node.outageStartMs,
    expected[0]!.t,
    "the outage starts at the first change not sent",
  );

  // Back: births, then the replay fills the writes up to MAX_IN_FLIGHT and waits.
  const before = session.published.length;
  await reconnect(); // the next session, after sparkplug.reconnect_ms
  await flushMicrotasks();
  assert.equal(session.inFlight, MAX_IN_FLIGHT);
  const first = session.published.slice(before);
  assert.equal(first[0]!.topic, "spBv1.0/g/NBIRTH/n");
  assert.equal(first[1]!.topic, `spBv1.0/g/DBIRTH/n/${DEVICE}`);
  assert.equal(first.length, MAX_IN_FLIGHT);
  // A poll while the writes are full cannot go out: it is replayed after the rest.
  const during = poll({ a: { value: dbl(9999) } });
  await flushMicrotasks();
  expected.push({ t: during, a: dbl(9999), quality: "OK" });
  for (let rounds = 0; session.inFlight > 0; rounds++) {
    assert.ok(rounds < 10, "the replay goes on as writes complete");
    session.complete();
    await flushMicrotasks();
    assert.ok(session.inFlight <= MAX_IN_FLIGHT);
  }
  assert.equal(node.replayPending, false);

  const replayed = session.published.slice(before + 2);
  assert.equal(replayed.length, expected.length);
  assert.equal(node.counts.replayed, expected.length);
  assert.equal(node.counts.storeDropped, 0);
  replayed.forEach((m, k) => {
    const want = expected[k]!;
    assert.equal(m.topic, `spBv1.0/g/DDATA/n/${DEVICE}`);
    assert.equal(Number(m.payload.timestamp), want.t, `DDATA ${k}: the poll's time`);
    const metrics: Metric[] = m.payload.metrics ?? [];
    const byName = new Map(metrics.map((x) => [alias.get(Number(x.alias)), x]));
    assert.equal(metrics.length, want.b === undefined ? 1 : 2, `DDATA ${k}: the poll's changes`);
    for (const x of metrics) {
      assert.equal(x.is_historical, true);
      assert.equal(Number(x.timestamp), want.t);
    }
    const a = byName.get("a")!;
    assert.equal(a.double_value, (want.a as { double: number }).double);
    assert.equal(
      (a.properties as { values: { int_value: number }[] }).values[0]!.int_value,
      QUALITY_CODE[want.quality],
    );
    if (want.b !== undefined) {
      assert.equal(byName.get("b")!.long_value, (want.b as { uint64: bigint }).uint64);
    }
  });
  assert.ok(Number(replayed[0]!.payload.timestamp) > live, "what went out live is not replayed");
  const stopping = node.stop(); // NDEATH: completed here
  await flushMicrotasks();
  session.complete();
  await stopping;
  await history.stop();
});

Deno.test("a wall clock stepped back during an outage loses no poll: the replay follows the ring's poll order, not its times", async () => {
  // NTP stepping the clock back (or a Raspberry Pi without an RTC correcting itself) while the
  // broker is away: the polls after the step carry earlier times than the outage's start. Keyed
  // on time, the walk skipped them, uncounted.
  const { clock, history, node, session, poll, reconnect } = rig();
  await history.start();
  await node.start();
  poll({ a: { value: dbl(0) } });
  session.up();
  await flushMicrotasks();
  session.complete();
  await flushMicrotasks();
  session.down();
  const expected: number[] = [];
  for (let i = 1; i <= 20; i++) {
    if (i === 11) clock.stepWall(-60_000); // a minute back, halfway through the outage
    poll({ a: { value: dbl(i) } });
    expected.push(i + 0.25);
  }
  await flushMicrotasks();
  const before = session.published.length;
  await reconnect();
  for (let rounds = 0; rounds < 20 && (session.inFlight > 0 || node.replayPending); rounds++) {
    await flushMicrotasks();
    session.complete();
    await flushMicrotasks();
  }
  assert.equal(node.replayPending, false);
  const replayed = session.published.slice(before).filter((m) =>
    m.topic === `spBv1.0/g/DDATA/n/${DEVICE}`
  );
  assert.deepEqual(
    replayed.map((m) => (m.payload.metrics ?? [])[0]!.double_value),
    expected,
    "every poll of the outage, in poll order",
  );
  assert.equal(node.counts.storeDropped, 0);
  const stopping = node.stop();
  await flushMicrotasks();
  session.complete();
  await stopping;
  await history.stop();
});

Deno.test("bdSeq saves run one at a time and only the latest waits: a stalled store holds a reconnect BDSEQ_SAVE_WAIT_MS at most, and connections flapping meanwhile leave the latest recorded", async () => {
  const log: string[] = [];
  const held: (() => void)[] = [];
  let recorded: number | null = 4;
  const store: BdSeqStore = {
    load: () => Promise.resolve(recorded),
    save(n) {
      log.push(`start ${n}`);
      if (log.length === 1) { // the save at start goes through at once
        recorded = n;
        log.push(`end ${n}`);
        return Promise.resolve();
      }
      return new Promise<void>((resolve) =>
        held.push(() => {
          recorded = n;
          log.push(`end ${n}`);
          resolve();
        })
      );
    },
  };
  const { clock, history, node, session, poll, reconnect, sessions } = rig({ bdSeqStore: store });
  await history.start();
  await node.start();
  assert.equal(node.bdSeq, 5, "the next after the recorded 4");
  poll({ a: { value: dbl(0) } });
  for (let flap = 0; flap < 3; flap++) {
    if (flap > 0) {
      // The save of the next bdSeq hangs: the next session waits for it, BDSEQ_SAVE_WAIT_MS at most.
      await clock.advanceAsync(BDSEQ_SAVE_WAIT_MS - 1);
      assert.equal(sessions(), flap, "no new session while the save may still come");
      await clock.advanceAsync(1);
      assert.equal(sessions(), flap + 1);
    }
    session.up();
    await flushMicrotasks();
    session.complete();
    await flushMicrotasks();
    session.down(); // a born connection lost: the next bdSeq
    await flushMicrotasks();
  }
  assert.equal(node.bdSeq, 8);
  assert.deepEqual(log, ["start 5", "end 5", "start 6"], "7 and 8 wait for the save of 6");
  held.shift()!();
  await flushMicrotasks();
  assert.deepEqual(log, ["start 5", "end 5", "start 6", "end 6", "start 8"], "7 is skipped");
  held.shift()!();
  await flushMicrotasks();
  assert.equal(recorded, 8);
  await reconnect();
  await flushMicrotasks();
  assert.equal(node.connected, true);
  const stopping = node.stop();
  await flushMicrotasks();
  session.complete();
  await stopping;
  await history.stop();
});

Deno.test("a DBIRTH's signal metrics carry the time the runtime received each value, never the provider's timestamp", async () => {
  const { clock, history, node, session, poll, signals } = rig();
  await history.start();
  await node.start();
  const polled = poll({ a: { value: dbl(0) }, b: { value: big(0) } });
  // The provider's clock: a year ahead for a, the epoch (a board without a real-time clock) for b.
  signals.set("a", { ...signals.get("a")!, timestampMs: polled + 365 * 86_400_000 });
  signals.set("b", { ...signals.get("b")!, timestampMs: 0 });
  clock.advance(250); // the births come later than the poll
  session.up();
  await flushMicrotasks();
  const dbirth = session.published.find((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`);
  assert.ok(dbirth, "births");
  const byName = new Map((dbirth.payload.metrics ?? []).map((m) => [m.name, m]));
  assert.equal(Number(byName.get("a")!.timestamp), polled, "a: received at the poll");
  assert.equal(Number(byName.get("b")!.timestamp), polled, "b: received at the poll");
  assert.equal(Number(dbirth.payload.timestamp), polled + 250);
  const stopping = node.stop();
  await flushMicrotasks();
  session.complete();
  await stopping;
  await history.stop();
});

Deno.test("a live DDATA whose write fails as the connection is cut is replayed from the ring after the next births", async () => {
  const { history, node, session, poll, reconnect } = rig();
  await history.start();
  await node.start();
  poll({ a: { value: dbl(0) }, b: { value: big(0) } });
  session.up();
  await flushMicrotasks();
  session.complete();
  await flushMicrotasks();
  // A change goes out live; the connection is cut before it was written (MQTT.js fails it).
  const lost = poll({ a: { value: dbl(1) } });
  await flushMicrotasks();
  const topic = `spBv1.0/g/DDATA/n/${DEVICE}`;
  assert.equal(session.published.filter((m) => m.topic === topic).length, 1, "sent live");
  session.cut();
  await flushMicrotasks();
  const before = session.published.length;
  await reconnect();
  await flushMicrotasks();
  while (session.complete() > 0) await flushMicrotasks();
  const replayed = session.published.slice(before).filter((m) => m.topic === topic);
  assert.deepEqual(
    replayed.map((m) =>
      (m.payload.metrics ?? []).map((x) => [Number(x.timestamp), x.double_value, x.is_historical])
    ),
    [[[lost, 1.25, true]]],
    "the change whose write failed reaches the host, with is_historical, after the births",
  );
  const stopping = node.stop();
  await flushMicrotasks();
  session.complete();
  await stopping;
  await history.stop();
});
