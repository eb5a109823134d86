/**
 * An MqttConnect port over the real MQTT.js client that can hold the writes back, as a stalled
 * broker does (it reads nothing), and let them go later in order: what shows the edge node's
 * in-flight bound against a real Mosquitto. It also lists the writes it handed to MQTT.js (what
 * the node published, in order) and counts those not settled yet: what a test waits on instead of
 * a fixed sleep.
 */
import { connectMqttJs, serveHttp } from "../../src/host/mod.ts";
import type { MqttConnect, MqttSession } from "../../src/common/mod.ts";
import type { KernelHost } from "../../src/app/kernel.ts";

/** A write handed to MQTT.js: its topic and payload bytes. */
export interface HandedWrite {
  readonly topic: string;
  readonly payload: Uint8Array;
}

/** `inner`: the MQTT port under the held writes (default MQTT.js). */
export function heldMqtt(inner: MqttConnect = connectMqttJs): {
  /** The port to pass as `host.mqttConnect`. */
  connect: MqttConnect;
  /** Writes held back now. */
  readonly held: number;
  /** The topics of the writes held back now, in order. */
  readonly heldTopics: readonly string[];
  /** Writes handed to MQTT.js, in order (held ones once released). */
  readonly handed: readonly HandedWrite[];
  /** Writes handed to MQTT.js and not settled (written or failed) yet. */
  readonly unsettled: number;
  /** From now on, writes are held back. */
  stall(): void;
  /**
   * Writes go out again; the held ones first, in order. With `count`, only the first `count`
   * held ones go out and later writes are still held.
   */
  release(count?: number): void;
} {
  let stalled = false;
  const held: Array<() => void> = [];
  const heldTopics: string[] = [];
  const handed: HandedWrite[] = [];
  let unsettled = 0;
  const connect: MqttConnect = async (o) => {
    const session = await inner(o);
    const write = (topic: string, payload: Uint8Array, qos: 0 | 1) => {
      handed.push({ topic, payload });
      unsettled++;
      const p = session.publish(topic, payload, qos);
      p.then(() => unsettled--, () => unsettled--);
      return p;
    };
    return {
      ...session,
      publish: (topic, payload, qos) => {
        if (!stalled) return write(topic, payload, qos);
        return new Promise<void>((resolve, reject) => {
          held.push(() => write(topic, payload, qos).then(resolve, reject));
          heldTopics.push(topic);
        });
      },
      get connected() {
        return session.connected;
      },
    };
  };
  return {
    connect,
    get held() {
      return held.length;
    },
    heldTopics,
    handed,
    get unsettled() {
      return unsettled;
    },
    stall() {
      stalled = true;
    },
    release(count?: number) {
      if (count === undefined) stalled = false;
      const n = count ?? held.length;
      heldTopics.splice(0, n);
      for (const w of held.splice(0, n)) w();
    },
  };
}

/**
 * A session that never connects and publishes nothing: for a test that looks at what the edge
 * node does before any broker (its bdSeq store, its connecting).
 */
export function idleMqttSession(): MqttSession {
  return {
    connected: false,
    publish: () => Promise.resolve(),
    subscribe: () => Promise.resolve(),
    onConnect() {},
    onClose() {},
    onMessage() {},
    onError() {},
    end: () => Promise.resolve(),
  };
}

/**
 * The host ports of a runtime whose Sparkplug edge node's start never ends: real HTTP, an idle
 * MQTT session, and a bdSeq store that never answers (the hung disk under runtime.data_dir: the
 * node's start waits, BDSEQ_SAVE_WAIT_MS). The runtime serves its API while start() still waits.
 */
export function hungBdSeqHost(): Partial<KernelHost> {
  return {
    serve: serveHttp,
    mqttConnect: () => Promise.resolve(idleMqttSession()),
    bdSeqStore: () => ({ load: () => new Promise(() => {}), save: () => new Promise(() => {}) }),
  };
}
