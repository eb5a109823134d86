/**
 * An MqttConnect port over the real MQTT.js client that can hold the writes back, as a stalled
 * broker does (it reads nothing), and let them go later in order: what shows the edge node's
 * in-flight bound against a real Mosquitto.
 */
import { connectMqttJs } from "../../src/host/mod.ts";
import type { MqttConnect } from "../../src/common/mod.ts";

export function heldMqtt(): {
  /** The port to pass as `host.mqttConnect`. */
  connect: MqttConnect;
  /** Writes held back now. */
  readonly held: number;
  /** From now on, writes are held back. */
  stall(): void;
  /** Writes go out again; the held ones first, in order. */
  release(): void;
} {
  let stalled = false;
  const held: Array<() => void> = [];
  const connect: MqttConnect = async (o) => {
    const session = await connectMqttJs(o);
    return {
      ...session,
      publish: (topic, payload, qos) => {
        if (!stalled) return session.publish(topic, payload, qos);
        return new Promise<void>((resolve, reject) => {
          held.push(() => session.publish(topic, payload, qos).then(resolve, reject));
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
    stall() {
      stalled = true;
    },
    release() {
      stalled = false;
      for (const write of held.splice(0)) write();
    },
  };
}
