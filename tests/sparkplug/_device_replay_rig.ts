/**
 * The set-ups of the tests of a device's replay across its DDEATH and next DBIRTH, over the ring
 * rig (_ring_rig.ts): `twoDevicesWritten`, devices a and b born on a HeldSession with their poll 0
 * written (parked_*_test.ts, live_written_devices_test.ts; `otherDeviceFillsThenBirth` the stretch
 * parked_live_written_kept_test.ts and parked_live_written_after_death_test.ts share), and `heldBrokerRig`, device a born on a
 * real Mosquitto through MQTT.js whose writes can be held back (tests/helpers/held_mqtt.ts), with a
 * host reading the group (ddeath_lost_*_test.ts).
 */
import { LIVE_OUT_KEPT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import type { HeldSession } from "../helpers/held_session.ts";
import { heldMqtt } from "../helpers/held_mqtt.ts";
import { waitFor } from "../helpers/kernel.ts";
import { Mosquitto } from "../helpers/mosquitto.ts";
import {
  hostBackConnect,
  reconnectingHost,
  type SparkplugHost,
} from "../helpers/sparkplug_host.ts";
import { P, ringRig } from "./_ring_rig.ts";

export type RingRig = ReturnType<typeof ringRig>;

/**
 * A ring rig with devices a and b, the node started, one poll of each (poll 0), and its session
 * `s` up with every write of the births and those polls completed.
 */
export async function twoDevicesWritten(): Promise<{ rig: RingRig; s: HeldSession }> {
  const rig = ringRig();
  await rig.history.start();
  rig.addDevice("a");
  rig.addDevice("b");
  await rig.node.start();
  rig.poll("a", 0);
  rig.poll("b", 0);
  const s = rig.session();
  s.up();
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
  return { rig, s };
}

/** The timestamps of the DDATA of `deviceId` published on `s` from index `from`, in order. */
export function ddataTimes(s: HeldSession, deviceId: string, from: number): number[] {
  return s.published.slice(from)
    .filter((m) => m.topic === `spBv1.0/g/DDATA/n/${P}:${deviceId}`)
    .map((m) => Number(m.payload.timestamp));
}

/**
 * With a write of device b in flight (every live DDATA written meanwhile is remembered), b's polls
 * `fromPoll`.. written live LIVE_OUT_KEPT times; then every write completed, device a born again
 * (DBIRTH, then the rest of its replay) and every write of that completed too.
 */
export async function otherDeviceFillsThenBirth(
  rig: RingRig,
  s: HeldSession,
  fromPoll: number,
): Promise<void> {
  for (let i = 0; i < LIVE_OUT_KEPT; i++) {
    rig.poll("b", fromPoll + i);
    await flushMicrotasks();
    s.completeNewest();
    await flushMicrotasks();
  }
  while (s.complete() > 0) await flushMicrotasks();
  rig.addDevice("a");
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
}

/** `sparkplug.reconnect_ms` of heldBrokerRig's node (its clock is a ManualClock). */
export const HELD_BROKER_RECONNECT_MS = 100;

/** A ring rig (QoS 1) on a real broker through held-back MQTT.js writes; see heldBrokerRig. */
export interface HeldBrokerRig {
  readonly broker: Mosquitto;
  readonly host: SparkplugHost;
  readonly port: ReturnType<typeof heldMqtt>;
  readonly rig: RingRig;
  /** The node's next session, once HELD_BROKER_RECONNECT_MS passed on its clock. */
  nextSession(): Promise<void>;
  /**
   * Call once the node has seen the broker gone, before it comes back: the node's writes then
   * wait for the host's reconnection (hostBackConnect: a restarted Mosquitto may lose messages
   * queued for the host's restored session before it is back, eclipse-mosquitto/mosquitto#2349).
   */
  holdUntilHostBack(): void;
  /**
   * Resolves once the node's writes no longer wait for the host (holdUntilHostBack's hold ended:
   * the host reconnected). Writes `port` lets go reach MQTT.js only then: with the broker paused
   * again before the host is back, they wait up to HOST_BACK_TIMEOUT_MS, unsettled.
   */
  hostBack(): Promise<void>;
  /** Lets every held write go, stops the node and the host, removes the broker. */
  dispose(): Promise<void>;
}

/**
 * A broker (max_queued_messages 0: the host's QoS 1 subscription drops nothing), a host reading
 * group "g", and the ring rig's node on it through heldMqtt, with device a born (its first
 * births, poll 0).
 */
export async function heldBrokerRig(): Promise<HeldBrokerRig> {
  const broker = await Mosquitto.start({ maxQueuedMessages: 0 });
  const host = await reconnectingHost(broker.url, "g");
  // Under the held port: a write waiting for the host is handed over and not settled
  // (`port.unsettled`), as one MQTT.js has not written yet.
  const hostBack = hostBackConnect(host);
  const port = heldMqtt(hostBack.connect);
  let opened = 0;
  const rig = ringRig({
    qos: 1,
    brokerUrl: broker.url,
    reconnectMs: HELD_BROKER_RECONNECT_MS,
    connect: (o) => {
      opened++;
      return port.connect(o);
    },
  });
  const { node, clock } = rig;
  const held: HeldBrokerRig = {
    broker,
    host,
    port,
    rig,
    holdUntilHostBack: () => hostBack.holdUntilHostBack(),
    async hostBack() {
      await waitFor(
        "the host back (the node's writes no longer wait for it)",
        () => !hostBack.holding,
      );
    },
    async nextSession() {
      const n = opened;
      await waitFor("the node's reconnect timer", () => clock.pendingTimers > 0);
      await clock.advanceAsync(HELD_BROKER_RECONNECT_MS);
      await waitFor("the node's next session", () => opened === n + 1);
    },
    async dispose() {
      port.release(); // nothing held back while the node stops
      await rig.stop();
      await host.close();
      await broker.dispose();
    },
  };
  try {
    await rig.history.start();
    rig.addDevice("a");
    await node.start();
    rig.poll("a", 0);
    await waitFor("the first births", () => node.online);
  } catch (err) {
    await held.dispose();
    throw err;
  }
  return held;
}
