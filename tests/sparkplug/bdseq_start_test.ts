/**
 * The edge node's start waits for its bdSeq store (the last bdSeq read, the next one recorded)
 * BDSEQ_SAVE_WAIT_MS at most: a store that never answers (a hung disk under runtime.data_dir)
 * must not keep start() -- and the kernel's start after it -- waiting for ever. It then connects
 * with what it has (WARNed: a restart may reuse that bdSeq); an answer that comes later does not
 * change the bdSeq of a session already opened. stop() ends the wait too.
 */
import assert from "node:assert/strict";
import type { MqttSessionOptions } from "../../src/common/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import {
  BDSEQ_SAVE_WAIT_MS,
  type BdSeqStore,
  decode,
  SparkplugEdgeNode,
} from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { idleMqttSession } from "../helpers/held_mqtt.ts";

/** A store whose load and save answer only when the test says so (never, unless it does). */
function hungStore() {
  const loads: ((n: number | null) => void)[] = [];
  const saves: number[] = [];
  const store: BdSeqStore = {
    load: () => new Promise((r) => loads.push(r)),
    save(n) {
      saves.push(n);
      return new Promise(() => {});
    },
  };
  return { store, loads, saves };
}

function edgeNode(store: BdSeqStore) {
  const clock = new ManualClock();
  const lines: string[] = [];
  const connects: MqttSessionOptions[] = [];
  const inventory = {
    providers: () => [],
    provider: () => undefined,
    devices: () => [],
    capabilities: () => undefined,
    onChange: () => () => {},
    onAvailability: () => () => {},
  } as unknown as InventoryReader;
  const node = new SparkplugEdgeNode({
    config: { ...testConfig().sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: (o) => {
      connects.push(o);
      return Promise.resolve(idleMqttSession());
    },
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "IDLE",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: 0,
      providersDown: 0,
    }),
    bdSeqStore: store,
    runtimeVersion: "test",
    clock,
    log: capturingLogger({ now: () => clock.nowMs(), lines }).log,
  });
  return { clock, node, connects, lines };
}

/** The bdSeq of a connection's will (its NDEATH). */
const willBdSeq = (o: MqttSessionOptions) =>
  Number(decode(o.will!.payload).metrics?.find((m) => m.name === "bdSeq")?.long_value);

/** Settles `p` within a few turns of the event loop, or says it is still waiting. */
async function settled(p: Promise<unknown>): Promise<boolean> {
  let done = false;
  p.then(() => (done = true), () => (done = true));
  await flushMicrotasks();
  await new Promise((r) => setTimeout(r, 0));
  return done;
}

Deno.test("start() waits for a bdSeq store that never answers its load BDSEQ_SAVE_WAIT_MS at most, then connects", async () => {
  const { store, loads } = hungStore();
  const { clock, node, connects, lines } = edgeNode(store);
  const starting = node.start();
  assert.equal(await settled(starting), false, "waits for the store meanwhile");
  await clock.advanceAsync(BDSEQ_SAVE_WAIT_MS - 1);
  assert.equal(connects.length, 0, "not before the bound");
  await clock.advanceAsync(1);
  assert.equal(await settled(starting), true, "start() ends at the bound");
  assert.equal(connects.length, 1, "the session is opened");
  assert.equal(willBdSeq(connects[0]!), 0);
  assert.ok(
    lines.some((l) => l.startsWith("WARN") && l.includes("BDSEQ_SAVE_WAIT_MS")),
    lines.join("\n"),
  );
  // The load answers late: the session's bdSeq (its will's) is not changed under it.
  loads[0]!(41);
  await flushMicrotasks();
  assert.equal(node.bdSeq, 0);
  await node.stop();
});

Deno.test("start() waits for a bdSeq save that never completes BDSEQ_SAVE_WAIT_MS at most", async () => {
  const { store, loads, saves } = hungStore();
  const { clock, node, connects } = edgeNode(store);
  const starting = node.start();
  await flushMicrotasks();
  loads[0]!(7);
  await flushMicrotasks();
  assert.deepEqual(saves, [8], "the next bdSeq is being recorded");
  await clock.advanceAsync(BDSEQ_SAVE_WAIT_MS);
  assert.equal(await settled(starting), true, "start() ends at the bound");
  assert.equal(willBdSeq(connects[0]!), 8);
  await node.stop();
});

Deno.test("stop() during start()'s wait for the bdSeq store ends it without a session", async () => {
  const { store } = hungStore();
  const { node, connects } = edgeNode(store);
  const starting = node.start();
  await flushMicrotasks();
  await node.stop();
  assert.equal(await settled(starting), true, "start() ends with stop()");
  assert.equal(connects.length, 0);
});
