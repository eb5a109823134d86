/**
 * A bdSeq that cannot be recorded (the real bdSeq file under a data_dir whose `sparkplug` folder
 * cannot be made: a file stands where it should be) is WARNed once per failing spell, not at
 * every reconnect; the save that works again says so once, with how many failed. Against a real
 * Mosquitto through the MQTT.js adapter, the broker paused and resumed for each reconnect.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { bdSeqFile } from "../../src/app/kernel.ts";
import { connectMqttJs, systemClock } from "../../src/host/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { SparkplugEdgeNode } from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-bdseq-fails";

Deno.test({
  name:
    "SparkplugEdgeNode WARNs a bdSeq that cannot be recorded once per failing spell, and once when it is recorded again",
  ignore: mosquittoMissing(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "bdseq-fails-" });
    const folder = `${dir}/sparkplug`;
    const path = `${folder}/bdseq`;
    const broker = await Mosquitto.start();
    const { log, lines } = capturingLogger({ level: "debug" });
    const inventory = {
      providers: () => [],
      provider: () => undefined,
      devices: () => [],
      capabilities: () => undefined,
      onChange: () => () => {},
      onAvailability: () => () => {},
    } as unknown as InventoryReader;
    const node = new SparkplugEdgeNode({
      config: {
        ...testConfig().sparkplug,
        enabled: true,
        brokerUrl: broker.url,
        groupId: GROUP,
        reconnectMs: 100,
      },
      edgeNodeId: NODE,
      clientId: `${GROUP}-${NODE}`,
      connect: connectMqttJs,
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
      bdSeqStore: bdSeqFile(path),
      runtimeVersion: "test",
      clock: systemClock,
      log,
    });
    const notRecorded = (level: string) =>
      lines.filter((l) => l.startsWith(level) && l.includes("could not record bdSeq"));
    const recordedAgain = () => lines.filter((l) => l.includes("recorded again"));
    /** The broker goes away and comes back: the node reconnects with the next bdSeq. */
    const reconnect = async (bdSeq: number) => {
      await broker.pause();
      await waitFor("the connection lost", () => !node.connected);
      await broker.resume();
      await waitFor(
        `connected again (bdSeq ${bdSeq})`,
        () => node.connected && node.bdSeq === bdSeq,
      );
    };
    try {
      await node.start();
      await waitFor("connected", () => node.connected);
      assert.equal(await Deno.readTextFile(path), "0\n");

      // The disk refuses: a file where the folder should be.
      await Deno.remove(folder, { recursive: true });
      await Deno.writeTextFile(folder, "");
      for (const bdSeq of [1, 2, 3]) await reconnect(bdSeq);
      assert.equal(notRecorded("WARN").length, 1, lines.join("\n"));
      assert.match(notRecorded("WARN")[0]!, /bdSeq 1 /);
      assert.equal(notRecorded("DEBUG").length, 2, lines.join("\n"));
      assert.equal(recordedAgain().length, 0);

      // Writing works again: one line says so, with how many saves failed.
      await Deno.remove(folder);
      await reconnect(4);
      assert.equal(await Deno.readTextFile(path), "4\n");
      assert.equal(recordedAgain().length, 1, lines.join("\n"));
      assert.match(
        recordedAgain()[0]!,
        /^INFO .*bdSeq 4 recorded again \(3 save\(s\) failed before\)/,
      );

      // A later spell is said again.
      await Deno.remove(folder, { recursive: true });
      await Deno.writeTextFile(folder, "");
      await reconnect(5);
      assert.equal(notRecorded("WARN").length, 2, lines.join("\n"));
    } finally {
      await node.stop();
      await broker.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
