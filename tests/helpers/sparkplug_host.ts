/**
 * A test-side Sparkplug host application: an MQTT.js client that subscribes to one group's
 * topics on a broker (tests/helpers/mosquitto.ts) and decodes every message it receives, and can
 * publish commands and STATE. Shared by the tests of tests/sparkplug/.
 */
import { Buffer } from "node:buffer";
import mqtt, { type IClientOptions, type MqttClient } from "mqtt";
import type { MqttConnect } from "../../src/common/mod.ts";
import { decode, encode } from "../../src/sparkplug/mod.ts";
import { connectMqttJs, type LineLogger } from "../../src/host/mod.ts";
import { capturingLogger } from "./log_lines.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "./kernel.ts";
import { simProvider, testConfig, type TestConfigOptions } from "./sim_config.ts";
import { Mosquitto } from "./mosquitto.ts";
import {
  type RuntimeChild,
  type RuntimeChildOptions,
  startRuntimeWithConfigOnFreePort,
} from "./runtime_process.ts";

/** One message the host received: its topic, the decoded payload and the bytes as sent. */
export interface Received {
  topic: string;
  payload: ReturnType<typeof decode>;
  raw: Uint8Array;
}

export interface SparkplugHost {
  readonly client: MqttClient;
  /** Every message on `spBv1.0/<group>/#`, in arrival order. */
  readonly messages: Received[];
  /** Publishes encoded payload bytes (QoS 1). */
  publish(topic: string, payload: Uint8Array): Promise<void>;
  /**
   * Publishes a payload of these metrics, timestamped now (QoS 1): an NCMD or DCMD; `retain`
   * asks the broker to keep it (which Sparkplug forbids for commands: tests of a host that does).
   */
  send(
    topic: string,
    metrics: Array<Record<string, unknown>>,
    o?: { readonly retain?: boolean },
  ): Promise<void>;
  close(): Promise<void>;
}

/** Connects a host to `url` reading group `group`; `options` add to the MQTT.js client's. */
export async function sparkplugHost(
  url: string,
  group: string,
  options: IClientOptions = {},
): Promise<SparkplugHost> {
  const client = await mqtt.connectAsync(url, {
    clientId: `host-${crypto.randomUUID()}`,
    ...options,
  });
  const messages: Received[] = [];
  const prefix = `spBv1.0/${group}/`;
  client.on("message", (topic, payload) => {
    if (!topic.startsWith(prefix)) return;
    const raw = new Uint8Array(payload);
    messages.push({ topic, payload: decode(raw), raw });
  });
  await client.subscribeAsync(`${prefix}#`, { qos: 1 });
  const publish = async (topic: string, payload: Uint8Array, retain = false) => {
    await client.publishAsync(topic, Buffer.from(payload), { qos: 1, retain });
  };
  return {
    client,
    messages,
    publish,
    send: (topic, metrics, o = {}) =>
      publish(topic, encode({ timestamp: Date.now(), metrics }), o.retain === true),
    close: async () => {
      await client.endAsync(true);
    },
  };
}

/**
 * The rig of a Sparkplug test against a real Mosquitto with the runtime in-process: a broker, a
 * host reading group `group` on it, and the runtime of `config(brokerUrl)` started (startRuntime,
 * with `start`); `body` runs with them. The runtime, the host and the broker are stopped after
 * it, in that order, whether it passed or threw (or the start did).
 */
export async function withSparkplugRuntime(
  o: {
    readonly group: string;
    readonly config: (brokerUrl: string) => Config;
    readonly start?: Parameters<typeof startRuntime>[1];
  },
  body: (rt: Kernel, host: SparkplugHost) => Promise<void>,
): Promise<void> {
  const broker = await Mosquitto.start();
  const host = await sparkplugHost(broker.url, o.group);
  let rt: Kernel | null = null;
  try {
    rt = await startRuntime(o.config(broker.url), o.start);
    await body(rt, host);
  } finally {
    await rt?.stop();
    await host.close();
    await broker.dispose();
  }
}

/**
 * withSparkplugRuntime's `config` of the common case: the runtime named `node` with one simulated
 * provider `sim0`, its Sparkplug node on in group `group`, and `sparkplug` (commands, a primary
 * host, ...) added to that.
 */
export function simNodeConfig(
  node: string,
  group: string,
  sparkplug: TestConfigOptions["sparkplug"] = {},
): (brokerUrl: string) => Config {
  return (brokerUrl) =>
    testConfig({
      runtime: { name: node },
      providers: [simProvider("sim0")],
      sparkplug: { enabled: true, brokerUrl, groupId: group, ...sparkplug },
    });
}

/**
 * A host that reconnects by itself (for tests where the broker goes away and comes back), with a
 * persistent session (clean=false, QoS 1): whatever the edge node publishes after the broker comes
 * back waits for the host even when the node reconnects first.
 */
export function reconnectingHost(url: string, group: string): Promise<SparkplugHost> {
  return sparkplugHost(url, group, { reconnectPeriod: 100, clean: false });
}

/** How long hostBackConnect's writes wait for the host at most; then they go out all the same. */
export const HOST_BACK_TIMEOUT_MS = 30_000;

/** An edge node's MQTT port whose writes can wait for a reconnecting host (hostBackConnect). */
export interface HostBackConnect {
  /** The port to hand the node (`host.mqttConnect`, or the ring rig's `connect`). */
  readonly connect: MqttConnect;
  /**
   * Call while the broker is away, once the node has seen it gone (so no write of its old
   * connection is held) and before it comes back: from then on the node's writes wait for the
   * host's next connection (its reconnection to the restarted broker), then go out in the order
   * written.
   */
  holdUntilHostBack(): void;
  /**
   * Whether the node's writes wait for the host now: from holdUntilHostBack until the host's next
   * connection (or HOST_BACK_TIMEOUT_MS). A write let go meanwhile reaches MQTT.js only then.
   */
  readonly holding: boolean;
}

/**
 * An MQTT port (MQTT.js, or `inner`) for an edge node whose host (reconnectingHost) must be back
 * before the node's writes reach the broker after a restart. A host's persistent session that a
 * restarted Mosquitto restored loses a message or two of those queued for it before it reconnects
 * (eclipse-mosquitto/mosquitto#2349: the node had every one PUBACKed, a second host missed the same
 * ones): the broker's loss, not the node's. Waiting is a slower network, for the node.
 */
export function hostBackConnect(
  host: SparkplugHost,
  inner: MqttConnect = connectMqttJs,
): HostBackConnect {
  let hostBack: Promise<void> | null = null;
  let holding = false;
  const connect: MqttConnect = async (o) => {
    const s = await inner(o);
    return {
      publish(topic, payload, qos) {
        if (hostBack === null) return s.publish(topic, payload, qos);
        return hostBack.then(() => s.publish(topic, payload, qos));
      },
      subscribe: (topics, qos) => s.subscribe(topics, qos),
      onConnect: (l) => s.onConnect(l),
      onClose: (l) => s.onClose(l),
      onMessage: (l) => s.onMessage(l),
      onError: (l) => s.onError(l),
      get connected() {
        return s.connected;
      },
      end: (force) => s.end(force),
    };
  };
  return {
    connect,
    holdUntilHostBack() {
      const back = Promise.withResolvers<void>();
      holding = true;
      const release = () => {
        // A later holdUntilHostBack's hold is its own.
        if (hostBack === back.promise) holding = false;
        back.resolve();
      };
      // Bounded: a host that never comes back fails the test's own wait, and the node's writes
      // (its NDEATH as it stops) must not hang the clean-up.
      const timer = setTimeout(release, HOST_BACK_TIMEOUT_MS);
      host.client.once("connect", () => {
        clearTimeout(timer);
        release();
      });
      hostBack = back.promise;
    },
    get holding() {
      return holding;
    },
  };
}

/**
 * The alias the edge node `node`'s latest NBIRTH the host received gave `Runtime/Command Result`,
 * the String the node answers NCMDs (and DCMDs no device metric carries) on. Waits for the NBIRTH.
 */
export async function commandResultAlias(
  host: SparkplugHost,
  group: string,
  node: string,
): Promise<unknown> {
  const topic = `spBv1.0/${group}/NBIRTH/${node}`;
  const nbirth = await waitFor("NBIRTH", () => host.messages.findLast((m) => m.topic === topic));
  const metric = (nbirth.payload.metrics ?? []).find((m) => m.name === "Runtime/Command Result");
  if (metric === undefined) throw new Error(`the NBIRTH of ${node} has no Runtime/Command Result`);
  return metric.alias;
}

/**
 * The node's answers (the Strings of its `Runtime/Command Result`, `alias`) in the NDATA the host
 * received from message `from` on, once there are `count` of them; after `timeoutMs`, those there
 * are (for the assertion to show).
 */
export async function nodeAnswers(
  host: SparkplugHost,
  o: {
    readonly group: string;
    readonly node: string;
    readonly alias: unknown;
    readonly from: number;
    readonly count: number;
  },
  timeoutMs = 10_000,
): Promise<unknown[]> {
  const topic = `spBv1.0/${o.group}/NDATA/${o.node}`;
  const answers = () =>
    host.messages.slice(o.from).flatMap((m) => m.topic === topic ? m.payload.metrics ?? [] : [])
      .filter((x) => x.alias === o.alias && typeof x.string_value === "string")
      .map((x) => x.string_value);
  return await waitFor("the node's answers", () => {
    const a = answers();
    return a.length >= o.count ? a : null;
  }, timeoutMs).catch(() => answers());
}

/** Sets relay 3 of the simulated provider's `sim0/relayio0` through the router, as an operator. */
export async function setSimRelay(rt: Kernel, on: boolean): Promise<void> {
  await rt.router.call({
    providerId: "sim0",
    deviceId: "relayio0",
    functionName: "set_relay_ch3",
    args: { enabled: { type: "bool", bool: on } },
    origin: "manual",
  });
}

/** A logger keeping every line from `info` up (for asserting what was logged). */
export function infoLines(): { lines: string[]; log: LineLogger } {
  return capturingLogger({ level: "info" });
}

/** What differs between the Sparkplug tests that run the runtime as a child process. */
export interface SparkplugRuntimeYaml {
  /** runtime.name: the edge node id. */
  readonly node: string;
  /** runtime.data_dir is `<dir>/data`. */
  readonly dir: string;
  readonly port: number;
  readonly brokerUrl: string;
  readonly group: string;
  /** The sim provider's `args` list, as YAML flow items (the source sim or the bundled one). */
  readonly simArgs: string;
  /** polling.interval_ms (absent: the default). */
  readonly pollIntervalMs?: number;
  /** Top-level YAML put before `providers:` (e.g. a history section). */
  readonly before?: string;
  /** More `sparkplug:` keys, one `key: value` each. */
  readonly sparkplug?: readonly string[];
}

/** The runtime YAML of a child-process Sparkplug test: one sim `sim0`, Sparkplug on. */
export function sparkplugRuntimeYaml(o: SparkplugRuntimeYaml): string {
  return [
    "runtime:",
    `  name: ${o.node}`,
    `  data_dir: ${o.dir}/data`,
    "http:",
    `  port: ${o.port}`,
    ...(o.before === undefined ? [] : [o.before.trimEnd()]),
    ...(o.pollIntervalMs === undefined ? [] : ["polling:", `  interval_ms: ${o.pollIntervalMs}`]),
    "providers:",
    "  - id: sim0",
    `    command: ${Deno.execPath()}`,
    `    args: [${o.simArgs}]`,
    "sparkplug:",
    "  enabled: true",
    `  broker_url: ${o.brokerUrl}`,
    `  group_id: ${o.group}`,
    ...(o.sparkplug ?? []).map((line) => `  ${line}`),
    "",
  ].join("\n");
}

/**
 * Starts the runtime child of a child-process Sparkplug test on a free port
 * (startRuntimeWithConfigOnFreePort), its config sparkplugRuntimeYaml(`o` with that port) written
 * to `<o.dir>/runtime.yaml`; `child`: the child's other options (e.g. the bundle's entry).
 */
export function startSparkplugRuntimeChild(
  o: Omit<SparkplugRuntimeYaml, "port">,
  child: Omit<RuntimeChildOptions, "config" | "port"> = {},
): Promise<RuntimeChild> {
  return startRuntimeWithConfigOnFreePort(
    `${o.dir}/runtime.yaml`,
    (port) => sparkplugRuntimeYaml({ ...o, port }),
    child,
  );
}

/**
 * The last integer value a host received of node `node`'s metric `name` in `group` (by its
 * NBIRTH name, then its alias in the NDATA after it); null when no birth named it.
 */
export function lastNodeIntMetric(
  messages: readonly Received[],
  group: string,
  node: string,
  name: string,
): number | null {
  let alias: number | null = null;
  let value: number | null = null;
  for (const m of messages) {
    if (m.topic === `spBv1.0/${group}/NBIRTH/${node}`) {
      const b = (m.payload.metrics ?? []).find((x) => x.name === name);
      alias = b === undefined ? null : Number(b.alias);
      value = b === undefined ? null : Number(b.int_value);
    } else if (m.topic === `spBv1.0/${group}/NDATA/${node}` && alias !== null) {
      const d = (m.payload.metrics ?? []).find((x) => Number(x.alias) === alias);
      if (d !== undefined) value = Number(d.int_value);
    }
  }
  return value;
}

/**
 * The last value a host received of node `node`'s metric `name` in `group` (a Boolean's or a
 * String's: by its NBIRTH name, then its alias in the NDATA after it); undefined when no birth
 * named it.
 */
export function lastNodeValue(
  messages: readonly Received[],
  group: string,
  node: string,
  name: string,
): boolean | string | undefined {
  let alias: number | null = null;
  let value: boolean | string | undefined = undefined;
  const valueOf = (m: { boolean_value?: boolean; string_value?: string }) =>
    m.boolean_value ?? m.string_value;
  for (const m of messages) {
    if (m.topic === `spBv1.0/${group}/NBIRTH/${node}`) {
      const b = (m.payload.metrics ?? []).find((x) => x.name === name);
      alias = b === undefined ? null : Number(b.alias);
      value = b === undefined ? undefined : valueOf(b);
    } else if (m.topic === `spBv1.0/${group}/NDATA/${node}` && alias !== null) {
      const d = (m.payload.metrics ?? []).find((x) => Number(x.alias) === alias);
      if (d !== undefined) value = valueOf(d);
    }
  }
  return value;
}

/** A birth metric's `engUnit` property (undefined: none). */
export function engUnit(
  m: { properties?: { keys?: string[]; values?: { string_value?: string }[] } },
): string | undefined {
  const i = m.properties?.keys?.indexOf("engUnit") ?? -1;
  return i < 0 ? undefined : m.properties!.values![i]!.string_value;
}
