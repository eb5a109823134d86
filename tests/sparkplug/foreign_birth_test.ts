/**
 * Two clients publishing as one edge node, each with its own MQTT client id (a configuration
 * copied to the next machine with its `runtime.name` and a `sparkplug.client_id` of its own, or
 * another vendor's edge node given the same id): the broker closes neither, and a host sees one
 * node born again and again while its NCMD/DCMD reach both. Nothing said so. The node subscribes
 * to its own NBIRTH topic: an NBIRTH it did not publish is counted (foreignBirths,
 * runtime_sparkplug_foreign_births_total) and the first WARNed. Its own NBIRTHs (each Rebirth, each
 * reconnect with its next bdSeq) and a retained copy on that topic are not. Runtimes on a real
 * Mosquitto.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { encode } from "../../src/sparkplug/mod.ts";
import { infoLines, sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-twin";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NCMD = `spBv1.0/${GROUP}/NCMD/${NODE}`;
const FOREIGN = /^WARN .*sparkplug: another client published an NBIRTH as this edge node/;

const sparkplug = (url: string, clientId: string) => ({
  enabled: true,
  brokerUrl: url,
  groupId: GROUP,
  clientId,
  commands: true,
  reconnectMs: 100,
});

Deno.test({
  name:
    "SparkplugEdgeNode: a second runtime with the same edge node id and its own client id is counted and WARNed once by the node that hears its NBIRTH",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const rts: Kernel[] = [];
    const a = infoLines();
    const b = infoLines();
    try {
      rts.push(
        await startRuntime(
          testConfig({
            runtime: { name: NODE },
            providers: [simProvider("sim0")],
            sparkplug: sparkplug(broker.url, "machine-a"),
          }),
          { host: { log: a.log } },
        ),
      );
      await waitFor("the first runtime's births", () => rts[0]!.sparkplug!.online);
      rts.push(
        await startRuntime(
          testConfig({
            runtime: { name: NODE },
            providers: [simProvider("sim0")],
            sparkplug: sparkplug(broker.url, "machine-b"),
          }),
          { host: { log: b.log } },
        ),
      );
      await waitFor("the second runtime's births", () => rts[1]!.sparkplug!.online);
      const warned = await waitFor(
        "the first runtime's WARN",
        () => a.lines.find((x) => FOREIGN.test(x)),
        20_000,
      );
      assert.match(warned, /group "lab", edge node "rig-twin"/);
      assert.match(warned, /runtime_sparkplug_foreign_births_total/);
      assert.ok(rts[0]!.sparkplug!.counts.foreignBirths >= 1);
      // Its own connection is untouched: the broker closed neither client.
      assert.equal(rts[0]!.sparkplug!.counts.connects, 1);
      // Once: a Rebirth of the second runtime is counted, not said again.
      const before = rts[0]!.sparkplug!.counts.foreignBirths;
      const host = await sparkplugHost(broker.url, GROUP);
      try {
        await host.send(NCMD, [{
          name: "Node Control/Rebirth",
          datatype: 11,
          boolean_value: true,
        }]);
        await waitFor(
          "the Rebirths heard",
          () => rts[0]!.sparkplug!.counts.foreignBirths > before ? true : null,
        );
      } finally {
        await host.close();
      }
      assert.equal(a.lines.filter((x) => FOREIGN.test(x)).length, 1, a.lines.join("\n"));
    } finally {
      for (const rt of rts) await rt.stop();
      await broker.dispose();
    }
  },
});

Deno.test({
  name:
    "SparkplugEdgeNode: its own NBIRTHs (a Rebirth, a reconnect with the next bdSeq) and a retained NBIRTH on its topic are not another client's",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP, { reconnectPeriod: 100 });
    const { lines, log } = infoLines();
    let rt: Kernel | null = null;
    try {
      // A birth left retained on the broker (Sparkplug publishes births with retain false): handed
      // to the node's subscription at every connection.
      await host.client.publishAsync(
        NBIRTH,
        Buffer.from(encode({
          timestamp: Date.now(),
          seq: 0,
          metrics: [{ name: "bdSeq", datatype: 8, long_value: 201 }],
        })),
        { qos: 1, retain: true },
      );
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          sparkplug: sparkplug(broker.url, "machine-a"),
        }),
        { host: { log } },
      );
      const node = rt.sparkplug!;
      await waitFor("the births", () => node.online);
      const nbirths = () => host.messages.filter((m) => m.topic === NBIRTH).length;
      const refusedThen = async () => {
        // A command after: the broker hands the node its own NBIRTH's copy before it.
        const refused = node.counts.commandsRefused;
        await host.send(NCMD, [{
          name: "Node Control/Nothing",
          datatype: 11,
          boolean_value: true,
        }]);
        await waitFor("the command refused", () => node.counts.commandsRefused > refused);
      };
      const seen = nbirths();
      await host.send(NCMD, [{ name: "Node Control/Rebirth", datatype: 11, boolean_value: true }]);
      await waitFor("the Rebirth", () => nbirths() > seen);
      await refusedThen();
      // The broker goes and comes back: a new connection, the next bdSeq, births again.
      const connects = node.counts.connects;
      await broker.pause();
      await broker.resume();
      await waitFor("the node back", () => node.counts.connects > connects && node.online, 20_000);
      await waitFor("the host back", () => host.client.connected);
      await refusedThen();
      await host.send(NCMD, [{ name: "Node Control/Rebirth", datatype: 11, boolean_value: true }]);
      await refusedThen();
      assert.equal(node.counts.foreignBirths, 0, lines.join("\n"));
      assert.deepEqual(lines.filter((x) => FOREIGN.test(x)), []);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
