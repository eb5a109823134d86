/**
 * The edge node's bdSeq across connections, against a real Mosquitto through the MQTT.js adapter,
 * with a BdSeqStore the test holds (a disk that stalls): a CONNECT never carries a bdSeq the store
 * does not hold yet, so a runtime that crashes at any moment restarts with a bdSeq no will of the
 * crashed process used (Sparkplug 3.0 tck-id-payloads-ndeath-will-message-bdseq: bdSeq advances
 * by one per MQTT CONNECT; the NBIRTH's is the will's).
 */
import assert from "node:assert/strict";
import { cuttableRelay } from "../helpers/cuttable_relay.ts";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { connectMqttJs, systemClock } from "../../src/host/mod.ts";
import type { MqttConnect } from "../../src/common/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { type BdSeqStore, decode, SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-bdseq";
const RECONNECT_MS = 100;

/** A store whose saves after the first wait until the test lets them through. */
function heldStore() {
  let recorded: number | null = null;
  let held = false;
  const waiting: (() => void)[] = [];
  const store: BdSeqStore = {
    load: () => Promise.resolve(recorded),
    save(n) {
      if (!held) {
        recorded = n;
        return Promise.resolve();
      }
      return new Promise((resolve) =>
        waiting.push(() => {
          recorded = n;
          resolve();
        })
      );
    },
  };
  return {
    store,
    get recorded() {
      return recorded;
    },
    hold() {
      held = true;
    },
    release() {
      held = false;
      for (const w of waiting.splice(0)) w();
    },
  };
}

/** An edge node without devices on `url`, its connections recorded (the store's value at each). */
function edgeNode(
  url: string,
  store: BdSeqStore,
  recorded: () => number | null,
  primaryHostId = "",
  connectTimeoutMs = testConfig().sparkplug.connectTimeoutMs,
) {
  const atConnect: (number | null)[] = [];
  /** Connections the session reported closed (each attempt refused is one). */
  const closes = { count: 0 };
  const connect: MqttConnect = async (o) => {
    const session = await connectMqttJs(o);
    return {
      ...session,
      onClose: (l) =>
        session.onClose((willUsed) => {
          closes.count++;
          l(willUsed);
        }),
      onConnect: (l) =>
        session.onConnect((sessionPresent) => {
          atConnect.push(recorded());
          l(sessionPresent);
        }),
      get connected() {
        return session.connected;
      },
    };
  };
  const inventory = {
    providers: () => [],
    provider: () => undefined,
    devices: () => [],
    capabilities: () => undefined,
    onChange: () => () => {},
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const node = new SparkplugEdgeNode({
    config: {
      ...testConfig().sparkplug,
      enabled: true,
      brokerUrl: url,
      groupId: GROUP,
      reconnectMs: RECONNECT_MS,
      connectTimeoutMs,
      primaryHostId,
    },
    edgeNodeId: NODE,
    clientId: `${GROUP}-${NODE}`,
    connect,
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "IDLE",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 0,
      providersDown: 0,
    }),
    bdSeqStore: store,
    runtimeVersion: "test",
    clock: systemClock,
    log: testLogger(),
  });
  return { node, atConnect, closes };
}

const bdSeqOf = (m: Received) =>
  Number((m.payload.metrics ?? []).find((x) => x.name === "bdSeq")?.long_value);

Deno.test({
  name:
    "after a lost connection the node reconnects only once the next bdSeq is recorded: a crash then never reuses a will's bdSeq",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP, { reconnectPeriod: RECONNECT_MS });
    const disk = heldStore();
    const { node, atConnect } = edgeNode(broker.url, disk.store, () => disk.recorded);
    const nbirths = () => host.messages.filter((m) => m.topic.includes("/NBIRTH/"));
    try {
      await node.start();
      await waitFor("the first NBIRTH", () => nbirths().length === 1);
      assert.equal(bdSeqOf(nbirths()[0]!), 0);
      assert.equal(disk.recorded, 0);

      // The disk stalls; the broker goes away and comes back.
      disk.hold();
      await broker.pause();
      await waitFor("the connection lost", () => !node.connected);
      await broker.resume();
      // Ten reconnect periods: a node that reconnects without waiting for the store does by then.
      await waitFor("a reconnect", () => node.connected, 10 * RECONNECT_MS).catch(() => {});
      assert.equal(
        node.connected,
        false,
        `connected again (will bdSeq ${node.bdSeq}) while the store still holds ${disk.recorded}: ` +
          `a crash now restarts with bdSeq ${node.bdSeq}, whose NDEATH the broker publishes at the takeover`,
      );

      disk.release();
      await waitFor("the second NBIRTH", () => nbirths().length === 2);
      assert.equal(bdSeqOf(nbirths()[1]!), 1);
      assert.deepEqual(atConnect, [0, 1], "each CONNECT's bdSeq recorded before it");
    } finally {
      disk.release();
      await node.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a connection that never published births still used its bdSeq: the next CONNECT has the next one",
  ignore: mosquittoMissing(),
  async fn() {
    // The primary host is offline: the node connects (will: bdSeq 0) and waits without births.
    // The connection is lost; the broker published (or holds) its will with bdSeq 0. Sparkplug
    // 3.0 advances bdSeq per MQTT CONNECT: births on the next connection with bdSeq 0 again pair
    // with a will already out (or still due at a takeover).
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP, { reconnectPeriod: RECONNECT_MS });
    const disk = heldStore();
    const { node, atConnect } = edgeNode(broker.url, disk.store, () => disk.recorded, "scada-1");
    try {
      await node.start();
      await waitFor("connected, waiting for the primary host", () => node.connected);
      assert.equal(node.online, false);
      await broker.pause();
      await waitFor("the connection lost", () => !node.connected);
      await broker.resume();
      await waitFor("connected again", () => node.connected);
      // The host's client reconnects too: its subscription is renewed on its new connection
      // before what it publishes there, so the births the STATE below brings are not missed.
      await waitFor("the host connected again", () => host.client.connected);
      await host.client.publishAsync(
        "spBv1.0/STATE/scada-1",
        JSON.stringify({ online: true, timestamp: Date.now() }),
        { qos: 1, retain: true },
      );
      const nbirth = await waitFor(
        "NBIRTH",
        () => host.messages.find((m) => m.topic.includes("/NBIRTH/")),
      );
      assert.equal(bdSeqOf(nbirth), 1, "the second CONNECT's bdSeq: one more than the first's");
      assert.deepEqual(atConnect, [0, 1], "each CONNECT's bdSeq recorded before it");
      assert.equal(disk.recorded, 1);
    } finally {
      await node.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

/**
 * A broker that accepts TCP connections and reads them but never answers a CONNECT: the bdSeq of
 * each CONNECT's will, in order of arrival.
 */
function silentBroker() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const wills: number[] = [];
  const conns = new Set<Deno.Conn>();
  const serve = async (conn: Deno.Conn) => {
    conns.add(conn);
    let bytes = new Uint8Array(0);
    const chunk = new Uint8Array(4096);
    try {
      for (;;) {
        const n = await conn.read(chunk);
        if (n === null) break;
        const next = new Uint8Array(bytes.length + n);
        next.set(bytes);
        next.set(chunk.subarray(0, n), bytes.length);
        bytes = next;
        const will = connectWill(bytes);
        if (will !== null) {
          wills.push(will);
          break;
        }
      }
      // Keep reading (and never answer) until the client gives up.
      while ((await conn.read(chunk)) !== null) { /* nothing */ }
    } catch { /* closed */ }
    conns.delete(conn);
    try {
      conn.close();
    } catch { /* already */ }
  };
  const accepting = (async () => {
    try {
      for await (const conn of listener) void serve(conn);
    } catch { /* closed */ }
  })();
  return {
    url: `mqtt://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    wills,
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch { /* already */ }
      }
      await accepting;
    },
  };
}

/** The bdSeq in the will of an MQTT 3.1.1 CONNECT packet, once it is whole (else null). */
function connectWill(b: Uint8Array): number | null {
  if (b.length < 2 || b[0] !== 0x10) return null;
  let len = 0;
  let mul = 1;
  let i = 1;
  for (;;) {
    if (i >= b.length) return null;
    const d = b[i++]!;
    len += (d & 127) * mul;
    mul *= 128;
    if ((d & 128) === 0) break;
  }
  if (b.length < i + len) return null;
  const u16 = (at: number) => (b[at]! << 8) | b[at + 1]!;
  i += 2 + u16(i); // protocol name
  i += 1; // level
  const flags = b[i++]!;
  i += 2; // keep-alive
  i += 2 + u16(i); // client id
  if ((flags & 0x04) === 0) return null;
  i += 2 + u16(i); // will topic
  const payload = b.subarray(i + 2, i + 2 + u16(i));
  const bdSeq = (decode(payload).metrics ?? []).find((m) => m.name === "bdSeq")?.long_value;
  return Number(bdSeq);
}

Deno.test({
  name:
    "a CONNECT that times out without CONNACK is not tried again with the same will: each CONNECT has the next bdSeq",
  async fn() {
    // The broker got the CONNECT and may have registered its will (a broker slow to answer, a
    // CONNACK lost): Sparkplug 3.0 advances bdSeq per MQTT CONNECT, so a later NBIRTH with the
    // same bdSeq would pair with that will, published when the attempt's socket closes or at the
    // takeover.
    const broker = silentBroker();
    const disk = heldStore();
    const { node } = edgeNode(broker.url, disk.store, () => disk.recorded, "", 1000);
    try {
      await node.start();
      await waitFor("three CONNECTs", () => broker.wills.length >= 3, 10_000);
      const wills = broker.wills.slice(0, 3);
      assert.deepEqual(
        wills,
        [wills[0]!, wills[0]! + 1, wills[0]! + 2],
        "the CONNECTs' wills repeat a bdSeq",
      );
      assert.ok(disk.recorded! >= wills[2]!, "each CONNECT's bdSeq recorded before it");
    } finally {
      await node.stop();
      await broker.close();
    }
  },
});

Deno.test({
  name: "attempts that never reach a broker (nothing listening) use no will: bdSeq stays",
  async fn() {
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = (listener.addr as Deno.NetAddr).port;
    listener.close();
    const disk = heldStore();
    const { node, closes } = edgeNode(
      `mqtt://127.0.0.1:${port}`,
      disk.store,
      () => disk.recorded,
    );
    try {
      await node.start();
      // Ten attempts refused before any CONNECT reached a broker.
      await waitFor("ten attempts refused", () => closes.count >= 10);
      assert.equal(node.connected, false);
      assert.equal(node.bdSeq, 0, "bdSeq advanced without a CONNECT reaching a broker");
      assert.equal(disk.recorded, 0);
    } finally {
      await node.stop();
    }
  },
});

Deno.test({
  name:
    "every CONNECT carries the NDEATH will with its bdSeq: the client's socket killed after the first connect, a reconnect and a new session for the primary host, the broker publishes that bdSeq's NDEATH",
  ignore: mosquittoMissing(),
  async fn() {
    // The node reaches the broker through a relay the test cuts (the client's socket dies, no
    // DISCONNECT): the broker then publishes the will the CONNECT registered, and only that.
    const broker = await Mosquitto.start();
    const relay = cuttableRelay(broker.port);
    const host = await sparkplugHost(broker.url, GROUP, { reconnectPeriod: RECONNECT_MS });
    const disk = heldStore();
    const { node } = edgeNode(relay.url, disk.store, () => disk.recorded, "scada-1");
    const ndeaths = () =>
      host.messages.filter((m) => m.topic === `spBv1.0/${GROUP}/NDEATH/${NODE}`);
    const state = (online: boolean) =>
      host.client.publishAsync(
        "spBv1.0/STATE/scada-1",
        JSON.stringify({ online, timestamp: Date.now() }),
        { qos: 1, retain: true },
      );
    /** Kills the client's socket; the NDEATH the broker then publishes carries `bdSeq`. */
    const killSocket = async (bdSeq: number, path: string) => {
      const before = ndeaths().length;
      relay.cut();
      relay.restore(); // a socket killed, not an outage: the next CONNECT goes through
      const death = await waitFor(
        `the NDEATH of ${path}`,
        () => ndeaths().slice(before).find((m) => bdSeqOf(m) === bdSeq),
      );
      assert.deepEqual(
        ndeaths().slice(before).map(bdSeqOf),
        [bdSeqOf(death)],
        `${path}: one NDEATH, with the bdSeq of that connection`,
      );
    };
    try {
      await state(true);
      await node.start();
      // The first connect.
      await waitFor("born", () => node.online);
      const first = node.bdSeq;
      await killSocket(first, "the first connection");
      // A reconnect: the next bdSeq.
      const second = first + 1;
      await waitFor("born again", () => node.online && node.bdSeq === second);
      await killSocket(second, "a reconnect");
      // The primary host goes offline: the node's NDEATH, then a new session that waits for it.
      const third = second + 1;
      await waitFor("born a third time", () => node.online && node.bdSeq === third);
      await state(false);
      const waiting = third + 1;
      await waitFor(
        "a new session waiting for the primary host",
        () => node.connected && !node.online && node.bdSeq === waiting,
      );
      // The session left: its NDEATH published by the node, and its will (no DISCONNECT).
      await waitFor(
        "the left session's NDEATH and will",
        () => ndeaths().filter((m) => bdSeqOf(m) === third).length === 2,
      );
      await killSocket(waiting, "the session opened for the primary host");
    } finally {
      await node.stop();
      await host.close();
      await relay.dispose();
      await broker.dispose();
    }
  },
});
