/**
 * Sparkplug's node metrics after a configuration reload (SIGHUP, through the kernel's
 * ConfigReloader as the process runs it): what the runtime reports of its alarms changes with the
 * reload itself, not with a transition, and the Sparkplug host must see it as GET /v0/alarms and
 * GET /metrics do. Against a real Mosquitto and the programmable provider as a child process.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, tempDir, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { dbl, type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { lastNodeIntMetric, type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { AlarmConfig, Config } from "../../src/config/mod.ts";

const GROUP = "lab";
const NODE = "rig-reload";

const X_HI: AlarmConfig = {
  id: "x_hi",
  signal: "p0/d0/x",
  providerId: "p0",
  deviceId: "d0",
  signalId: "x",
  limits: { hi: 10 },
  level: "MAJOR",
  hysteresis: 0,
  delayMs: 0,
  onBadQuality: "alarm",
  action: "none",
  message: "x too high",
  path: "alarms[0]",
};

function config(url: string, file: string, alarms: AlarmConfig[]): Config {
  return testConfig({
    runtime: { name: NODE },
    providers: [programmableProvider("p0", file)],
    alarms,
    sparkplug: { enabled: true, brokerUrl: url, groupId: GROUP, reconnectMs: 100 },
  });
}

/** The last value the host received of a node metric (by its NBIRTH name, then its alias). */
function lastNodeMetric(messages: readonly Received[], name: string): number | null {
  return lastNodeIntMetric(messages, GROUP, NODE, name);
}

Deno.test({
  name:
    "a reload that removes an active alarm: the Sparkplug host's Alarms/Active and Alarms/Unacked follow (NDATA), as GET /v0/alarms does",
  ignore: mosquittoMissing(),
  async fn() {
    const dir = tempDir("sparkplug-reload-");
    const inventory: Inventory = {
      devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 20)] } },
    };
    const file = `${dir}/inventory.json`;
    await Deno.writeTextFile(file, JSON.stringify(inventory));
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let next: Config | null = null;
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(config(broker.url, file, [X_HI]), {
        host: {
          loadConfig: () => Promise.resolve({ ok: true, config: next!, warnings: [] }),
        },
      });
      await waitFor("x_hi active", () => rt!.alarms.alarms()[0]?.state === "active");
      await waitFor(
        "Alarms/Active = 1 at the host",
        () => lastNodeMetric(host.messages, "Alarms/Active") === 1,
      );
      assert.equal(lastNodeMetric(host.messages, "Alarms/Unacked"), 1);

      // SIGHUP with the alarm removed from the file (nothing else changed).
      next = config(broker.url, file, []);
      await rt.reloader!.request();
      assert.deepEqual(rt.alarms.alarms(), [], "the runtime has no alarm any more");
      await waitFor(
        "Alarms/Active = 0 at the host",
        () => lastNodeMetric(host.messages, "Alarms/Active") === 0,
        5000,
      ).catch((err) => {
        throw new Error(
          `${(err as Error).message}: the host still reads Alarms/Active = ${
            lastNodeMetric(host.messages, "Alarms/Active")
          }, Alarms/Unacked = ${lastNodeMetric(host.messages, "Alarms/Unacked")}`,
        );
      });
      assert.equal(lastNodeMetric(host.messages, "Alarms/Unacked"), 0);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
