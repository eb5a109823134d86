/**
 * Following the primary host's STATE (issue 38 item 3; Sparkplug 3.0, Operational Behavior:
 * tck-id-message-flow-edge-node-birth-publish-subscribe, ..._multiple_servers-walk): with
 * `sparkplug.primary_host_id` the edge node publishes no births until the host's STATE says it is
 * online; when the host goes offline it publishes NDEATH, ends the session and waits on a new one
 * (next bdSeq); what changes meanwhile is kept and replayed with is_historical after the births.
 * A STATE older than one already seen is ignored. Against a real Mosquitto, the host played by an
 * MQTT.js client publishing retained STATE as a Sparkplug host does.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import {
  infoLines,
  type Received,
  setSimRelay,
  type SparkplugHost,
  sparkplugHost,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-ph";
const HOST = "scada-1";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDEATH = `spBv1.0/${GROUP}/NDEATH/${NODE}`;
const relay = sparkplugDeviceId("sim0", "relayio0");
/**
 * How long the replayed history may take to reach the host after the births: waited for as it
 * arrives, this bound only ends a wait that would never see it (a loaded machine's turns are slow,
 * so it is waitFor's default, not a guess of how fast the replay is).
 */
const REPLAY_WAIT_MS = 10_000;

/** The primary host: reads the group and publishes its STATE (retained, QoS 1). */
async function primaryHost(url: string) {
  return withState(await sparkplugHost(url, GROUP));
}

/** `host` publishing the primary host's STATE (retained, QoS 1). */
function withState(host: SparkplugHost) {
  return {
    ...host,
    /** Sparkplug 3.0: `spBv1.0/STATE/<id>`, JSON. */
    state: async (body: unknown) => {
      await host.client.publishAsync(`spBv1.0/STATE/${HOST}`, JSON.stringify(body), {
        qos: 1,
        retain: true,
      });
    },
    /** Before 3.0: `STATE/<id>`, ONLINE or OFFLINE. */
    legacyState: async (text: string) => {
      await host.client.publishAsync(`STATE/${HOST}`, text, { qos: 1, retain: true });
    },
  };
}

function config(url: string, commands = false) {
  return testConfig({
    runtime: { name: NODE },
    providers: [simProvider("sim0")],
    sparkplug: {
      enabled: true,
      brokerUrl: url,
      groupId: GROUP,
      primaryHostId: HOST,
      reconnectMs: 100,
      commands,
    },
  });
}

async function switchRelay(rt: Kernel, on: boolean): Promise<void> {
  await setSimRelay(rt, on);
  // Kept for later: polled into the history ring (on by default here), noted as not published.
  await waitFor("the change to be kept for later", () => {
    const v = rt.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
    return v?.type === "bool" && v.bool === on && rt.sparkplug!.replayPending;
  });
}

const bdSeqOf = (m: Received) =>
  (m.payload.metrics ?? []).find((x) => x.name === "bdSeq")?.long_value;

/** The relay's metric values with is_historical in messages[from..], after its DBIRTH there. */
function historicalRelay(messages: Received[], from: number): boolean[] {
  const after = messages.slice(from);
  const birth = after.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`);
  if (!birth) return [];
  const alias = (birth.payload.metrics ?? []).find((m) => m.name === "relay_ch3_state")?.alias;
  return after.filter((m) => m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}`)
    .flatMap((m) => m.payload.metrics ?? [])
    .filter((x) => x.alias === alias && x.is_historical === true)
    .map((x) => x.boolean_value as boolean);
}

Deno.test({
  name:
    "births wait for the primary host's STATE online; offline: NDEATH and a new session; stale STATE ignored; data replayed",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await primaryHost(broker.url);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url), { arm: true });
      const node = rt.sparkplug!;
      assert.equal(node.primaryHostOnline, false);
      // A STATE the node cannot read: once it is counted, the node is subscribed and has handled
      // a message after its subscriptions, so births without the host would be out already.
      await host.state({ status: "up" });
      await waitFor(
        "the unreadable STATE to be ignored",
        () => node.counts.hostStatesIgnored === 1,
      );
      assert.ok(node.connected, "connected to the broker");
      assert.equal(node.online, false, "no births while the primary host is not online");
      assert.equal(node.counts.births, 0);
      // (Before the first births no device is born yet: no data is kept, and the births carry
      // the values of the moment. Node metric changes are kept: tests/sparkplug/unborn_estop_test.ts.)

      const t1 = Date.now();
      await host.state({ online: true, timestamp: t1 });
      await waitFor("the births", () => node.online);
      await waitFor("NBIRTH", () => host.messages.find((m) => m.topic === NBIRTH));
      const first = host.messages.findIndex((m) => m.topic === NBIRTH);
      assert.equal(first, host.messages.findIndex((m) => m.topic.includes("/NBIRTH/")));
      assert.equal(bdSeqOf(host.messages[first]!), 0);
      assert.equal(node.primaryHostOnline, true);

      // An older STATE (a late retained message of an earlier host session) changes nothing.
      await host.state({ online: false, timestamp: t1 - 60_000 });
      await waitFor("the stale STATE to be ignored", () => node.counts.hostStatesIgnored === 2);
      assert.ok(node.online);
      assert.ok(!host.messages.some((m) => m.topic === NDEATH));

      // The host's death (3.0: the same timestamp as its birth): NDEATH, a new session, waiting.
      await host.state({ online: false, timestamp: t1 });
      const death = await waitFor(
        "NDEATH",
        () => host.messages.find((m) => m.topic === NDEATH),
      );
      assert.equal(bdSeqOf(death), 0, "the NDEATH of the session that was born");
      await waitFor(
        "a new session waiting for the host",
        () => node.counts.connects === 2 && node.connected && node.counts.hostOfflineDisconnects,
      );
      assert.equal(node.online, false);
      assert.equal(node.primaryHostOnline, false, "the retained STATE says offline");
      const births = node.counts.births;
      await switchRelay(rt, true);
      assert.equal(node.counts.births, births, "no births while the host is offline");

      const marker = host.messages.length;
      await host.state({ online: true, timestamp: t1 + 1 });
      await waitFor("the births again", () => node.online);
      const nbirth = await waitFor(
        "NBIRTH of the new session",
        () => host.messages.slice(marker).find((m) => m.topic === NBIRTH),
      );
      assert.equal(bdSeqOf(nbirth), 1, "the next bdSeq");
      await waitFor(
        "the value kept while the host was offline, replayed",
        () => historicalRelay(host.messages, marker).length >= 1,
      );
      assert.deepEqual(historicalRelay(host.messages, marker), [true]);
      assert.equal(node.counts.storeDropped, 0);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name: "a host before Sparkplug 3.0: plain ONLINE / OFFLINE on STATE/<id> is followed too",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await primaryHost(broker.url);
    let rt: Kernel | null = null;
    try {
      // Retained before the runtime starts: the node reads it on subscribing.
      await host.legacyState("ONLINE");
      rt = await startRuntime(config(broker.url));
      const node = rt.sparkplug!;
      await waitFor("the births", () => node.online);
      await waitFor("NBIRTH", () => host.messages.find((m) => m.topic === NBIRTH));
      await host.legacyState("OFFLINE");
      const death = await waitFor("NDEATH", () => host.messages.find((m) => m.topic === NDEATH));
      assert.equal(bdSeqOf(death), 0);
      await waitFor("a new session", () => node.counts.connects === 2 && node.connected);
      assert.equal(node.online, false);
      const marker = host.messages.length;
      await host.legacyState("ONLINE");
      const nbirth = await waitFor(
        "NBIRTH again",
        () => host.messages.slice(marker).find((m) => m.topic === NBIRTH),
      );
      assert.equal(bdSeqOf(nbirth), 1);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "after the host's death a DCMD to the dead node is refused: no call, nothing published; the NCMD e-stop still acts",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await primaryHost(broker.url);
    let rt: Kernel | null = null;
    try {
      const t1 = Date.now();
      await host.state({ online: true, timestamp: t1 });
      rt = await startRuntime(config(broker.url, true), { arm: true });
      const node = rt.sparkplug!;
      await waitFor("the births", () => node.online);
      await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      await rt.modes.request("MANUAL");
      await setSimRelay(rt, false);

      await host.state({ online: false, timestamp: t1 });
      await waitFor("NDEATH", () => host.messages.find((m) => m.topic === NDEATH));
      await waitFor(
        "a new session waiting for the host",
        () => node.counts.connects === 2 && node.connected && !node.online,
      );
      const marker = host.messages.length;
      const refused = node.counts.commandsRefused;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      await waitFor("the DCMD to be refused", () => node.counts.commandsRefused === refused + 1);
      assert.equal(node.counts.commandsAccepted, 0);
      // A poll after the command would have shown the relay on.
      const polls = rt.cache.device("sim0", "relayio0")!.lastPollMono;
      await waitFor(
        "two more polls",
        () => rt!.cache.device("sim0", "relayio0")!.lastPollMono > polls + 150,
      );
      const v = rt.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
      assert.ok(v?.type === "bool" && v.bool === false, "the relay was not switched");
      assert.ok(
        !host.messages.slice(marker).some((m) => m.topic.includes("/DDATA/")),
        "nothing is published by a node that is not online",
      );

      // The e-stop is still taken from the broker while the node waits.
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/E-Stop", datatype: 11, boolean_value: true },
      ]);
      await waitFor("the e-stop latched", () => rt!.estop.latched);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

/** The node metric `name`'s values with is_historical in NDATA of messages[from..] (by alias). */
function historicalNode(messages: Received[], from: number, name: string): unknown[] {
  const after = messages.slice(from);
  const birth = after.find((m) => m.topic === NBIRTH);
  const alias = (birth?.payload.metrics ?? []).find((m) => m.name === name)?.alias;
  if (alias === undefined) return [];
  return after.filter((m) => m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}`)
    .flatMap((m) => m.payload.metrics ?? [])
    .filter((x) => x.alias === alias && x.is_historical === true)
    .map((x) => x.boolean_value ?? x.string_value);
}

Deno.test({
  name:
    "an e-stop latched and cleared while the primary host is offline reaches the host's history after the births",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await primaryHost(broker.url);
    let rt: Kernel | null = null;
    try {
      const t1 = Date.now();
      await host.state({ online: true, timestamp: t1 });
      rt = await startRuntime(config(broker.url), { arm: true });
      const node = rt.sparkplug!;
      await waitFor("the births", () => node.online);
      await host.state({ online: false, timestamp: t1 });
      await waitFor("NDEATH", () => host.messages.find((m) => m.topic === NDEATH));
      await waitFor("a new session waiting", () => node.counts.connects === 2 && node.connected);

      // While the host is away: the e-stop latches (FAULT), and an operator clears it.
      const latchedAt = Date.now();
      await rt.estop.trigger("while the host is away");
      await waitFor("FAULT", () => rt!.modes.current() === "FAULT");
      // No wait: the node notes the latch in a microtask its bus event queued during trigger(),
      // run before this test goes on; the clear is then a change of its own.
      rt.estop.clear();
      await waitFor("the latch cleared", () => !rt!.estop.latched);

      const marker = host.messages.length;
      await host.state({ online: true, timestamp: t1 + 1 });
      const nbirth = await waitFor(
        "NBIRTH",
        () => host.messages.slice(marker).find((m) => m.topic === NBIRTH),
      );
      const latched = (nbirth.payload.metrics ?? []).find((m) =>
        m.name === "Runtime/Estop Latched"
      );
      assert.equal(latched?.boolean_value, false, "the births carry the state of now");
      await waitFor(
        "the latch and its clearing, replayed",
        () => historicalNode(host.messages, marker, "Runtime/Estop Latched").length >= 2,
        REPLAY_WAIT_MS,
      ).catch(() => {
        throw new Error(
          `the host's history of Runtime/Estop Latched ${REPLAY_WAIT_MS} ms after the births: ${
            JSON.stringify(historicalNode(host.messages, marker, "Runtime/Estop Latched"))
          } (the latch and its clearing while it was away are missing)`,
        );
      });
      assert.deepEqual(historicalNode(host.messages, marker, "Runtime/Estop Latched"), [
        true,
        false,
      ]);
      assert.ok(historicalNode(host.messages, marker, "Runtime/Mode").includes("FAULT"));
      const stamps = host.messages.slice(marker)
        .filter((m) => m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}`)
        .flatMap((m) => m.payload.metrics ?? [])
        .filter((x) => x.is_historical === true)
        .map((x) => Number(x.timestamp));
      assert.ok(
        stamps.every((t) => t >= latchedAt && t < Number(nbirth.payload.timestamp)),
        "each change at its own time, before the births",
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

/**
 * Runs `body` with the runtime of `config(url, commands)` (armed, its lines in `lines`) subscribed
 * but not born: the host has published only an unreadable STATE, which the node ignored. The
 * runtime, the host and the broker are stopped after it, in that order.
 */
async function withBirthsWaiting(
  commands: boolean,
  body: (rt: Kernel, host: ReturnType<typeof withState>, lines: string[]) => Promise<void>,
): Promise<void> {
  const { lines, log } = infoLines();
  await withSparkplugRuntime({
    group: GROUP,
    config: (url) => config(url, commands),
    start: { arm: true, host: { log } },
  }, async (rt, sparkplug) => {
    const host = withState(sparkplug);
    const node = rt.sparkplug!;
    await host.state({ status: "up" });
    await waitFor(
      "the unreadable STATE to be ignored",
      () => node.counts.hostStatesIgnored === 1,
    );
    await body(rt, host, lines);
  });
}

Deno.test({
  name:
    "a Node Control/Rebirth while the births wait for the primary host is ignored and said so, not logged as births published",
  ignore: mosquittoMissing(),
  async fn() {
    await withBirthsWaiting(false, async (rt, host, lines) => {
      const node = rt.sparkplug!;
      // Subscribed (the unreadable STATE handled), not born: the host has said nothing yet.
      assert.equal(node.online, false);

      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
      ]);
      // A message after it on the same connection: once handled, the NCMD was too.
      await host.state({ status: "still up" });
      await waitFor("the second STATE to be ignored", () => node.counts.hostStatesIgnored === 2);
      assert.equal(node.counts.births, 0, "no births before the primary host is online");
      assert.ok(
        !lines.some((l) => l.includes("publishing births")),
        `no line says births are published: ${
          JSON.stringify(lines.filter((l) => /Rebirth/.test(l)))
        }`,
      );
      assert.equal(node.counts.commandsIgnored, 1, "the Rebirth counted as ignored");
      const said = lines.find((l) => l.includes("Node Control/Rebirth") && l.includes("ignored"));
      assert.ok(said, `one line says the Rebirth is ignored: ${JSON.stringify(lines)}`);
      assert.match(said, /not online/);

      // The births come with the host's STATE online, once.
      await host.state({ online: true, timestamp: Date.now() });
      await waitFor("the births", () => node.online);
      assert.equal(node.counts.births, 1);
    });
  },
});

Deno.test({
  name:
    "a DCMD to a device while the first births wait for the primary host is refused as to a node not online, not as a DBIRTH about to go out",
  ignore: mosquittoMissing(),
  async fn() {
    await withBirthsWaiting(true, async (rt, host, lines) => {
      const node = rt.sparkplug!;
      assert.equal(node.online, false, "the births wait for the primary host");

      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      await waitFor("the DCMD to be refused", () => node.counts.commandsRefused === 1);
      assert.equal(node.counts.commandsAccepted, 0);
      const said = lines.find((l) =>
        l.includes("Functions/set_relay_ch3") && l.includes("refused")
      );
      assert.ok(said, `the refusal is logged: ${JSON.stringify(lines)}`);
      assert.match(said, /the node is not online/, said);
      assert.doesNotMatch(said, /about to go out/, said);
    });
  },
});

Deno.test({
  name:
    "commands to a node whose NBIRTH is over max_message_bytes say it cannot come online, not that its births wait for the primary host",
  ignore: mosquittoMissing(),
  async fn() {
    // An edge node id long enough that the NBIRTH is over the smallest bound (1024).
    const longNode = "n".repeat(900);
    const { lines, log } = infoLines();
    await withSparkplugRuntime({
      group: GROUP,
      config: (url) => {
        const c = config(url, true);
        return {
          ...c,
          sparkplug: { ...c.sparkplug, edgeNodeId: longNode, maxMessageBytes: 1024 },
        };
      },
      start: { arm: true, host: { log } },
    }, async (rt, sparkplug) => {
      const host = withState(sparkplug);
      const node = rt.sparkplug!;
      await host.state({ online: true, timestamp: Date.now() });
      await waitFor("the primary host online", () => node.primaryHostOnline === true);
      await waitFor(
        "the NBIRTH's size to be said",
        () => lines.some((l) => l.includes("the node cannot come online")),
      );
      assert.equal(node.online, false);
      assert.equal(node.connected, true);

      await host.send(`spBv1.0/${GROUP}/NCMD/${longNode}`, [
        { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
      ]);
      await host.send(`spBv1.0/${GROUP}/DCMD/${longNode}/${relay}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      await waitFor("the Rebirth to be ignored", () => node.counts.commandsIgnored === 1);
      await waitFor("the DCMD to be refused", () => node.counts.commandsRefused === 1);
      assert.equal(node.counts.births, 0);
      const ignored = lines.find((l) =>
        l.includes("Node Control/Rebirth") && l.includes("ignored")
      );
      const refused = lines.find((l) =>
        l.includes("Functions/set_relay_ch3") && l.includes("refused")
      );
      for (const said of [ignored, refused]) {
        assert.ok(said, JSON.stringify(lines));
        // The primary host is online and the broker connected: neither is waited for.
        assert.doesNotMatch(said, /waiting for the primary host or the broker/, said);
        assert.doesNotMatch(said, /births follow/, said);
        assert.match(
          said,
          /cannot come online: its NBIRTH is \d+ bytes, over sparkplug\.max_message_bytes 1024/,
          said,
        );
        assert.match(
          said,
          /max_message_bytes 1024 \(a shorter mode name \(IDLE, not MANUAL\) or smaller alarm or provider counts make the NBIRTH fit; else, at a restart, shorten group_id\/edge_node_id or raise the bound\)"?$/,
          said,
        );
      }
    });
  },
});
