/**
 * The MQTT adapter over MQTT.js (npm `mqtt`), behind the MqttConnect port (src/common/mqtt.ts).
 * MQTT.js (and node:buffer) are imported on the first connect only: a runtime with sparkplug off
 * never loads them (tests/meta/startup_graph_test.ts).
 *
 * MQTT 3.1.1, clean session (unless `clean: false`: the fleet view), the client's own reconnect
 * every `reconnectMs`, with the same will
 * (a Sparkplug edge node opens a new session, with its next will, once a CONNECT reached the
 * broker: `onClose`'s `willUsed`).
 */
import type { MqttConnect } from "../common/mod.ts";

/** The MQTT.js session: `import("mqtt")` happens here, on the first call. */
export const connectMqttJs: MqttConnect = async (o) => {
  const [mqtt, { Buffer }] = await Promise.all([import("mqtt"), import("node:buffer")]);
  const decoder = new TextDecoder();
  const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : decoder.decode(b));
  const client = mqtt.connect(o.url, {
    // Connected below, once the attempt's CONNECT can be followed (willUsed).
    manualConnect: true,
    clientId: o.clientId,
    protocolVersion: 4,
    clean: o.clean ?? true,
    keepalive: o.keepAliveS,
    connectTimeout: o.connectTimeoutMs,
    reconnectPeriod: o.reconnectMs,
    // A CONNECT the broker refuses (server unavailable while it starts, an auth backend not up
    // yet) is tried again like an unreachable broker: MQTT.js would otherwise stop for good.
    reconnectOnConnackError: true,
    // Sparkplug: aliases and births belong to one connection; nothing is queued while offline
    // here (the edge node keeps its own bounded store-and-forward queue).
    queueQoSZero: false,
    // MQTT.js's default (`writeCache: true`) has mqtt-packet pre-build one 2-byte Buffer per
    // message id (65536 of them, each with its own backing store) on the first write: +16 MiB
    // RSS and +7 MiB of V8 heap for a process that writes a few messages a second. Off, each
    // packet id is written into a fresh 2-byte buffer (bench/README.md, "Sparkplug on: what it
    // costs in memory").
    writeCache: false,
    ...(o.username === undefined ? {} : { username: o.username }),
    ...(o.password === undefined ? {} : { password: o.password }),
    ...(o.ca === undefined ? {} : { ca: text(o.ca)! }),
    ...(o.cert === undefined ? {} : { cert: text(o.cert)! }),
    ...(o.key === undefined ? {} : { key: text(o.key)! }),
    ...(o.will === undefined ? {} : {
      will: { topic: o.will.topic, payload: Buffer.from(o.will.payload), qos: 1, retain: false },
    }),
  });
  let lastError = "";
  // Whether the current attempt's CONNECT reached the broker: its connection opened (TLS: the
  // handshake done), and no CONNACK refused it. A CONNECT without an answer counts: the broker
  // may have registered its will.
  let willUsed = false;
  const opened = o.url.startsWith("mqtts:") ? "secureConnect" : "connect";
  client.on("packetsend", (packet) => {
    if (packet.cmd !== "connect") return;
    willUsed = false;
    client.stream.once(opened, () => willUsed = true);
  });
  client.on("packetreceive", (packet) => {
    if (packet.cmd === "connack" && (packet.returnCode ?? 0) !== 0) willUsed = false;
  });
  client.connect();
  // Writes handed to MQTT.js and not settled yet: a QoS 1 write in its outgoing store (never
  // acknowledged) or a QoS 0 write waiting for the socket's `drain` is settled by neither a lost
  // connection nor a forced end while reconnecting is on, so end() rejects what is left (the
  // caller counts its writes in flight down only when they settle). At most the caller's writes
  // in flight (the edge node's MAX_IN_FLIGHT).
  const unsettled = new Set<(err: Error) => void>();
  // Once end() began, a write is refused here: MQTT.js fails one while it ends ("client
  // disconnecting") but, ended with manualConnect, one more throws from inside its store (a
  // TypeError on its closed in-flight map), outside any callback.
  let ending = false;
  return {
    publish: (topic, payload, qos) =>
      new Promise<void>((resolve, reject) => {
        if (ending) {
          reject(new Error("the session has ended: nothing more is written on it"));
          return;
        }
        unsettled.add(reject);
        try {
          client.publish(topic, Buffer.from(payload), { qos, retain: false }, (err) => {
            unsettled.delete(reject);
            if (err) reject(err);
            else resolve();
          });
        } catch (err) {
          // Thrown, not called back: settled here, never left in `unsettled`.
          unsettled.delete(reject);
          reject(err instanceof Error ? err : new Error(String(err)));
        }
      }),
    subscribe: (topics, qos) =>
      new Promise<void>((resolve, reject) => {
        client.subscribe([...topics], { qos }, (err) => {
          if (err) reject(err);
          else resolve();
        });
      }),
    onConnect: (l) => void client.on("connect", (connack) => l(connack.sessionPresent === true)),
    onClose: (l) => void client.on("close", () => l(willUsed)),
    onMessage: (l) =>
      void client.on("message", (topic, payload, packet) => {
        l(
          topic,
          new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength),
          packet.retain === true,
        );
      }),
    onError: (l) =>
      void client.on("error", (err) => {
        const message = err instanceof Error ? err.message : String(err);
        if (message === lastError) return;
        lastError = message;
        l(message);
      }),
    get connected() {
      return client.connected;
    },
    end: (force) =>
      new Promise<void>((resolve) => {
        ending = true;
        client.end(force, {}, () => {
          const ended = new Error("the session ended before the write completed");
          for (const reject of unsettled) reject(ended);
          unsettled.clear();
          resolve();
        });
      }),
  };
};
