/**
 * The MQTT session of the edge node over MQTT.js (npm `mqtt`), loaded on the first connect only:
 * a runtime with sparkplug off never loads it (tests/meta/startup_graph_test.ts).
 *
 * MQTT 3.1.1, clean session, the client's own reconnect every `reconnectMs`. The will (NDEATH)
 * can be replaced between connections: MQTT.js sends `options.will` with every CONNECT.
 */
import { Buffer } from "node:buffer";

/** A message as the session hands it over. */
export type MessageListener = (topic: string, payload: Uint8Array) => void;

/** What the edge node needs of an MQTT connection (a port: tests may pass their own). */
export interface MqttSession {
  /** Publishes; resolves once written (QoS 0) or acknowledged (QoS 1); rejects when it fails. */
  publish(topic: string, payload: Uint8Array, qos: 0 | 1): Promise<void>;
  subscribe(topics: readonly string[], qos: 0 | 1): Promise<void>;
  /** The will sent with the next CONNECT. */
  setWill(topic: string, payload: Uint8Array): void;
  onConnect(listener: () => void): void;
  /** The connection is gone (the client keeps trying to reconnect). */
  onClose(listener: () => void): void;
  onMessage(listener: MessageListener): void;
  /** Connection errors, once per distinct message (no secrets: the URL is not in them). */
  onError(listener: (message: string) => void): void;
  readonly connected: boolean;
  /** Ends the session; `force` drops what is not sent yet (and the broker sends the will). */
  end(force: boolean): Promise<void>;
}

/** How to open a session. */
export interface MqttSessionOptions {
  readonly url: string;
  readonly clientId: string;
  readonly keepAliveS: number;
  readonly connectTimeoutMs: number;
  readonly reconnectMs: number;
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  readonly ca?: Uint8Array | undefined;
  readonly cert?: Uint8Array | undefined;
  readonly key?: Uint8Array | undefined;
  /** The will (NDEATH); none for a session that is no edge node (the fleet view). */
  readonly will?: { readonly topic: string; readonly payload: Uint8Array } | undefined;
}

/** Opens a session (the client connects in the background and reconnects by itself). */
export type MqttConnect = (o: MqttSessionOptions) => Promise<MqttSession>;

/** The MQTT.js session: `import("mqtt")` happens here, on the first call. */
export const connectMqttJs: MqttConnect = async (o) => {
  const mqtt = await import("mqtt");
  const decoder = new TextDecoder();
  const text = (b: Uint8Array | undefined) => (b === undefined ? undefined : decoder.decode(b));
  const client = mqtt.connect(o.url, {
    clientId: o.clientId,
    protocolVersion: 4,
    clean: true,
    keepalive: o.keepAliveS,
    connectTimeout: o.connectTimeoutMs,
    reconnectPeriod: o.reconnectMs,
    // Sparkplug: aliases and births belong to one connection; nothing is queued while offline
    // here (the edge node keeps its own bounded store-and-forward queue).
    queueQoSZero: false,
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
  return {
    publish: (topic, payload, qos) =>
      new Promise<void>((resolve, reject) => {
        client.publish(topic, Buffer.from(payload), { qos, retain: false }, (err) => {
          if (err) reject(err);
          else resolve();
        });
      }),
    subscribe: (topics, qos) =>
      new Promise<void>((resolve, reject) => {
        client.subscribe([...topics], { qos }, (err) => {
          if (err) reject(err);
          else resolve();
        });
      }),
    setWill(topic, payload) {
      client.options.will = { topic, payload: Buffer.from(payload), qos: 1, retain: false };
    },
    onConnect: (l) => void client.on("connect", () => l()),
    onClose: (l) => void client.on("close", () => l()),
    onMessage: (l) =>
      void client.on("message", (topic, payload) => {
        l(topic, new Uint8Array(payload.buffer, payload.byteOffset, payload.byteLength));
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
        client.end(force, {}, () => resolve());
      }),
  };
};
