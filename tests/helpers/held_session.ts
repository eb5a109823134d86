/**
 * An MQTT session double whose writes complete only when the test says so: completing the
 * broker's writes at will is what shows the edge node's in-flight bound (MAX_IN_FLIGHT), and a
 * real broker gives no such handle. Shared by tests/sparkplug/replay_walk_test.ts,
 * availability_bound_test.ts and tests/sparkplug/_edge_node_rig.ts (whose sessions complete
 * writes at once unless held); the Mosquitto-backed counterpart is tests/helpers/held_mqtt.ts.
 */
import type { MqttMessageListener, MqttSession } from "../../src/common/mod.ts";
import { decode } from "../../src/sparkplug/mod.ts";

/** A session whose writes complete only when the test says so. */
export class HeldSession implements MqttSession {
  connected = false;
  /** Every message published, in publish order (decoded). */
  readonly published: { topic: string; payload: ReturnType<typeof decode> }[] = [];
  /** Whether writes wait for completeOne()/complete() (false: each completes at once). */
  hold: boolean;
  #held: { resolve: () => void; reject: (err: Error) => void }[] = [];
  readonly #connect: ((sessionPresent: boolean) => void)[] = [];
  readonly #close: ((willUsed: boolean) => void)[] = [];
  readonly #message: MqttMessageListener[] = [];
  readonly #error: ((message: string) => void)[] = [];

  /** Every topic filter the node asked for, per SUBSCRIBE, in order. */
  readonly subscribed: string[][] = [];
  /**
   * Topic filters the broker refuses (SUBACK 0x80): a SUBSCRIBE naming one fails as a whole, as
   * MQTT.js reports it (build/lib/handlers/ack.js, case 'suback': any 0x80 is the call's error).
   */
  readonly #refuses: (topic: string) => boolean;

  /**
   * Whether end() waits for ended(), the node's listeners still heard meanwhile: MQTT.js hands
   * on the packets it parsed before a forced end (build/lib/client.js: its `work` pump goes on
   * after `stream.destroy()`, and handlers/publish.js emits a QoS 0 `message` unchecked).
   */
  readonly #holdEnd: boolean;
  #ending: (() => void)[] = [];

  constructor(
    o: {
      readonly hold?: boolean;
      readonly refuses?: (topic: string) => boolean;
      readonly holdEnd?: boolean;
    } = {},
  ) {
    this.hold = o.hold ?? true;
    this.#refuses = o.refuses ?? (() => false);
    this.#holdEnd = o.holdEnd ?? false;
  }

  publish(topic: string, payload: Uint8Array): Promise<void> {
    this.published.push({ topic, payload: decode(payload) });
    if (!this.hold) return Promise.resolve();
    return new Promise((resolve, reject) => this.#held.push({ resolve, reject }));
  }
  subscribe(topics: readonly string[]): Promise<void> {
    this.subscribed.push([...topics]);
    if (topics.some(this.#refuses)) {
      return Promise.reject(new Error("Subscribe error: Not authorized"));
    }
    return Promise.resolve();
  }
  onConnect(l: (sessionPresent: boolean) => void): void {
    this.#connect.push(l);
  }
  onClose(l: (willUsed: boolean) => void): void {
    this.#close.push(l);
  }
  onMessage(l: MqttMessageListener): void {
    this.#message.push(l);
  }
  onError(l: (message: string) => void): void {
    this.#error.push(l);
  }
  /** The connection reports an error (MQTT.js's `error` event: "read ECONNRESET"). */
  error(message: string): void {
    for (const l of this.#error) l(message);
  }
  /**
   * The node's listeners go with the session (a new session registers its own); with `holdEnd`,
   * only once the test calls ended().
   */
  end(): Promise<void> {
    if (!this.#holdEnd) {
      this.#ended();
      return Promise.resolve();
    }
    return new Promise((resolve) => this.#ending.push(resolve));
  }
  /** Whether an end() waits for ended() (`holdEnd`). */
  get ending(): boolean {
    return this.#ending.length > 0;
  }
  /** Ends the session whose end() waits (`holdEnd`): its listeners go, end() resolves. */
  ended(): void {
    const ending = this.#ending;
    this.#ending = [];
    if (ending.length > 0) this.#ended();
    for (const resolve of ending) resolve();
  }
  #ended(): void {
    this.connected = false;
    this.#connect.length = 0;
    this.#close.length = 0;
    this.#message.length = 0;
    this.#error.length = 0;
  }
  /** Writes outstanding now. */
  get inFlight(): number {
    return this.#held.length;
  }
  /**
   * The broker connection comes up: the node's connect listeners run; `sessionPresent`: the
   * broker resumed the session (CONNACK Session Present).
   */
  up(sessionPresent = false): void {
    this.connected = true;
    for (const l of this.#connect) l(sessionPresent);
  }
  /** The broker connection drops: the node's close listeners run. */
  down(): void {
    this.connected = false;
    for (const l of this.#close) l(true);
  }
  /** The broker delivers a message to the node (not retained unless `retained`). */
  deliver(topic: string, payload: Uint8Array, retained = false): void {
    for (const l of this.#message) l(topic, payload, retained);
  }
  /**
   * The connection is cut: the writes outstanding fail ("Connection closed", as MQTT.js fails its
   * QoS 0 writes on a closed socket), then the node's close listeners run.
   */
  cut(): void {
    const held = this.#held;
    this.#held = [];
    for (const w of held) w.reject(new Error("Connection closed"));
    this.down();
  }
  /** Fails one write outstanding (the oldest), the connection staying up. */
  failOne(): void {
    this.#held.shift()?.reject(new Error("write failed"));
  }
  /** Completes the newest write outstanding. */
  completeNewest(): void {
    this.#held.pop()?.resolve();
  }
  /** Completes one write outstanding (the oldest). */
  completeOne(): void {
    this.#held.shift()?.resolve();
  }
  /** Completes every write outstanding now; returns how many. */
  complete(): number {
    const held = this.#held;
    this.#held = [];
    for (const w of held) w.resolve();
    return held.length;
  }
}
