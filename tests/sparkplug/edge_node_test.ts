/**
 * The runtime as a Sparkplug B edge node against a real Mosquitto (issue 38): births list every
 * device and signal, data by exception, Rebirth without reconnecting, NDEATH from the broker when
 * the runtime is killed. Payloads are decoded with the generated codec and, for the births read
 * through `mosquitto_sub`, also with protobufjs over Eclipse Tahu's schema.
 */
import assert from "node:assert/strict";
import protobuf from "protobufjs";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { SIM_MAIN, SIM_YAML, simProvider, testConfig } from "../helpers/sim_config.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { parseSparkplugProto } from "../../scripts/gen_proto_module.ts";
import { encode, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { type Received, sparkplugHost, sparkplugRuntimeYaml } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-test";

function sparkplugConfig(url: string, keepAliveS = 30) {
  return testConfig({
    runtime: { name: NODE },
    providers: [simProvider("sim0")],
    sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, keepAliveS, reconnectMs: 200 },
  });
}

/** Devices of examples/providers/sim/sim.yaml (the births a subscriber waits for: one more). */
const SIM_DEVICES = 5;

const metricNames = (r: Received) => (r.payload.metrics ?? []).map((m) => m.name as string);

Deno.test({
  name:
    "births list every device and signal after connect; a subscriber no one here wrote reads them",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const raw = await broker.subscribeRaw(`spBv1.0/${GROUP}/+/${NODE}/#`, 1 + SIM_DEVICES);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(sparkplugConfig(broker.url));
      const devices = rt.inventory.devices();
      assert.equal(devices.length, SIM_DEVICES);
      const births = await waitFor("NBIRTH and one DBIRTH per device", () => {
        const b = host.messages.filter((m) => /\/(NBIRTH|DBIRTH)\//.test(m.topic));
        return b.length >= 1 + devices.length ? b : null;
      });
      const nbirth = births[0]!;
      assert.equal(nbirth.topic, `spBv1.0/${GROUP}/NBIRTH/${NODE}`);
      assert.equal(nbirth.payload.seq, 0);
      const nb = Object.fromEntries((nbirth.payload.metrics ?? []).map((m) => [m.name, m]));
      assert.equal(nb.bdSeq?.long_value, 0);
      assert.equal(nb["Node Control/Rebirth"]?.boolean_value, false);
      assert.equal(nb["Runtime/Mode"]?.string_value, "IDLE");
      assert.equal(nb["Runtime/Estop Latched"]?.boolean_value, false);
      assert.equal(nb["Providers/Up"]?.int_value, 1);
      assert.equal(nb["Providers/Down"]?.int_value, 0);
      assert.equal(nb["Alarms/Active"]?.int_value, 0);
      for (const d of devices) {
        const id = sparkplugDeviceId(d.providerId, d.deviceId);
        const dbirth = births.find((b) => b.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${id}`);
        assert.ok(dbirth, `no DBIRTH for ${id}`);
        const caps = rt.inventory.capabilities(d.providerId, d.deviceId)!;
        const names = metricNames(dbirth);
        for (const s of caps.signals) assert.ok(names.includes(s.signalId), `${id}: ${s.signalId}`);
        for (const f of caps.functions) assert.ok(names.includes(`Functions/${f.name}`));
        // Every signal metric has a datatype, an alias and a Quality property.
        for (const m of dbirth.payload.metrics ?? []) {
          assert.ok(typeof m.datatype === "number" && typeof m.alias === "number", String(m.name));
          assert.ok((m.properties as { keys: string[] } | undefined)?.keys.length, String(m.name));
        }
      }
      // Sequence numbers run on from the NBIRTH's 0.
      assert.deepEqual(births.map((b) => b.payload.seq), births.map((_, i) => i));

      // The same births through mosquitto_sub, decoded by protobufjs from Tahu's schema.
      const viaSub = await raw.messages;
      assert.equal(viaSub.length, 1 + SIM_DEVICES);
      const Payload = protobuf.Root.fromJSON(
        (await parseSparkplugProto()) as protobuf.INamespace,
      ).lookupType("org.eclipse.tahu.protobuf.Payload");
      const first = Payload.toObject(Payload.decode(viaSub[0]!.payload), { longs: Number }) as {
        metrics: Array<{ name: string; longValue?: number; long_value?: number }>;
      };
      assert.equal(viaSub[0]!.topic, `spBv1.0/${GROUP}/NBIRTH/${NODE}`);
      assert.deepEqual(first.metrics.map((m) => m.name), metricNames(nbirth));
      for (const msg of viaSub.slice(1)) {
        const same = births.find((b) => b.topic === msg.topic)!;
        assert.deepEqual(msg.payload, same.raw, msg.topic);
      }
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "a changed signal reaches DDATA (by alias, with its quality), and Rebirth births again without reconnecting",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(sparkplugConfig(broker.url), { arm: true });
      const relay = sparkplugDeviceId("sim0", "relayio0");
      const dbirth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const birthMetric = (dbirth.payload.metrics ?? []).find((m) => m.name === "relay_ch3_state")!;
      assert.equal(birthMetric.boolean_value, false);
      await rt.router.call({
        providerId: "sim0",
        deviceId: "relayio0",
        functionName: "set_relay_ch3",
        args: { enabled: { type: "bool", bool: true } },
        origin: "manual",
      });
      const ddata = await waitFor(
        "DDATA with relay_ch3_state true",
        () =>
          host.messages.find((m) =>
            m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}` &&
            (m.payload.metrics ?? []).some((x) =>
              x.alias === birthMetric.alias && x.boolean_value === true
            )
          ),
      );
      const metric = (ddata.payload.metrics ?? []).find((x) => x.alias === birthMetric.alias)!;
      assert.equal(metric.name, undefined, "DDATA names metrics by alias only");
      assert.deepEqual((metric.properties as { keys: string[] }).keys, ["Quality"]);
      // By exception: a signal that did not change is not in any DDATA of relayio0.
      const untouched = (dbirth.payload.metrics ?? []).find((m) => m.name === "relay_ch1_state")!;
      const relayData = host.messages.filter((m) =>
        m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}`
      );
      assert.ok(
        relayData.every((m) => !(m.payload.metrics ?? []).some((x) => x.alias === untouched.alias)),
      );

      // Node Control/Rebirth: NBIRTH and every DBIRTH again on the same connection.
      const before = host.messages.length;
      const connects = rt.sparkplug!.counts.connects;
      await host.publish(
        `spBv1.0/${GROUP}/NCMD/${NODE}`,
        encode({
          timestamp: Date.now(),
          metrics: [{ name: "Node Control/Rebirth", datatype: 11, boolean_value: true }],
        }),
      );
      const rebirths = await waitFor("births after Rebirth", () => {
        const b = host.messages.slice(before).filter((m) => /\/(NBIRTH|DBIRTH)\//.test(m.topic));
        return b.length >= 1 + SIM_DEVICES ? b : null;
      });
      assert.equal(rebirths[0]!.payload.seq, 0);
      assert.equal(
        (rebirths[0]!.payload.metrics ?? []).find((m) => m.name === "bdSeq")?.long_value,
        0,
        "the same connection keeps its bdSeq",
      );
      assert.equal(rt.sparkplug!.counts.connects, connects, "no reconnect");
      // A mode change is an NDATA of Runtime/Mode.
      await rt.modes.request("IDLE");
      await waitFor(
        "NDATA with the mode",
        () =>
          host.messages.find((m) =>
            m.topic === `spBv1.0/${GROUP}/NDATA/${NODE}` &&
            (m.payload.metrics ?? []).some((x) => x.string_value === "IDLE")
          ),
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name: "stopping the runtime publishes NDEATH with the connection's bdSeq",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(sparkplugConfig(broker.url));
      await waitFor("NBIRTH", () => host.messages.find((m) => m.topic.includes("/NBIRTH/")));
      await rt.stop();
      const death = await waitFor(
        "NDEATH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/NDEATH/${NODE}`),
      );
      assert.deepEqual(
        (death.payload.metrics ?? []).map((m) => [m.name, m.long_value]),
        [["bdSeq", 0]],
      );
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

/** The runtime YAML of the kill tests: one sim, Sparkplug on `brokerUrl`, data under `dir`. */
function killTestYaml(dir: string, port: number, brokerUrl: string, keepAliveS: number): string {
  return sparkplugRuntimeYaml({
    node: NODE,
    dir,
    port,
    brokerUrl,
    group: GROUP,
    simArgs: `run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_YAML}`,
    pollIntervalMs: 100,
    sparkplug: [`keep_alive_s: ${keepAliveS}`],
  });
}

function bdSeqOf(m: Received): number | undefined {
  const v = (m.payload.metrics ?? []).find((x) => x.name === "bdSeq")?.long_value;
  return v === undefined ? undefined : Number(v);
}

Deno.test({
  name:
    "a runtime restarted at once after kill -9 births with the next bdSeq: the crashed connection's NDEATH does not match it",
  ignore: mosquittoMissing(),
  async fn() {
    // systemd's Restart=on-failure brings the runtime back within the broker's 1.5 x keep-alive:
    // the broker publishes the old connection's will (NDEATH, its bdSeq) when the new one takes
    // the client id over. Had the new NBIRTH the same bdSeq, a host would mark the live node dead.
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const dir = await Deno.makeTempDir({ prefix: "sparkplug-restart-" });
    const start = (name: string) =>
      startRuntimeWithConfigOnFreePort(
        `${dir}/${name}.yaml`,
        (port) => killTestYaml(dir, port, broker.url, 60),
      );
    let rt = await start("first");
    try {
      const nbirths = () => host.messages.filter((m) => m.topic.includes("/NBIRTH/"));
      await waitFor("first NBIRTH", () => nbirths().length === 1);
      assert.equal(bdSeqOf(nbirths()[0]!), 0);
      Deno.kill(rt.pid, "SIGKILL");
      await rt.stop();
      rt = await start("second");
      await waitFor("second NBIRTH", () => nbirths().length === 2);
      assert.equal(bdSeqOf(nbirths()[1]!), 1, "the next bdSeq after the crashed process's");
      const death = await waitFor(
        "the crashed connection's NDEATH (published at the takeover)",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/NDEATH/${NODE}`),
      );
      assert.equal(bdSeqOf(death), 0, "the NDEATH is the old connection's: a host discards it");
      assert.equal(await Deno.readTextFile(`${dir}/data/sparkplug/bdseq`), "1\n");
    } finally {
      await rt.stop();
      await host.close();
      await broker.dispose();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});

Deno.test({
  name:
    "kill -9 of the runtime: the broker publishes its NDEATH (the will) within 1.5 x keep-alive",
  ignore: mosquittoMissing(),
  async fn() {
    const KEEP_ALIVE_S = 5;
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const dir = await Deno.makeTempDir({ prefix: "sparkplug-kill-" });
    const rt = await startRuntimeWithConfigOnFreePort(
      `${dir}/runtime.yaml`,
      (port) => killTestYaml(dir, port, broker.url, KEEP_ALIVE_S),
    );
    try {
      await waitFor("NBIRTH", () => host.messages.find((m) => m.topic.includes("/NBIRTH/")));
      Deno.kill(rt.pid, "SIGKILL");
      // The broker's own bound (MQTT 3.1.1 sec. 3.1.2.10): 1.5 x keep-alive after the last packet.
      const death = await waitFor(
        "NDEATH published by the broker",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/NDEATH/${NODE}`),
        KEEP_ALIVE_S * 1500 + 1000,
      );
      assert.deepEqual(
        (death.payload.metrics ?? []).map((m) => [m.name, m.long_value]),
        [["bdSeq", 0]],
      );
    } finally {
      await rt.stop();
      await host.close();
      await broker.dispose();
      await Deno.remove(dir, { recursive: true }).catch(() => {});
    }
  },
});
