/**
 * A primary host upgraded to Sparkplug 3.0 leaves behind the retained `STATE/<id>` `OFFLINE` its
 * earlier version published (its will, or its last word at shutdown): nobody clears it, and the
 * broker hands it to every new subscription, next to the host's retained 3.0 STATE online. The
 * node must follow the 3.0 STATE then, not take the stale legacy one for the host leaving (which
 * would end every session right after its births, for ever). Against a real Mosquitto.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-legacy";
const HOST = "scada-1";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDEATH = `spBv1.0/${GROUP}/NDEATH/${NODE}`;

Deno.test({
  name:
    "a stale retained legacy STATE OFFLINE next to the host's 3.0 STATE online does not end the node's sessions",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let rt: Kernel | null = null;
    try {
      // The host's version before 3.0 left this; the 3.0 host now says online.
      await host.client.publishAsync(`STATE/${HOST}`, "OFFLINE", { qos: 1, retain: true });
      await host.client.publishAsync(
        `spBv1.0/STATE/${HOST}`,
        JSON.stringify({ online: true, timestamp: Date.now() }),
        { qos: 1, retain: true },
      );
      rt = await startRuntime(testConfig({
        runtime: { name: NODE },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: broker.url,
          groupId: GROUP,
          primaryHostId: HOST,
          reconnectMs: 100,
        },
      }));
      const node = rt.sparkplug!;
      await waitFor("NBIRTH", () => host.messages.some((m) => m.topic === NBIRTH));
      // A Rebirth asked for after both retained STATEs were delivered: answered on the same
      // session, no NDEATH between.
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/Rebirth", datatype: 11, boolean_value: true },
      ]);
      await waitFor(
        "a second NBIRTH or an NDEATH",
        () =>
          host.messages.filter((m) => m.topic === NBIRTH).length >= 2 ||
          host.messages.some((m) => m.topic === NDEATH),
      );
      assert.deepEqual(
        host.messages.filter((m) => m.topic === NDEATH).map((m) => m.topic),
        [],
        "no NDEATH",
      );
      assert.equal(node.counts.connects, 1);
      assert.equal(node.online, true);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
