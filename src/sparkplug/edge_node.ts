/**
 * The runtime as an Eclipse Sparkplug B edge node (docs/sparkplug.md). On every connection:
 * NCMD/DCMD subscriptions, NBIRTH (node metrics and `bdSeq`), one DBIRTH per device of an
 * available provider; NDEATH is the MQTT will, with the `bdSeq` of that connection. Then DDATA by
 * exception from the state cache's events (changed values and qualities only, by alias), NDATA
 * when a node metric changes, DDEATH/DBIRTH as devices leave and return, births again on
 * `Node Control/Rebirth` without reconnecting.
 *
 * Never in the way of the runtime: it only subscribes to the event bus and the inventory, and its
 * listeners queue work and return. Nothing here is awaited by a call, a poll or the e-stop; a
 * broker that stalls fills at most MAX_IN_FLIGHT writes, after which data goes to the bounded
 * store-and-forward queue (and is dropped oldest first beyond it, counted and WARNed).
 */
import type { Clock, DeviceCapabilities, Logger, Quality, TypedValue } from "../common/mod.ts";
import { errorMessage } from "../common/mod.ts";
import type { SparkplugConfig } from "../config/mod.ts";
import type { PublishedEvent } from "../events/mod.ts";
import type { InventoryReader, SignalState } from "../state/mod.ts";
import {
  DataType,
  decode,
  encode,
  functionBirthMetric,
  type MessageType,
  type Metric,
  type Payload,
  propertySet,
  QUALITY_CODE,
  signalBirthMetric,
  sparkplugDeviceId,
  topicOf,
  valueFields,
} from "./payloads.ts";
import type { MqttConnect, MqttSession } from "./mqtt_session.ts";

/** The node-level state published in NBIRTH and NDATA. */
export interface NodeStatus {
  readonly mode: string;
  readonly estopLatched: boolean;
  readonly alarmsActive: number;
  readonly alarmsUnacked: number;
  readonly providersUp: number;
  readonly providersDown: number;
}

/** Writes handed to the MQTT client and not yet confirmed, at most (then: store and forward). */
export const MAX_IN_FLIGHT = 1000;
/** How long stop() waits for NDEATH to be written before it drops the connection. */
export const STOP_PUBLISH_TIMEOUT_MS = 2000;

/** Node metric names (NBIRTH/NDATA). */
export const NODE_METRICS = {
  bdSeq: "bdSeq",
  rebirth: "Node Control/Rebirth",
  mode: "Runtime/Mode",
  latched: "Runtime/Estop Latched",
  alarmsActive: "Alarms/Active",
  alarmsUnacked: "Alarms/Unacked",
  providersUp: "Providers/Up",
  providersDown: "Providers/Down",
  version: "Properties/Runtime Version",
} as const;

/** What the edge node is built from. */
export interface EdgeNodeOptions {
  readonly config: SparkplugConfig;
  readonly edgeNodeId: string;
  readonly clientId: string;
  readonly connect: MqttConnect;
  /** SPARKPLUG_USERNAME / SPARKPLUG_PASSWORD as read at start (never logged). */
  readonly username?: string | undefined;
  readonly password?: string | undefined;
  /** The TLS files' contents (read by the composition root). */
  readonly tls?: {
    readonly ca?: Uint8Array | undefined;
    readonly cert?: Uint8Array | undefined;
    readonly key?: Uint8Array | undefined;
  };
  readonly bus: { subscribe(listener: (e: PublishedEvent) => void): () => void };
  readonly inventory: InventoryReader;
  readonly reads: {
    signal(providerId: string, deviceId: string, signalId: string): SignalState | undefined;
  };
  readonly status: () => NodeStatus;
  readonly runtimeVersion: string;
  readonly clock: Clock;
  readonly log: Logger;
}

/** Counters for metrics and tests. */
export interface EdgeNodeCounts {
  connects: number;
  births: number;
  published: number;
  publishFailures: number;
  commandsIgnored: number;
  /** DDATA kept while the broker was unreachable (or the in-flight bound full), since start. */
  stored: number;
  /** Of those, dropped oldest-first at the store-and-forward bounds. */
  storeDropped: number;
  /** Of those, published again with is_historical after a reconnect. */
  replayed: number;
}

/** One DDATA kept for store and forward. */
interface StoredData {
  readonly deviceId: string;
  readonly timestampMs: number;
  readonly metrics: Metric[];
  readonly bytes: number;
}

interface BornDevice {
  readonly providerId: string;
  readonly deviceId: string;
  readonly signals: ReadonlySet<string>;
}

interface PendingSignal {
  value: TypedValue | null;
  quality: Quality;
  timestampMs: number;
}

export class SparkplugEdgeNode {
  readonly #o: EdgeNodeOptions;
  readonly #log: Logger;
  #session: MqttSession | null = null;
  #bdSeq = 0;
  #seq = 0;
  /** Whether the births of the current connection went out (data waits for them). */
  #born = false;
  #stopped = false;
  #inFlight = 0;
  readonly #aliases = new Map<string, number>();
  #nextAlias = 1;
  /** Devices born on the current connection, by Sparkplug device id. */
  readonly #devices = new Map<string, BornDevice>();
  /** Changes not yet published, by Sparkplug device id then signal id. */
  readonly #pending = new Map<string, Map<string, PendingSignal>>();
  #flushQueued = false;
  #nodeQueued = false;
  #lastNode: NodeStatus | null = null;
  readonly #unsubscribe: Array<() => void> = [];
  /** Store and forward (`sparkplug.store_forward`): oldest first, bounded in count and bytes. */
  readonly #store: StoredData[] = [];
  #storeHead = 0;
  #storeBytes = 0;
  /** Whether the current stretch of drops has been WARNed (one line per stretch). */
  #dropWarned = false;
  readonly counts: EdgeNodeCounts = {
    connects: 0,
    births: 0,
    published: 0,
    publishFailures: 0,
    commandsIgnored: 0,
    stored: 0,
    storeDropped: 0,
    replayed: 0,
  };

  constructor(options: EdgeNodeOptions) {
    this.#o = options;
    this.#log = options.log;
  }

  get bdSeq(): number {
    return this.#bdSeq;
  }

  /** Whether the births of a live connection have been published. */
  get online(): boolean {
    return this.#born && (this.#session?.connected ?? false);
  }

  /** Subscribes to the runtime and opens the broker session (connecting in the background). */
  async start(): Promise<void> {
    const o = this.#o;
    this.#unsubscribe.push(o.bus.subscribe((e) => this.#onEvent(e)));
    this.#unsubscribe.push(o.inventory.onChange((id) => this.#providerChanged(id)));
    this.#unsubscribe.push(o.inventory.onAvailability((p) => this.#providerChanged(p.id)));
    const session = await o.connect({
      url: o.config.brokerUrl,
      clientId: o.clientId,
      keepAliveS: o.config.keepAliveS,
      connectTimeoutMs: o.config.connectTimeoutMs,
      reconnectMs: o.config.reconnectMs,
      username: o.username,
      password: o.password,
      ca: o.tls?.ca,
      cert: o.tls?.cert,
      key: o.tls?.key,
      will: { topic: this.#topic("NDEATH"), payload: this.#deathPayload() },
    });
    this.#session = session;
    session.onConnect(() => void this.#connected());
    session.onClose(() => this.#closed());
    session.onMessage((topic, payload) => this.#message(topic, payload));
    session.onError((m) => this.#log.warn(`sparkplug broker connection: ${m}`));
    this.#log.info(
      `sparkplug edge node ${o.config.groupId}/${o.edgeNodeId} connecting to the broker ` +
        `(keep-alive ${o.config.keepAliveS} s)`,
    );
  }

  /** Publishes NDEATH (bounded in time) and ends the session. */
  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    for (const u of this.#unsubscribe.splice(0)) u();
    const session = this.#session;
    if (session === null) return;
    if (session.connected) {
      let timer: unknown;
      const sent = await Promise.race([
        session.publish(this.#topic("NDEATH"), this.#deathPayload(), 1).then(
          () => true,
          () => false,
        ),
        new Promise<false>((r) => {
          timer = this.#o.clock.setTimer(() => r(false), STOP_PUBLISH_TIMEOUT_MS);
        }),
      ]);
      this.#o.clock.clearTimer(timer);
      await session.end(!sent);
    } else {
      await session.end(true);
    }
    this.#log.info("sparkplug edge node stopped");
  }

  /** Publishes NBIRTH and every DBIRTH again on the current connection (Node Control/Rebirth). */
  rebirth(): void {
    if (!this.#session?.connected) return;
    this.#births();
  }

  // ---- connection ----

  async #connected(): Promise<void> {
    if (this.#stopped) return;
    this.counts.connects++;
    const o = this.#o;
    const session = this.#session!;
    try {
      await session.subscribe([
        topicOf(o.config.groupId, "NCMD", o.edgeNodeId),
        `${topicOf(o.config.groupId, "DCMD", o.edgeNodeId)}/+`,
      ], 1);
    } catch (err) {
      this.#log.warn(`sparkplug: subscribing to NCMD/DCMD failed: ${errorMessage(err)}`);
    }
    if (this.#stopped || !session.connected) return;
    this.#log.info(`sparkplug connected to the broker (bdSeq ${this.#bdSeq})`);
    this.#births();
  }

  #closed(): void {
    const wasBorn = this.#born;
    this.#born = false;
    // #devices stays: what changes while offline is stored under their aliases.
    if (this.#stopped) return;
    if (wasBorn) {
      // The broker published this connection's NDEATH; the next connection has the next bdSeq.
      this.#bdSeq = (this.#bdSeq + 1) % 256;
      this.#session?.setWill(this.#topic("NDEATH"), this.#deathPayload());
      this.#log.warn(`sparkplug lost the broker; reconnecting (next bdSeq ${this.#bdSeq})`);
    }
  }

  // ---- births and deaths ----

  #births(): void {
    this.#seq = 0;
    this.#devices.clear();
    this.#pending.clear();
    this.counts.births++;
    const now = this.#o.clock.nowMs();
    const status = this.#o.status();
    this.#lastNode = status;
    this.#send("NBIRTH", undefined, {
      timestamp: now,
      metrics: [
        {
          name: NODE_METRICS.bdSeq,
          timestamp: now,
          datatype: DataType.UInt64,
          long_value: this.#bdSeq,
        },
        {
          name: NODE_METRICS.rebirth,
          alias: this.#alias("", NODE_METRICS.rebirth),
          timestamp: now,
          datatype: DataType.Boolean,
          boolean_value: false,
        },
        ...this.#nodeMetrics(status, null, now, true),
        {
          name: NODE_METRICS.version,
          alias: this.#alias("", NODE_METRICS.version),
          timestamp: now,
          datatype: DataType.String,
          string_value: this.#o.runtimeVersion,
        },
      ],
    }, true);
    this.#born = true;
    for (const p of this.#o.inventory.providers()) {
      if (!p.available) continue;
      for (const caps of p.devices) this.#deviceBirth(caps);
    }
    this.#drain();
  }

  #deviceBirth(caps: DeviceCapabilities): void {
    const { providerId, deviceId } = caps.device;
    const id = sparkplugDeviceId(providerId, deviceId);
    const now = this.#o.clock.nowMs();
    const metrics: Metric[] = [];
    for (const s of caps.signals) {
      const state = this.#o.reads.signal(providerId, deviceId, s.signalId);
      metrics.push(
        signalBirthMetric(
          s,
          this.#alias(id, s.signalId),
          state?.value ?? null,
          state?.quality ?? "UNAVAILABLE",
          state?.timestampMs ?? now,
        ),
      );
    }
    for (const f of caps.functions) {
      metrics.push(functionBirthMetric(f, this.#alias(id, `Functions/${f.name}`), now));
    }
    metrics.push({
      name: "Properties/Type",
      alias: this.#alias(id, "Properties/Type"),
      timestamp: now,
      datatype: DataType.String,
      string_value: caps.device.typeId,
      properties: propertySet({
        provider: providerId,
        device: deviceId,
        label: caps.device.label,
        type_version: caps.device.typeVersion,
      }),
    });
    this.#pending.delete(id);
    this.#devices.set(id, {
      providerId,
      deviceId,
      signals: new Set(caps.signals.map((s) => s.signalId)),
    });
    this.#send("DBIRTH", id, { timestamp: now, metrics }, true);
  }

  #deviceDeath(id: string): void {
    this.#devices.delete(id);
    this.#pending.delete(id);
    this.#send("DDEATH", id, { timestamp: this.#o.clock.nowMs(), metrics: [] }, true);
  }

  /** A provider's devices after a rediscovery, a reload or a change of availability. */
  #providerChanged(providerId: string): void {
    if (!this.online) return;
    const p = this.#o.inventory.provider(providerId);
    const now = new Map<string, DeviceCapabilities>();
    if (p?.available) {
      for (const caps of p.devices) {
        now.set(sparkplugDeviceId(caps.device.providerId, caps.device.deviceId), caps);
      }
    }
    for (const [id, d] of [...this.#devices]) {
      if (d.providerId === providerId && !now.has(id)) this.#deviceDeath(id);
    }
    for (const [id, caps] of now) {
      const born = this.#devices.get(id);
      const same = born !== undefined && born.signals.size === caps.signals.length &&
        caps.signals.every((s) => born.signals.has(s.signalId));
      if (!same) this.#deviceBirth(caps);
    }
  }

  // ---- data by exception ----

  #onEvent(e: PublishedEvent): void {
    const ev = e.event;
    switch (ev.kind) {
      case "state_update":
        this.#queueSignal(ev.provider_id, ev.device_id, ev.signal_id, ev.value, ev.quality);
        return;
      case "quality_change": {
        const s = this.#o.reads.signal(ev.provider_id, ev.device_id, ev.signal_id);
        this.#queueSignal(
          ev.provider_id,
          ev.device_id,
          ev.signal_id,
          s?.value ?? null,
          ev.new_quality,
        );
        return;
      }
      case "device_availability":
      case "provider_health_change":
        this.#providerChangedSoon(ev.provider_id);
        this.#nodeSoon();
        return;
      case "mode_change":
      case "estop_change":
      case "alarm":
        this.#nodeSoon();
        return;
      default:
        return;
    }
  }

  #queueSignal(
    providerId: string,
    deviceId: string,
    signalId: string,
    value: TypedValue | null,
    quality: Quality,
  ): void {
    const id = sparkplugDeviceId(providerId, deviceId);
    const dev = this.#devices.get(id);
    if (dev === undefined || !dev.signals.has(signalId)) return;
    let m = this.#pending.get(id);
    if (m === undefined) this.#pending.set(id, m = new Map());
    m.set(signalId, { value, quality, timestampMs: this.#o.clock.nowMs() });
    if (!this.#flushQueued) {
      this.#flushQueued = true;
      // One DDATA per device per poll pass: the pass publishes its updates synchronously.
      queueMicrotask(() => this.#flush());
    }
  }

  #flush(): void {
    this.#flushQueued = false;
    for (const [id, signals] of this.#pending) {
      const metrics: Metric[] = [];
      for (const [signalId, p] of signals) {
        metrics.push({
          alias: this.#alias(id, signalId),
          timestamp: p.timestampMs,
          properties: propertySet({ Quality: QUALITY_CODE[p.quality] }),
          ...valueFields(p.value),
        });
      }
      // In order: while anything is stored, new data queues behind it.
      if (this.online && this.#storeLength() === 0 && this.#inFlight < MAX_IN_FLIGHT) {
        this.#send("DDATA", id, { timestamp: this.#o.clock.nowMs(), metrics }, false);
      } else {
        this.#keep(id, metrics);
      }
    }
    this.#pending.clear();
    this.#drain();
  }

  // ---- store and forward ----

  #storeLength(): number {
    return this.#store.length - this.#storeHead;
  }

  /** Keeps a DDATA for later, dropping the oldest beyond the bounds (counted, WARNed). */
  #keep(deviceId: string, metrics: Metric[]): void {
    const { maxMessages, maxBytes } = this.#o.config.storeForward;
    const timestampMs = this.#o.clock.nowMs();
    for (const m of metrics) m.is_historical = true;
    const bytes = encode({ timestamp: timestampMs, metrics }).length;
    this.counts.stored++;
    this.#store.push({ deviceId, timestampMs, metrics, bytes });
    this.#storeBytes += bytes;
    let dropped = 0;
    while (
      this.#storeLength() > 0 &&
      (this.#storeLength() > maxMessages || this.#storeBytes > maxBytes)
    ) {
      this.#storeBytes -= this.#store[this.#storeHead]!.bytes;
      this.#storeHead++;
      dropped++;
    }
    if (this.#storeHead > 1024 && this.#storeHead * 2 > this.#store.length) {
      this.#store.splice(0, this.#storeHead);
      this.#storeHead = 0;
    }
    if (dropped > 0) {
      this.counts.storeDropped += dropped;
      if (!this.#dropWarned) {
        this.#dropWarned = true;
        this.#log.warn(
          `sparkplug store-and-forward full (sparkplug.store_forward: ${maxMessages} messages, ` +
            `${maxBytes} bytes): dropping the oldest data (${this.counts.storeDropped} dropped so far)`,
        );
      }
    }
  }

  /** Publishes stored data, oldest first, with is_historical, while online and under the bound. */
  #drain(): void {
    while (this.online && this.#storeLength() > 0 && this.#inFlight < MAX_IN_FLIGHT) {
      const item = this.#store[this.#storeHead]!;
      this.#storeHead++;
      this.#storeBytes -= item.bytes;
      // A device that did not come back on this connection has no alias there: its data goes.
      if (!this.#devices.has(item.deviceId)) {
        this.counts.storeDropped++;
        continue;
      }
      this.counts.replayed++;
      this.#send(
        "DDATA",
        item.deviceId,
        { timestamp: item.timestampMs, metrics: item.metrics },
        true,
      );
    }
    if (this.#storeLength() === 0) {
      this.#store.length = 0;
      this.#storeHead = 0;
      if (this.#dropWarned) {
        this.#dropWarned = false;
        this.#log.info(
          `sparkplug store-and-forward drained (${this.counts.storeDropped} dropped since start)`,
        );
      }
    }
  }

  #providerChangedSoon(providerId: string): void {
    queueMicrotask(() => this.#providerChanged(providerId));
  }

  #nodeSoon(): void {
    if (this.#nodeQueued) return;
    this.#nodeQueued = true;
    queueMicrotask(() => {
      this.#nodeQueued = false;
      if (!this.online) return;
      const now = this.#o.clock.nowMs();
      const status = this.#o.status();
      const metrics = this.#nodeMetrics(status, this.#lastNode, now, false);
      this.#lastNode = status;
      if (metrics.length > 0) this.#send("NDATA", undefined, { timestamp: now, metrics }, false);
    });
  }

  /** Node metrics that differ from `before` (all of them in a birth). */
  #nodeMetrics(s: NodeStatus, before: NodeStatus | null, now: number, birth: boolean): Metric[] {
    const out: Metric[] = [];
    const add = (name: string, changed: boolean, fields: Metric, datatype: number) => {
      if (!birth && !changed) return;
      out.push({
        ...(birth ? { name } : {}),
        alias: this.#alias("", name),
        timestamp: now,
        ...(birth ? { datatype } : {}),
        ...fields,
      });
    };
    add(NODE_METRICS.mode, s.mode !== before?.mode, { string_value: s.mode }, DataType.String);
    add(
      NODE_METRICS.latched,
      s.estopLatched !== before?.estopLatched,
      { boolean_value: s.estopLatched },
      DataType.Boolean,
    );
    const int = (name: string, v: number, b: number | undefined) =>
      add(name, v !== b, { int_value: v >>> 0 }, DataType.Int32);
    int(NODE_METRICS.alarmsActive, s.alarmsActive, before?.alarmsActive);
    int(NODE_METRICS.alarmsUnacked, s.alarmsUnacked, before?.alarmsUnacked);
    int(NODE_METRICS.providersUp, s.providersUp, before?.providersUp);
    int(NODE_METRICS.providersDown, s.providersDown, before?.providersDown);
    return out;
  }

  // ---- commands ----

  #message(topic: string, payload: Uint8Array): void {
    const o = this.#o;
    const ncmd = topicOf(o.config.groupId, "NCMD", o.edgeNodeId);
    let decoded;
    try {
      decoded = decode(payload);
    } catch (err) {
      this.#log.warn(`sparkplug: undecodable payload on ${topic}: ${errorMessage(err)}`);
      return;
    }
    if (topic === ncmd) {
      const rebirthAlias = this.#aliases.get(`\u0000${NODE_METRICS.rebirth}`);
      for (const m of decoded.metrics ?? []) {
        const isRebirth = m.name === NODE_METRICS.rebirth ||
          (m.name === undefined && m.alias === rebirthAlias);
        if (isRebirth && m.boolean_value === true) {
          this.#log.info("sparkplug: Node Control/Rebirth requested; publishing births");
          this.rebirth();
        } else {
          this.#ignored(topic, `metric ${String(m.name ?? `alias ${m.alias}`)}`);
        }
      }
      return;
    }
    this.#ignored(topic, "commands are off (sparkplug.commands: false)");
  }

  #ignored(topic: string, why: string): void {
    this.counts.commandsIgnored++;
    const n = this.counts.commandsIgnored;
    // Bounded logging: a flood of commands is not a flood of log lines.
    if (n <= 10 || n % 1000 === 0) {
      this.#log.warn(`sparkplug: command on ${topic} ignored (${n} so far): ${why}`);
    }
  }

  // ---- publishing ----

  #topic(type: MessageType, deviceId?: string): string {
    return topicOf(this.#o.config.groupId, type, this.#o.edgeNodeId, deviceId);
  }

  #deathPayload(): Uint8Array {
    return encode({
      timestamp: this.#o.clock.nowMs(),
      metrics: [{ name: NODE_METRICS.bdSeq, datatype: DataType.UInt64, long_value: this.#bdSeq }],
    });
  }

  #alias(deviceId: string, name: string): number {
    const key = `${deviceId}\u0000${name}`;
    let a = this.#aliases.get(key);
    if (a === undefined) this.#aliases.set(key, a = this.#nextAlias++);
    return a;
  }

  /** Publishes with the next seq; births and deaths always go, data only under the bound. */
  #send(type: MessageType, deviceId: string | undefined, p: Payload, always: boolean): void {
    const session = this.#session;
    if (session === null || !session.connected) return;
    if (!always && this.#inFlight >= MAX_IN_FLIGHT) {
      this.counts.publishFailures++;
      return;
    }
    p.seq = type === "NBIRTH" ? 0 : this.#seq;
    this.#seq = (p.seq + 1) % 256;
    const bytes = encode(p);
    const qos = type === "DDATA" || type === "NDATA" ? this.#o.config.qos : 0;
    this.#inFlight++;
    session.publish(this.#topic(type, deviceId), bytes, qos).then(() => {
      this.#inFlight--;
      this.counts.published++;
      if (this.#storeLength() > 0) this.#drain();
    }, (err) => {
      this.#inFlight--;
      this.counts.publishFailures++;
      this.#log.debug(`sparkplug: ${type} not published: ${errorMessage(err)}`);
    });
  }
}
