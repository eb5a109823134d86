/**
 * A device declaring one function name twice: the call path reaches the LAST declaration
 * (src/control/call_router.ts #select, as anolis indexes functions by name), and so does the AUTO
 * gate. A DCMD writing `Functions/<name>` must type its arguments by that same declaration (it
 * typed them by the first: the call was refused, or sent with the first's types and validated
 * against the last), and the DBIRTH must declare the metric once, as that declaration.
 *
 * The MQTT session is a test double (the replay_walk_test.ts style): the test hands the node its
 * DCMD and reads what it publishes.
 */
import assert from "node:assert/strict";
import type {
  ArgSpec,
  DeviceCapabilities,
  FunctionSpec,
  MqttMessageListener,
  MqttSession,
} from "../../src/common/mod.ts";
import type { CallRequest, CallResult } from "../../src/control/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import {
  DataType,
  decode,
  encode,
  sparkplugDeviceId,
  SparkplugEdgeNode,
} from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

/** A session that completes every write at once and delivers what the test sends it. */
class LoopSession implements MqttSession {
  connected = false;
  readonly published: { topic: string; payload: ReturnType<typeof decode> }[] = [];
  readonly #connect: (() => void)[] = [];
  readonly #message: MqttMessageListener[] = [];

  publish(topic: string, payload: Uint8Array): Promise<void> {
    this.published.push({ topic, payload: decode(payload) });
    return Promise.resolve();
  }
  subscribe(): Promise<void> {
    return Promise.resolve();
  }
  onConnect(l: () => void): void {
    this.#connect.push(l);
  }
  onClose(): void {}
  onMessage(l: MqttMessageListener): void {
    this.#message.push(l);
  }
  onError(): void {}
  end(): Promise<void> {
    this.connected = false;
    return Promise.resolve();
  }
  up(): void {
    this.connected = true;
    for (const l of this.#connect) l();
  }
  deliver(topic: string, payload: Uint8Array): void {
    for (const l of this.#message) l(topic, payload, false);
  }
}

const P = "p0";
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

function arg(name: string, type: ArgSpec["type"]): ArgSpec {
  return { name, type, unit: "", description: "", required: true, allowedValues: [] };
}

function fn(functionId: number, args: ArgSpec[]): FunctionSpec {
  return {
    functionId,
    name: "set_level",
    description: `declaration ${functionId}`,
    category: "CONFIG",
    actuating: true,
    args,
  };
}

const caps: DeviceCapabilities = {
  device: {
    providerId: P,
    deviceId: D,
    providerName: "test",
    typeId: "t",
    typeVersion: "1",
    label: "dev",
    address: "",
    tags: {},
  },
  // The same name twice: a bool first, a double last (the one a call by name reaches).
  functions: [fn(1, [arg("level", "bool")]), fn(2, [arg("level", "double")])],
  signals: [],
};

Deno.test("a DCMD on a duplicated function name is typed by its last declaration, the one the call reaches; the DBIRTH declares that one once", async () => {
  const summary = { id: P, available: true, devices: [caps] };
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => [caps.device],
    capabilities: () => caps,
    onChange: () => () => {},
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const session = new LoopSession();
  const calls: CallRequest[] = [];
  const node = new SparkplugEdgeNode({
    config: { ...testConfig().sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => Promise.resolve(session),
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "MANUAL",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 1,
      providersDown: 0,
    }),
    commands: {
      call(req) {
        calls.push(req);
        return Promise.resolve({} as CallResult);
      },
      estop: () => Promise.resolve(),
    },
    runtimeVersion: "test",
    clock: new ManualClock(),
    log: testLogger(),
  });
  await node.start();
  session.up();
  await flushMicrotasks();
  const dbirth = session.published.find((m) => m.topic === `spBv1.0/g/DBIRTH/n/${DEVICE}`);
  assert.ok(dbirth, "the DBIRTH");
  session.deliver(
    `spBv1.0/g/DCMD/n/${DEVICE}`,
    encode({
      timestamp: 1,
      metrics: [{ name: "Functions/set_level", datatype: DataType.Double, double_value: 2.5 }],
    }),
  );
  await flushMicrotasks();
  const answers = session.published.flatMap((m) =>
    m.topic === `spBv1.0/g/DDATA/n/${DEVICE}` ? m.payload.metrics ?? [] : []
  ).map((m) => m.string_value);
  assert.deepEqual(answers, ["OK"], "answered");
  assert.deepEqual(
    calls.map((c) => [c.functionName, c.args]),
    [["set_level", { level: { type: "double", double: 2.5 } }]],
  );
  const declared = (dbirth.payload.metrics ?? []).filter((m) => m.name === "Functions/set_level");
  assert.deepEqual(
    declared.map((m) => m.string_value),
    ["declaration 2"],
    "one metric per name, as the declaration a call reaches",
  );

  await node.stop();
});
