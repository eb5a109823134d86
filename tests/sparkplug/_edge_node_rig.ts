/**
 * The edge node under test among doubles, for the tests of tests/sparkplug/ that hand the node
 * its commands and read what it publishes: a HeldSession per broker connection (its writes
 * complete at once unless `hold`), an inventory read from provider summaries the test changes
 * (then tells the node: `changed`, `setAvailable`), a bus the test emits on, and node metrics
 * counted from those summaries. A real broker gives no handle on the writes in flight, nor a
 * provider that leaves while a call runs.
 */
import type {
  ArgSpec,
  DeviceCapabilities,
  FunctionSpec,
  LifecycleState,
  Logger,
  SignalSpec,
} from "../../src/common/mod.ts";
import type { CallRequest, CallResult } from "../../src/control/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import {
  type CommandPorts,
  encode,
  sparkplugDeviceId,
  SparkplugEdgeNode,
} from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { HeldSession } from "../helpers/held_session.ts";
import { testLogger } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** A provider as the inventory shows it; the test changes it, then tells the node. */
export interface RigProvider {
  readonly id: string;
  available: boolean;
  lifecycle?: LifecycleState;
  devices: DeviceCapabilities[];
}

/** A device's capabilities (providerName "test", typeId "t"): no functions or signals unless given. */
export function deviceCaps(
  providerId: string,
  deviceId: string,
  o: { readonly functions?: FunctionSpec[]; readonly signals?: SignalSpec[]; label?: string } = {},
): DeviceCapabilities {
  return {
    device: {
      providerId,
      deviceId,
      providerName: "test",
      typeId: "t",
      typeVersion: "1",
      label: o.label ?? "dev",
      address: "",
      tags: {},
    },
    functions: o.functions ?? [],
    signals: o.signals ?? [],
  };
}

/** The providers of one: `providerId`, up, with one device of these capabilities (deviceCaps). */
export function oneDevice(
  providerId: string,
  deviceId: string,
  o: Parameters<typeof deviceCaps>[2] = {},
): RigProvider[] {
  return [{ id: providerId, available: true, devices: [deviceCaps(providerId, deviceId, o)] }];
}

/** A polled signal of this type (name = id, 10 Hz, no age bound). */
export function signalSpec(signalId: string, valueType: SignalSpec["valueType"]): SignalSpec {
  return {
    signalId,
    name: signalId,
    description: "",
    valueType,
    unit: "",
    pollHintHz: 10,
    staleAfterMs: 0,
  };
}

/** An actuating function without arguments. */
export function pulseFunction(name: string, functionId = 1): FunctionSpec {
  return { functionId, name, description: "", category: "ACTUATE", actuating: true, args: [] };
}

/** A required argument of this type, no unit, description or allowed values; `more` adds to it. */
export function argSpec(
  name: string,
  type: ArgSpec["type"],
  more: Partial<ArgSpec> = {},
): ArgSpec {
  return { name, type, unit: "", description: "", required: true, allowedValues: [], ...more };
}

/**
 * The node online in MANUAL, every call recorded (`recordCalls`), with one provider `p0` whose
 * device `dev0` declares one actuating function, `set` (id 1), of this category and arguments.
 */
export async function setFunctionNode(
  category: FunctionSpec["category"],
  args: ArgSpec[],
): Promise<EdgeNodeRig> {
  const rig = edgeNodeRig({
    providers: oneDevice("p0", "dev0", {
      functions: [{ functionId: 1, name: "set", description: "", category, actuating: true, args }],
    }),
    mode: "MANUAL",
    recordCalls: true,
  });
  await rig.online();
  return rig;
}

/**
 * Delivers a DCMD to `p0/dev0` for each metric, in order (setFunctionNode's device), lets the node
 * act, and returns the String values of the DDATA the latest session published meanwhile: the
 * node's answers to those commands.
 */
export async function dcmdAnswers(
  rig: EdgeNodeRig,
  metrics: Array<Record<string, unknown>>,
): Promise<unknown[]> {
  const device = sparkplugDeviceId("p0", "dev0");
  const from = rig.session.published.length;
  for (const m of metrics) rig.command(`spBv1.0/g/DCMD/n/${device}`, [m]);
  await flushMicrotasks();
  return rig.session.published.slice(from).flatMap((m) =>
    m.topic === `spBv1.0/g/DDATA/n/${device}`
      ? (m.payload.metrics ?? []).map((x) => x.string_value)
      : []
  );
}

export interface EdgeNodeRigOptions {
  readonly providers?: RigProvider[];
  readonly commands?: CommandPorts;
  /** Commands on, every call recorded (`calls`) and answered OK, every e-stop taken. */
  readonly recordCalls?: boolean;
  /**
   * Commands on, every call refused, every e-stop latched at once: its reason recorded (`estops`),
   * the latch metric set (`status.estopLatched`) and the node told it latched.
   */
  readonly latchEstops?: boolean;
  /** The node's mode metric (IDLE by default). */
  readonly mode?: string;
  /** Each session's writes wait for completeOne()/complete() (HeldSession), not done at once. */
  readonly hold?: boolean;
  /** `sparkplug.primary_host_id` (none by default): births wait for its STATE online. */
  readonly primaryHostId?: string;
  /** `sparkplug.store_forward` (the configuration's default unless given). */
  readonly storeForward?: { readonly maxMessages: number; readonly maxBytes: number };
  /** The node's logger (testLogger() unless given). */
  readonly log?: Logger;
  /** `sparkplug.max_message_bytes` (none unless given). */
  readonly maxMessageBytes?: number;
  /** `sparkplug.group_id` ("g" unless given). */
  readonly groupId?: string;
  /** Each session's end() waits for its ended() (HeldSession's `holdEnd`). */
  readonly holdEnd?: boolean;
  /** Topic filters the broker refuses to subscribe (HeldSession's `refuses`). */
  readonly refuses?: (topic: string) => boolean;
  /**
   * Provider ids configured with no provider listed (InventoryReader.configured and whyNotRunning:
   * a reload restarting them); none unless given. The test changes the set.
   */
  readonly restarting?: Set<string>;
}

export interface EdgeNodeRig {
  readonly node: SparkplugEdgeNode;
  /** The node's clock (reconnect_ms and the other timers run on it). */
  readonly clock: ManualClock;
  /** The node metrics' mode and latch as the node reads them now (the test changes them). */
  readonly status: { mode: string; estopLatched: boolean };
  readonly providers: RigProvider[];
  /** The calls made (with `recordCalls`), in order. */
  readonly calls: CallRequest[];
  /** The reasons of the e-stops taken (with `latchEstops`), in order. */
  readonly estops: string[];
  /** A session per connection the node opened, oldest first. */
  readonly sessions: HeldSession[];
  /** The will (NDEATH) each connection registered, oldest first. */
  readonly wills: { readonly topic: string; readonly payload: Uint8Array }[];
  /** The latest session. */
  readonly session: HeldSession;
  /** Starts the node and brings its first connection up: its births go out. */
  online(): Promise<void>;
  /** The inventory tells the node a provider's devices changed (a rediscovery, a reload). */
  changed(providerId: string): void;
  /** A provider's availability changes, and the inventory tells the node. */
  setAvailable(providerId: string, available: boolean): void;
  /** An event on the bus the node subscribed to. */
  emit(e: PublishedEvent): void;
  /**
   * The broker delivers the primary host's STATE (`online`, `timestamp`) to the latest session;
   * what the node does at once is done.
   */
  hostState(online: boolean, timestamp: number): Promise<void>;
  /** The broker delivers a command (NCMD or DCMD) of these metrics to the latest session. */
  command(topic: string, metrics: Array<Record<string, unknown>>): void;
  /** The alias the latest NBIRTH gave a node metric, as decoded. */
  nodeAlias(name: string): unknown;
  /** The `Runtime/Command Result` values the latest session published, with their is_historical. */
  answers(): [unknown, boolean][];
  /** Stops the node, completing the writes it holds (and the ends, `holdEnd`) meanwhile. */
  stop(): Promise<void>;
}

/** The node (group "g", node "n") among the doubles; not started. */
export function edgeNodeRig(o: EdgeNodeRigOptions = {}): EdgeNodeRig {
  const providers = o.providers ?? [];
  const changed: ((id: string) => void)[] = [];
  const availability: ((p: { id: string }) => void)[] = [];
  const bus: ((e: PublishedEvent) => void)[] = [];
  const find = (id: string) => providers.find((p) => p.id === id);
  const inventory = {
    providers: () => providers,
    provider: find,
    devices: () => providers.flatMap((p) => p.devices.map((c) => c.device)),
    capabilities: (p: string, d: string) => find(p)?.devices.find((c) => c.device.deviceId === d),
    onChange(l: (id: string) => void) {
      changed.push(l);
      return () => {};
    },
    onAvailability(l: (p: { id: string }) => void) {
      availability.push(l);
      return () => {};
    },
    configured: (id: string) => find(id) !== undefined || (o.restarting?.has(id) ?? false),
    whyNotRunning: (id: string) =>
      find(id) === undefined && (o.restarting?.has(id) ?? false)
        ? `provider ${id} is being restarted by a configuration reload`
        : null,
  } as unknown as InventoryReader;
  const sessions: HeldSession[] = [];
  const wills: EdgeNodeRig["wills"] = [];
  const calls: CallRequest[] = [];
  const clock = new ManualClock();
  const status = { mode: o.mode ?? "IDLE", estopLatched: false };
  const recording: CommandPorts = {
    call(req) {
      calls.push(req);
      return Promise.resolve({} as CallResult);
    },
    estop: () => Promise.resolve(),
  };
  const estops: string[] = [];
  const latching: CommandPorts = {
    call: () => Promise.reject(new Error("no calls")),
    estop: (reason, _source, onLatched) => {
      estops.push(reason);
      status.estopLatched = true;
      onLatched?.();
      return Promise.resolve();
    },
  };
  const node = new SparkplugEdgeNode({
    config: {
      ...testConfig().sparkplug,
      enabled: true,
      brokerUrl: "mqtt://test",
      groupId: o.groupId ?? "g",
      primaryHostId: o.primaryHostId ?? "",
      ...(o.storeForward ? { storeForward: o.storeForward } : {}),
      maxMessageBytes: o.maxMessageBytes ?? null,
    },
    edgeNodeId: "n",
    clientId: "c",
    connect: (c) => {
      if (c.will !== undefined) wills.push(c.will);
      const s = new HeldSession({
        hold: o.hold ?? false,
        holdEnd: o.holdEnd ?? false,
        ...(o.refuses ? { refuses: o.refuses } : {}),
      });
      sessions.push(s);
      return Promise.resolve(s);
    },
    bus: {
      subscribe(l) {
        bus.push(l);
        return () => {};
      },
    },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: status.mode,
      estopLatched: status.estopLatched,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: providers.filter((p) => p.available).length,
      providersDown: providers.filter((p) => !p.available).length,
    }),
    commands: o.recordCalls ? recording : o.latchEstops ? latching : o.commands,
    runtimeVersion: "test",
    clock,
    log: o.log ?? testLogger(),
  });
  const latest = () => {
    const s = sessions.at(-1);
    if (s === undefined) throw new Error("the node opened no session yet");
    return s;
  };
  return {
    node,
    clock,
    status,
    providers,
    calls,
    estops,
    sessions,
    wills,
    get session() {
      return latest();
    },
    async online() {
      await node.start();
      latest().up();
      await flushMicrotasks();
    },
    changed(providerId) {
      for (const l of changed) l(providerId);
    },
    setAvailable(providerId, available) {
      find(providerId)!.available = available;
      for (const l of availability) l({ id: providerId });
    },
    emit(e) {
      for (const l of bus) l(e);
    },
    async hostState(online, timestamp) {
      const state = new TextEncoder().encode(JSON.stringify({ online, timestamp }));
      latest().deliver(`spBv1.0/STATE/${o.primaryHostId}`, state);
      await flushMicrotasks();
    },
    command(topic, metrics) {
      latest().deliver(topic, encode({ timestamp: 1, metrics }));
    },
    nodeAlias(name) {
      const nbirth = latest().published.findLast((m) => m.topic === "spBv1.0/g/NBIRTH/n");
      return (nbirth?.payload.metrics ?? []).find((m) => m.name === name)?.alias;
    },
    answers() {
      const alias = this.nodeAlias("Runtime/Command Result");
      return latest().published.filter((m) => m.topic === "spBv1.0/g/NDATA/n").flatMap((m) =>
        (m.payload.metrics ?? []).filter((x) => x.alias === alias)
      ).map((x) => [x.string_value, x.is_historical === true]);
    },
    async stop() {
      const stopping = node.stop();
      await flushMicrotasks();
      for (const s of sessions) s.complete();
      await flushMicrotasks();
      for (const s of sessions) s.ended();
      await stopping;
    },
  };
}
