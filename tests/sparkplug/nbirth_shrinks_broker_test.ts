/**
 * An NBIRTH over `sparkplug.max_message_bytes` when the births are due keeps the node from coming
 * online (ERROR once, connected without births). Its size on a connection depends on the node
 * metrics' values alone (the mode's name, the counts): a change that brings it within the bound
 * is measured again and the births follow then, said at INFO -- before, nothing measured it again
 * and the node stayed offline until a reconnect. The opposite (a node online whose NBIRTH grows)
 * stays online on its births (tests/sparkplug/max_message_bytes_test.ts). Against a real
 * Mosquitto whose max_packet_size is the same bound, and the simulated provider.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { infoLines, sparkplugHost } from "../helpers/sparkplug_host.ts";
import { mqttPacketBytes } from "../../src/sparkplug/mod.ts";
import type { Config } from "../../src/config/mod.ts";

const GROUP = "lab";
const NODE = "rig-shrink";
const HOST = "scada-1";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDATA = `spBv1.0/${GROUP}/NDATA/${NODE}`;
const NDEATH = `spBv1.0/${GROUP}/NDEATH/${NODE}`;
const MODE = "Runtime/Mode";

function config(
  brokerUrl: string,
  o: { maxMessageBytes?: number; primaryHostId?: string },
): Config {
  return testConfig({
    runtime: { name: NODE },
    providers: [simProvider("sim0")],
    sparkplug: { enabled: true, brokerUrl, groupId: GROUP, reconnectMs: 100, ...o },
  });
}

/** The packet bytes of the node's NBIRTH in mode IDLE, measured on a node without a bound. */
async function nbirthBytesIdle(): Promise<number> {
  const broker = await Mosquitto.start();
  const host = await sparkplugHost(broker.url, GROUP);
  const rt = await startRuntime(config(broker.url, {}));
  try {
    const nbirth = await waitFor("NBIRTH", () => host.messages.find((m) => m.topic === NBIRTH));
    assert.equal(nbirth.payload.metrics?.find((m) => m.name === MODE)?.string_value, "IDLE");
    return mqttPacketBytes(NBIRTH, nbirth.raw.length, 0);
  } finally {
    await rt.stop();
    await host.close();
    await broker.dispose();
  }
}

Deno.test({
  name:
    "SparkplugEdgeNode: a node whose NBIRTH was over max_message_bytes comes online once a mode change shrinks it within the bound",
  ignore: mosquittoMissing(),
  async fn() {
    // Mode IDLE fits the bound exactly; MANUAL, two bytes longer, does not.
    const idle = await nbirthBytesIdle();
    const bound = idle;
    const broker = await Mosquitto.start({ maxPacketSize: bound });
    const host = await sparkplugHost(broker.url, GROUP);
    const { lines, log } = infoLines();
    const rt = await startRuntime(
      config(broker.url, { maxMessageBytes: bound, primaryHostId: HOST }),
      { host: { log } },
    );
    const of = (topic: string) => host.messages.filter((m) => m.topic === topic);
    try {
      const node = rt.sparkplug!;
      await rt.modes.request("MANUAL");
      // The births are due now, in mode MANUAL: over the bound.
      await host.client.publishAsync(
        `spBv1.0/STATE/${HOST}`,
        JSON.stringify({ online: true, timestamp: Date.now() }),
        { qos: 1, retain: true },
      );
      await waitFor(
        "the ERROR that the node cannot come online",
        () => lines.some((l) => l.startsWith("ERROR") && /cannot come online/.test(l)),
      );
      assert.equal(node.connected, true);
      assert.equal(node.online, false);
      assert.equal(node.counts.births, 0);
      assert.equal(of(NBIRTH).length, 0);

      // The change that shrinks it: mode IDLE.
      await rt.modes.request("IDLE");
      const nbirth = await waitFor("NBIRTH after mode IDLE", () => of(NBIRTH)[0], 10_000);
      assert.equal(nbirth.payload.metrics?.find((m) => m.name === MODE)?.string_value, "IDLE");
      assert.equal(mqttPacketBytes(NBIRTH, nbirth.raw.length, 0), bound);
      await waitFor("the node online", () => node.online);
      assert.equal(node.counts.births, 1);
      assert.equal(node.counts.connects, 1, "the same connection: no reconnect");
      const errors = lines.filter((l) => /NBIRTH is \d+ bytes, over/.test(l));
      assert.equal(errors.length, 1, lines.join("\n"));
      assert.match(errors[0]!, new RegExp(`^ERROR .*NBIRTH is ${bound + 2} bytes, over`));
      const comes = lines.filter((l) => /the node comes online/.test(l));
      assert.equal(comes.length, 1, lines.join("\n"));
      assert.match(
        comes[0]!,
        new RegExp(
          `^INFO .*NBIRTH is now ${bound} bytes, within sparkplug.max_message_bytes ${bound}`,
        ),
      );

      // The opposite: grown over the bound while online (MANUAL again), the node stays online
      // on its births, and the NDATA of the mode reaches the host.
      await rt.modes.request("MANUAL");
      await waitFor(
        "NDATA of mode MANUAL",
        () =>
          of(NDATA).some((m) =>
            (m.payload.metrics ?? []).some((x) =>
              x.string_value === "MANUAL" && x.is_historical !== true
            )
          ),
      );
      assert.equal(node.online, true);
      assert.equal(of(NBIRTH).length, 1);
      assert.equal(of(NDEATH).length, 0);
      assert.equal(node.counts.connects, 1);
      for (const m of host.messages) {
        assert.ok(mqttPacketBytes(m.topic, m.raw.length, 0) <= bound, m.topic);
      }
    } finally {
      await rt.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
