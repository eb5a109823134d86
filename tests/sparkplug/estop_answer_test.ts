/**
 * The answer to an NCMD `Node Control/E-Stop` (Runtime/Command Result): OK once the latch is
 * engaged (the trigger's synchronous part), not waiting for the safe-state ladder; FAILED when the
 * trigger threw before the latch engaged. The MQTT session and the e-stop port are test doubles
 * (the command_device_gone_test.ts style): a trigger that throws cannot be had from the real one.
 */
import assert from "node:assert/strict";
import type { MqttMessageListener, MqttSession } from "../../src/common/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { DataType, decode, encode, SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";
import type { CommandPorts } from "../../src/sparkplug/mod.ts";
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

async function answerTo(estop: CommandPorts["estop"]): Promise<string[]> {
  const inventory = {
    providers: () => [],
    provider: () => undefined,
    devices: () => [],
    capabilities: () => undefined,
    onChange: () => () => {},
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const session = new LoopSession();
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
      providersUp: 0,
      providersDown: 0,
    }),
    commands: { call: () => Promise.reject(new Error("no calls")), estop },
    runtimeVersion: "test",
    clock: new ManualClock(),
    log: testLogger(),
  });
  await node.start();
  session.up();
  await flushMicrotasks();
  const nbirth = session.published.find((m) => m.topic === "spBv1.0/g/NBIRTH/n")!;
  const resultAlias =
    (nbirth.payload.metrics ?? []).find((m) => m.name === "Runtime/Command Result")!.alias;
  const from = session.published.length;
  session.deliver(
    "spBv1.0/g/NCMD/n",
    encode({
      timestamp: 1,
      metrics: [{ name: "Node Control/E-Stop", datatype: DataType.Boolean, boolean_value: true }],
    }),
  );
  await flushMicrotasks();
  const answers = session.published.slice(from).flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) =>
        String(x.string_value)
      )
      : []
  );
  await node.stop();
  return answers;
}

Deno.test("an NCMD e-stop whose trigger threw before the latch is answered FAILED, not OK", async () => {
  const answers = await answerTo(() => Promise.reject(new Error("audit journal closed")));
  assert.deepEqual(
    answers,
    ["Node Control/E-Stop: FAILED: audit journal closed"],
    "the host is told the e-stop it asked for was taken",
  );
});

Deno.test("an NCMD e-stop is answered OK once the latch engaged, while its ladder still runs", async () => {
  const answers = await answerTo((_reason, _source, onLatched) => {
    onLatched?.();
    return new Promise(() => {}); // the ladder never ends in this test
  });
  assert.deepEqual(answers, ["Node Control/E-Stop: OK"]);
});
