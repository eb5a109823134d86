/**
 * DBIRTH/DDEATH from a provider's availability (or inventory) changes stay under MAX_IN_FLIGHT
 * like everything else: a provider flapping while the broker takes no writes adds no write beyond
 * the bound (each flap was a DDEATH and a DBIRTH more, without limit). What the host must learn
 * goes out once writes complete: the device's state as it is then (born again, or dead).
 *
 * The MQTT session is a test double (tests/helpers/held_session.ts): completing the broker's
 * writes at will is what shows the in-flight bound.
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { MAX_IN_FLIGHT, sparkplugDeviceId, SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { HeldSession } from "../helpers/held_session.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { testLogger } from "../helpers/kernel.ts";

const P = "p0";
const D = "dev0";
const DEVICE = sparkplugDeviceId(P, D);

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
  functions: [],
  signals: [{
    signalId: "a",
    name: "a",
    description: "",
    valueType: "double",
    unit: "",
    pollHintHz: 10,
    staleAfterMs: 0,
  }],
};

function rig() {
  const summary = { id: P, available: true, devices: [caps] };
  const availability: ((p: { id: string }) => void)[] = [];
  const inventory = {
    providers: () => [summary],
    provider: (id: string) => (id === P ? summary : undefined),
    devices: () => (summary.available ? [caps.device] : []),
    capabilities: () => caps,
    onChange: () => () => {},
    onAvailability(l: (p: { id: string }) => void) {
      availability.push(l);
      return () => {};
    },
  } as unknown as InventoryReader;
  const session = new HeldSession();
  const node = new SparkplugEdgeNode({
    config: { ...testConfig().sparkplug, enabled: true, brokerUrl: "mqtt://test", groupId: "g" },
    edgeNodeId: "n",
    clientId: "c",
    connect: () => Promise.resolve(session),
    bus: { subscribe: () => () => {} },
    inventory,
    reads: { signal: () => undefined, qualityNow: (_p, _d, _s, s) => s.quality },
    status: () => ({
      mode: "IDLE",
      estopLatched: false,
      alarmsActive: 0,
      alarmsUnacked: 0,
      providersUp: summary.available ? 1 : 0,
      providersDown: summary.available ? 0 : 1,
    }),
    runtimeVersion: "test",
    clock: new ManualClock(),
    log: testLogger(),
  });
  const setAvailable = (available: boolean) => {
    summary.available = available;
    for (const l of availability) l({ id: P });
  };
  return { node, session, setAvailable };
}

const deviceMessages = (session: HeldSession, from: number) =>
  session.published.slice(from).map((m) => m.topic).filter((t) => t.endsWith(`/${DEVICE}`))
    .map((t) => t.split("/")[2]);

Deno.test("a provider flapping while the broker takes no writes adds no DBIRTH/DDEATH beyond MAX_IN_FLIGHT; its state goes out after", async () => {
  const { node, session, setAvailable } = rig();
  await node.start();
  session.up();
  await flushMicrotasks();
  assert.ok(node.online, "born");
  // The broker stops confirming writes: rebirths fill the writes in flight to the bound.
  while (session.inFlight < MAX_IN_FLIGHT) node.rebirth();
  const full = session.inFlight;
  const before = session.published.length;

  for (let i = 0; i < 50; i++) {
    setAvailable(false);
    await flushMicrotasks();
    setAvailable(true);
    await flushMicrotasks();
  }
  setAvailable(false);
  await flushMicrotasks();
  assert.equal(session.inFlight, full, "no write beyond the bound");
  assert.ok(session.inFlight <= MAX_IN_FLIGHT);

  // The writes complete: the host learns the device is dead (once), not 101 flaps.
  session.completeOne();
  await flushMicrotasks();
  assert.deepEqual(deviceMessages(session, before), ["DDEATH"]);
  session.complete();
  await flushMicrotasks();

  // Back while the writes are full again: born again once a write completes.
  while (session.inFlight < MAX_IN_FLIGHT) node.rebirth();
  const again = session.published.length;
  setAvailable(true);
  await flushMicrotasks();
  assert.deepEqual(deviceMessages(session, again), [], "waits for a write to complete");
  session.completeOne();
  await flushMicrotasks();
  assert.deepEqual(deviceMessages(session, again), ["DBIRTH"]);
  session.complete();
  await flushMicrotasks();
  const stopping = node.stop();
  await flushMicrotasks();
  session.complete();
  await stopping;
});
