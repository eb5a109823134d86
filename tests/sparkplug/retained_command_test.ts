/**
 * Commands are events, not state: Sparkplug 3.0 publishes NCMD and DCMD with retain false. A
 * command a host left retained on the broker is handed to every new subscription of the node, at
 * every reconnect: the edge node ignores a command delivered with the MQTT retain flag set -- the
 * e-stop too, which would otherwise latch again after every network blip -- and WARNs once per
 * topic per connection. Against a real Mosquitto holding the retained messages.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { afterPolls, startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { infoLines, sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-retained";
const relay = sparkplugDeviceId("sim0", "relayio0");
const DCMD = `spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`;
const NCMD = `spBv1.0/${GROUP}/NCMD/${NODE}`;
const ESTOP = { name: "Node Control/E-Stop", datatype: 11, boolean_value: true };

Deno.test({
  name:
    "a retained NCMD e-stop or DCMD met at subscription is ignored at every connection, WARNed once per topic",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP, { reconnectPeriod: 100 });
    let rt: Kernel | null = null;
    try {
      // A host that (against Sparkplug) left its commands retained on the broker.
      await host.send(NCMD, [ESTOP, {
        name: "Node Control/Rebirth",
        datatype: 11,
        boolean_value: true,
      }], {
        retain: true,
      });
      await host.send(DCMD, [{
        name: "Functions/set_relay_ch3",
        datatype: 11,
        boolean_value: true,
      }], {
        retain: true,
      });
      const { lines, log } = infoLines();
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, commands: true },
        }),
        { arm: true, host: { log } },
      );
      const node = rt.sparkplug!;
      const relayOn = () => {
        const v = rt!.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
        return v?.type === "bool" && v.bool;
      };
      const warned = () =>
        lines.flatMap((l) => /^WARN .*retained command on "([^"]+)" ignored/.exec(l)?.[1] ?? [])
          .sort();

      // The retained copies come with the subscription, before the births.
      await waitFor("the births", () => node.online);
      await afterPolls(rt, "sim0/relayio0", 3, "3 polls after the retained commands");
      assert.equal(rt.estop.latched, false, "the retained e-stop latched the runtime");
      assert.equal(relayOn(), false, "the retained DCMD moved the relay");
      assert.equal(node.counts.commandsAccepted, 0);
      assert.equal(node.counts.commandsIgnored, 2, "one per retained message");
      assert.deepEqual(warned(), [DCMD, NCMD].sort(), lines.join("\n"));

      // The connection drops and comes back: the broker hands the copies again; ignored again.
      const connects = node.counts.connects;
      await broker.pause();
      await broker.resume();
      await waitFor("the node reconnected", () => node.counts.connects > connects);
      await waitFor("both met again", () => node.counts.commandsIgnored >= 4);
      await afterPolls(rt, "sim0/relayio0", 3, "3 polls after the reconnect");
      assert.equal(rt.estop.latched, false, "the retained e-stop latched at the reconnect");
      assert.equal(relayOn(), false);
      assert.deepEqual(warned(), [DCMD, DCMD, NCMD, NCMD].sort(), "once per topic per connection");

      // A live e-stop is taken as ever.
      await waitFor("the host reconnected", () => host.client.connected);
      await host.send(NCMD, [ESTOP]);
      await waitFor("the live e-stop latched", () => rt!.estop.latched);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
