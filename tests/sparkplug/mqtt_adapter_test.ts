/**
 * The MQTT.js adapter (src/host/mqtt.ts) against a real Mosquitto: a QoS 1 publish comes back
 * through its own subscription, a retained one is handed over flagged, and the adapter leaves mqtt-packet's packet-id cache unbuilt.
 * With MQTT.js's default (`writeCache: true`) the first write builds 65536 two-byte Buffers, each
 * with its own backing store: +16 MiB RSS, +7 MiB V8 heap for the runtime with Sparkplug on
 * (bench/README.md, "Sparkplug on: what it costs in memory"). mqtt-packet is the very module
 * MQTT.js loads (the same pinned version in deno.lock), so its flag says what the adapter did.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import mqttPacket from "mqtt-packet";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { connectMqttJs } from "../../src/host/mod.ts";

Deno.test({
  name:
    "the MQTT.js adapter round-trips a QoS 1 message, flags a retained one, and builds no packet-id cache",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    try {
      const session = await connectMqttJs({
        url: broker.url,
        clientId: "adapter-test",
        keepAliveS: 10,
        connectTimeoutMs: 5000,
        reconnectMs: 100,
      });
      try {
        const got: Array<[string, number[], boolean]> = [];
        session.onMessage((topic, payload, retained) => got.push([topic, [...payload], retained]));
        await waitFor("the connection", () => session.connected);
        // A message the broker retained from before the subscription comes flagged as retained.
        const other = await mqtt.connectAsync(broker.url, { clientId: "adapter-test-other" });
        await other.publishAsync("adapter/r", Buffer.from([9]), { qos: 1, retain: true });
        await other.endAsync(true);
        await session.subscribe(["adapter/#"], 1);
        await waitFor("the retained message", () => got.length === 1);
        await session.publish("adapter/a", new Uint8Array([1, 2, 3]), 1);
        await waitFor("the message back", () => got.length === 2);
        assert.deepEqual(got, [["adapter/r", [9], true], ["adapter/a", [1, 2, 3], false]]);
        assert.equal(mqttPacket.writeToStream.cacheNumbers, false);
      } finally {
        await session.end(true);
      }
    } finally {
      await broker.dispose();
    }
  },
});

/**
 * A broker that answers every CONNECT with a CONNACK refusing it (`code`), then closes: how many
 * connections it got.
 */
function refusingBroker(code: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  let connections = 0;
  /** Reads after a CONNECT that begin with a PUBLISH packet (type 3). */
  let publishes = 0;
  const conns = new Set<Deno.Conn>();
  const serve = async (conn: Deno.Conn) => {
    connections++;
    conns.add(conn);
    try {
      const buf = new Uint8Array(4096);
      if ((await conn.read(buf)) !== null && buf[0] === 0x10) {
        await conn.write(new Uint8Array([0x20, 0x02, 0x00, code]));
      }
      // Until the client closes.
      for (let n = await conn.read(buf); n !== null; n = await conn.read(buf)) {
        if ((buf[0]! & 0xf0) === 0x30) publishes++;
      }
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
    get connections() {
      return connections;
    },
    get publishes() {
      return publishes;
    },
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

Deno.test("a CONNECT the broker refuses (CONNACK 'server unavailable') is tried again every reconnect_ms, its will unused", async () => {
  // A broker starting up, or an auth backend not reachable yet, refuses with 3: the adapter's
  // session must keep trying as it does for a broker that is not reachable at all (MQTT.js stops
  // reconnecting after a refusing CONNACK unless told otherwise).
  const broker = refusingBroker(3);
  const session = await connectMqttJs({
    url: broker.url,
    clientId: "adapter-refused",
    keepAliveS: 10,
    connectTimeoutMs: 5000,
    reconnectMs: 100,
    will: { topic: "adapter/will", payload: new Uint8Array([1]) },
  });
  const closes: boolean[] = [];
  session.onClose((willUsed) => closes.push(willUsed));
  try {
    await waitFor("a second attempt", () => broker.connections >= 3, 3000).catch(() => {});
    assert.ok(
      broker.connections >= 3,
      `after a refusing CONNACK the session stopped trying: ${broker.connections} connection(s) in 3 s ` +
        `with reconnect_ms 100`,
    );
    assert.ok(closes.length >= 1 && closes.every((used) => !used), `willUsed: ${closes}`);
    assert.equal(session.connected, false);
  } finally {
    await session.end(true);
    await broker.close();
  }
});

Deno.test("a write the broker never confirmed settles (rejected) when the session is ended, so the edge node's count of writes in flight comes back down", async () => {
  // Accepts the CONNECT (CONNACK 0), then reads without answering: a QoS 1 publish is never
  // acknowledged. MQTT.js keeps it in its outgoing store and, with reconnect on, calls its
  // callback neither when the connection drops nor when the client is ended by force: the edge
  // node's #inFlight, counted down only there, would keep it for good (a new session after every
  // lost connection), and MAX_IN_FLIGHT such writes leave live data in store and forward forever.
  const broker = refusingBroker(0);
  const session = await connectMqttJs({
    url: broker.url,
    clientId: "adapter-unconfirmed",
    keepAliveS: 10,
    connectTimeoutMs: 5000,
    reconnectMs: 100,
  });
  try {
    await waitFor("the connection", () => session.connected);
    let settled: string | null = null;
    session.publish("adapter/q1", new Uint8Array([1]), 1).then(
      () => settled = "resolved",
      (err: unknown) => settled = `rejected: ${err instanceof Error ? err.message : String(err)}`,
    );
    await waitFor("the PUBLISH at the broker", () => broker.publishes === 1);
    assert.equal(settled, null, "the broker never acknowledged it");
    await session.end(true);
    await waitFor("the write settled", () => settled !== null, 2000).catch(() => {});
    assert.match(
      String(settled),
      /^rejected: /,
      "the unconfirmed write settles once the session ended",
    );
  } finally {
    await session.end(true);
    await broker.close();
  }
});

Deno.test({
  name:
    "the MQTT.js adapter refuses a write once the session ended, with an error saying so (not MQTT.js's TypeError from its closed store)",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    try {
      const session = await connectMqttJs({
        url: broker.url,
        clientId: "adapter-ended",
        keepAliveS: 10,
        connectTimeoutMs: 5000,
        reconnectMs: 100,
      });
      await waitFor("the connection", () => session.connected);
      await session.end(true);
      for (const qos of [0, 1] as const) {
        await assert.rejects(
          session.publish("adapter/after-end", new Uint8Array([1]), qos),
          /the session has ended/,
          `a QoS ${qos} write after the end`,
        );
      }
    } finally {
      await broker.dispose();
    }
  },
});
