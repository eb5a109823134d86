/**
 * The edge node over a real History fed by hand (store and forward from the ring), its devices
 * changeable by the test (one provider "p0", devices with one double signal `x`): for the replay's
 * edge cases that need a device added while offline or writes completing out of order. The MQTT
 * session is a HeldSession (tests/helpers/held_session.ts), one per connection, unless `connect`
 * gives another (a real broker's: `sessions` is then empty).
 */
import type { DeviceCapabilities, MqttConnect, TypedValue } from "../../src/common/mod.ts";
import type { PublishedEvent, RuntimeEvent } from "../../src/events/mod.ts";
import { historyReplay } from "../../src/app/kernel.ts";
import type { InventoryReader, SignalState } from "../../src/state/mod.ts";
import { SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { HeldSession } from "../helpers/held_session.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";
import { deviceCaps, signalSpec } from "./_edge_node_rig.ts";

export const P = "p0";

export interface RingRigOptions {
  readonly qos?: 0 | 1;
  /** The node's sessions (HeldSessions by default). */
  readonly connect?: MqttConnect;
  readonly brokerUrl?: string;
  /** `sparkplug.reconnect_ms` (the test config's by default). */
  readonly reconnectMs?: number;
  /** The node's logger (testLogger() by default). */
  readonly log?: ReturnType<typeof testLogger>;
}

export function ringRig(o: RingRigOptions = {}) {
  const { clock, history, feed } = handFedHistory({
    memorySeconds: 600,
    memoryMaxBytes: 64 << 20,
    diskMaxBytes: 0,
  });
  const config = testConfig();
  const signals = new Map<string, Map<string, SignalState>>();
  const bus: ((e: PublishedEvent) => void)[] = [];
  let eventId = 0;
  const summary = { id: P, available: true, devices: [] as DeviceCapabilities[] };
  const availability: ((p: { id: string }) => void)[] = [];
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => summary.devices.map((c) => c.device),
    capabilities: (_p: string, d: string) => summary.devices.find((c) => c.device.deviceId === d),
    onChange: () => () => {},
    onAvailability(l: (p: { id: string }) => void) {
      availability.push(l);
      return () => {};
    },
  } as unknown as InventoryReader;
  const sessions: HeldSession[] = [];
  const reconnectMs = o.reconnectMs ?? config.sparkplug.reconnectMs;
  const node = new SparkplugEdgeNode({
    config: {
      ...config.sparkplug,
      enabled: true,
      brokerUrl: o.brokerUrl ?? "mqtt://test",
      groupId: "g",
      qos: o.qos ?? 0,
      reconnectMs,
    },
    edgeNodeId: "n",
    clientId: "c",
    connect: o.connect ?? (() => {
      const s = new HeldSession();
      sessions.push(s);
      return Promise.resolve(s);
    }),
    bus: {
      subscribe(l) {
        bus.push(l);
        return () => {};
      },
    },
    inventory,
    reads: {
      signal: (_p, d, s) => signals.get(d)?.get(s),
      qualityNow: (_p, _d, _s, s) => s.quality,
    },
    status: () => ({
      mode: "AUTO",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 1,
      providersDown: 0,
    }),
    replay: historyReplay(history),
    runtimeVersion: "test",
    clock,
    log: o.log ?? testLogger(),
  });
  const emit = (event: RuntimeEvent) => {
    for (const l of bus) l({ id: ++eventId, event });
  };
  /** A device of p0 with the double signal `x` appears (the inventory tells the node). */
  const addDevice = (deviceId: string) => {
    summary.devices.push(deviceCaps(P, deviceId, { signals: [signalSpec("x", "double")] }));
    emit({
      kind: "device_availability",
      provider_id: P,
      device_id: deviceId,
      available: true,
      timestamp_ms: clock.nowMs(),
    } as RuntimeEvent);
  };
  /** A device of p0 leaves the inventory (its provider staying up); the inventory tells the node. */
  const removeDevice = (deviceId: string) => {
    summary.devices = summary.devices.filter((c) => c.device.deviceId !== deviceId);
    emit({
      kind: "device_availability",
      provider_id: P,
      device_id: deviceId,
      available: false,
      timestamp_ms: clock.nowMs(),
    } as RuntimeEvent);
  };
  /** Provider p0's availability changes, and the inventory tells the node (synchronously). */
  const setAvailable = (available: boolean) => {
    summary.available = available;
    for (const l of availability) l({ id: P });
  };
  /** One poll of `deviceId` 100 ms after the last, `x` = v: the change's event, then the ring. */
  const poll = (deviceId: string, v: number) => {
    clock.advance(100);
    const now = clock.nowMs();
    let m = signals.get(deviceId);
    if (m === undefined) signals.set(deviceId, m = new Map());
    const value: TypedValue = { type: "double", double: v };
    m.set("x", { value, quality: "OK", timestampMs: now, receivedMono: clock.monoMs() });
    emit({
      kind: "state_update",
      provider_id: P,
      device_id: deviceId,
      signal_id: "x",
      value,
      quality: "OK",
      timestamp_ms: now,
    });
    feed({
      providerId: P,
      deviceId,
      pollable: ["x"],
      signals: m,
      lastPollMs: now,
      lastPollMono: clock.monoMs(),
      available: true,
    });
    return now;
  };
  const session = () => sessions.at(-1)!;
  /** The next session once reconnect_ms passed; the broker accepts it. */
  const reconnect = async () => {
    await clock.advanceAsync(reconnectMs);
    session().up();
    await flushMicrotasks();
  };
  /** The values of `x` in the DDATA of `deviceId` published on `s` from index `from`. */
  const ddata = (s: HeldSession, deviceId: string, from = 0) =>
    s.published.slice(from).filter((m) => m.topic === `spBv1.0/g/DDATA/n/${P}:${deviceId}`)
      .flatMap((m) => m.payload.metrics ?? [])
      .map((x) => ({ v: x.double_value, historical: x.is_historical === true }));
  const stop = async () => {
    const stopping = node.stop();
    await flushMicrotasks();
    for (const s of sessions) s.complete();
    await stopping;
    await history.stop();
  };
  return {
    clock,
    history,
    node,
    sessions,
    session,
    addDevice,
    removeDevice,
    setAvailable,
    poll,
    reconnect,
    ddata,
    stop,
  };
}
