/**
 * Store and forward (issue 38, slice 3) without the on-board history: while the broker is
 * unreachable the edge node keeps the data it could not publish, bounded in count and bytes (the oldest dropped, counted and WARNed
 * once per stretch), and after reconnecting publishes the births, then the kept data in order,
 * every metric with is_historical.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import {
  hostBackConnect,
  infoLines,
  reconnectingHost,
  setSimRelay,
} from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { Config } from "../../src/config/mod.ts";

const GROUP = "lab";
const NODE = "rig-sf";

/** History off: the queue is the store (with history on, the ring is: store_forward_ring_test). */
function config(url: string, storeForward: Config["sparkplug"]["storeForward"]): Config {
  return testConfig({
    runtime: { name: NODE },
    history: { enabled: false },
    providers: [simProvider("sim0")],
    sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, reconnectMs: 100, storeForward },
  });
}

async function switchRelay(rt: Kernel, on: boolean): Promise<void> {
  await setSimRelay(rt, on);
}

const relay = sparkplugDeviceId("sim0", "relayio0");
const RELAY_DDATA = `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}`;

Deno.test({
  name:
    "data changed while the broker is down is replayed after the births, in order, with is_historical",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await reconnectingHost(broker.url, GROUP);
    // The node's writes after the restart wait for the host to be back (hostBackConnect).
    const writes = hostBackConnect(host);
    const { lines, log } = infoLines();
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { maxMessages: 10000, maxBytes: 16777216 }), {
        arm: true,
        host: { log, mqttConnect: writes.connect },
      });
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = (birth.payload.metrics ?? []).find((m) => m.name === "relay_ch3_state")!
        .alias;
      await broker.pause();
      await waitFor("the edge node to see the broker gone", () => !rt!.sparkplug!.online);
      writes.holdUntilHostBack();
      // On, off, on while offline: three changes of the relay, each a DDATA kept.
      for (const on of [true, false, true]) {
        await switchRelay(rt, on);
        await waitFor(
          "the change to be kept",
          () =>
            rt!.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value?.type === "bool" &&
            (rt!.cache.signal("sim0", "relayio0", "relay_ch3_state")!.value as { bool: boolean })
                .bool === on,
        );
      }
      const marker = host.messages.length;
      await broker.resume();
      const replayed = await waitFor("three historical relay_ch3_state values", () => {
        const values = host.messages.slice(marker).filter((m) => m.topic === RELAY_DDATA)
          .flatMap((m) => (m.payload.metrics ?? []).filter((x) => x.alias === alias));
        const historical = values.filter((x) => x.is_historical === true);
        return historical.length >= 3 ? historical : null;
      }, 20000);
      assert.deepEqual(replayed.slice(0, 3).map((x) => x.boolean_value), [true, false, true]);
      const after = host.messages.slice(marker);
      const nbirth = after.findIndex((m) => m.topic === `spBv1.0/${GROUP}/NBIRTH/${NODE}`);
      const firstHistorical = after.findIndex((m) =>
        (m.payload.metrics ?? []).some((x) => x.is_historical === true)
      );
      assert.ok(nbirth >= 0 && nbirth < firstHistorical, "births come before the replay");
      assert.equal(
        (after[nbirth]!.payload.metrics ?? []).find((m) => m.name === "bdSeq")?.long_value,
        1,
        "the new connection has the next bdSeq",
      );
      assert.ok(rt.sparkplug!.counts.replayed >= 3);
      assert.equal(rt.sparkplug!.counts.storeDropped, 0);
      assert.ok(!lines.some((l) => l.includes("store-and-forward full")), lines.join("\n"));
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});

Deno.test({
  name: "beyond its bound the store drops the oldest data, counts it and WARNs once",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await reconnectingHost(broker.url, GROUP);
    // The node's writes after the restart wait for the host to be back (hostBackConnect).
    const writes = hostBackConnect(host);
    const { lines, log } = infoLines();
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, { maxMessages: 2, maxBytes: 16777216 }), {
        arm: true,
        host: { log, mqttConnect: writes.connect },
      });
      await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      await broker.pause();
      await waitFor("the edge node to see the broker gone", () => !rt!.sparkplug!.online);
      writes.holdUntilHostBack();
      let lastSwitchAt = 0;
      for (const on of [true, false, true, false, true]) {
        const stored = rt.sparkplug!.counts.stored;
        lastSwitchAt = Date.now();
        await switchRelay(rt, on);
        await waitFor("the change to be kept", () => rt!.sparkplug!.counts.stored > stored);
      }
      assert.ok(rt.sparkplug!.counts.storeDropped >= 3);
      const warns = lines.filter((l) => l.includes("store-and-forward full"));
      assert.equal(warns.length, 1, lines.join("\n"));
      assert.match(warns[0]!, /^WARN /);
      const marker = host.messages.length;
      await broker.resume();
      await waitFor("the replay", () => rt!.sparkplug!.counts.replayed >= 1, 20000);
      await waitFor(
        "the births and the replay to arrive",
        () =>
          host.messages.slice(marker).some((m) =>
            (m.payload.metrics ?? []).some((x) => x.is_historical === true)
          ),
      );
      // What was kept is at most the bound, and the newest: stored after the last switch began
      // (the sim's other devices keep publishing too, so which devices they are is not fixed).
      const historical = host.messages.slice(marker).filter((m) =>
        (m.payload.metrics ?? []).some((x) => x.is_historical === true)
      );
      assert.ok(historical.length >= 1 && historical.length <= 2, String(historical.length));
      for (const m of historical) {
        assert.ok((m.payload.timestamp ?? 0) >= lastSwitchAt, "an old message survived the bound");
        assert.ok((m.payload.metrics ?? []).every((x) => x.is_historical === true));
      }
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
