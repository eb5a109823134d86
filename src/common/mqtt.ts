/**
 * The MQTT port: what the Sparkplug edge node and the fleet view need of an MQTT client. The
 * adapter (MQTT.js, loaded on demand) is src/host/mqtt.ts, handed in by the composition root;
 * tests may pass their own.
 */

/**
 * A message as the session hands it over. `retained`: the broker sent its retained copy because
 * this connection subscribed (MQTT sets the flag only then), so it was published before: not a
 * message that arrived live.
 */
export type MqttMessageListener = (topic: string, payload: Uint8Array, retained: boolean) => void;

/** What the edge node needs of an MQTT connection. */
export interface MqttSession {
  /** Publishes; resolves once written (QoS 0) or acknowledged (QoS 1); rejects when it fails. */
  publish(topic: string, payload: Uint8Array, qos: 0 | 1): Promise<void>;
  subscribe(topics: readonly string[], qos: 0 | 1): Promise<void>;
  /**
   * The connection is up (each time: the client reconnects by itself). `sessionPresent`: the
   * CONNACK's Session Present flag, the broker resumed this client id's session (only with
   * `clean` false); false on a reconnect means it lost it (a broker restarted without
   * persistence): subscriptions are made again, and what was published meanwhile is lost.
   */
  onConnect(listener: (sessionPresent: boolean) => void): void;
  /**
   * The connection is gone (the client keeps trying to reconnect, with the same will).
   * `willUsed`: the attempt's CONNECT reached the broker (its connection opened) and was not
   * refused, so the broker may hold its will or have published it, CONNACK or not (a CONNECT that
   * timed out without an answer). False for an attempt that never reached it.
   */
  onClose(listener: (willUsed: boolean) => void): void;
  onMessage(listener: MqttMessageListener): void;
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
  /**
   * False: a persistent session (MQTT 3.1.1 Clean Session 0): while the connection is down the
   * broker keeps the subscriptions and queues the QoS 1 messages for this client id (within its
   * own bounds), delivered when the client reconnects under it; a later connection with `clean`
   * true under the same id discards it. Default true. The fleet view's only: an edge node MUST
   * connect with Clean Session 1 (Sparkplug B 3.0,
   * tck-id-principles-persistence-clean-session-311).
   */
  readonly clean?: boolean | undefined;
  /** The will (NDEATH); none for a session that is no edge node (the fleet view). */
  readonly will?: { readonly topic: string; readonly payload: Uint8Array } | undefined;
}

/** Opens a session (the client connects in the background and reconnects by itself). */
export type MqttConnect = (o: MqttSessionOptions) => Promise<MqttSession>;
