/**
 * A device that drops out while its provider stays up (the simulated provider's
 * `inject_device_unavailable`: its reads fail, long enough to be down) while the broker is away,
 * and answers again before the broker is back: after the births the host gets, with
 * `is_historical`, the device's polls that failed (`Quality` 0, bad) and then its return (192),
 * in that order, from the history ring and from the DDATA queue alike; no DDEATH (its provider
 * never went down nor stopped listing it). Against a real Mosquitto and the simulated provider.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { hostBackConnect, reconnectingHost } from "../helpers/sparkplug_host.ts";
import { i, manualCall } from "../safety/_fixture.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const GROUP = "lab";
const NODE = "rig-dropout";
const MOTOR = sparkplugDeviceId("sim0", "motorctl0");

/** The Quality codes of a DDATA's historical metrics of alias `alias`. */
function qualities(metrics: Array<Record<string, unknown>>, alias: unknown): number[] {
  return metrics.filter((m) => m.alias === alias && m.is_historical === true).map((m) => {
    const p = m.properties as { keys?: string[]; values?: { int_value?: number }[] } | undefined;
    return Number(p?.values?.[p.keys?.indexOf("Quality") ?? -1]?.int_value);
  });
}

for (const history of [true, false]) {
  Deno.test({
    name: `a device down and back while the broker is away is replayed bad, then good, no DDEATH (${
      history ? "history ring" : "DDATA queue"
    })`,
    ignore: mosquittoMissing(),
    async fn() {
      const broker = await Mosquitto.start();
      const host = await reconnectingHost(broker.url, GROUP);
      const writes = hostBackConnect(host);
      let rt: Kernel | null = null;
      try {
        rt = await startRuntime(
          testConfig({
            runtime: { name: NODE },
            history: { enabled: history, diskMaxBytes: 0 },
            providers: [simProvider("sim0")],
            sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, reconnectMs: 100 },
          }),
          { arm: true, host: { mqttConnect: writes.connect } },
        );
        const birth = await waitFor(
          "motorctl0's DBIRTH",
          () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${MOTOR}`),
        );
        const alias = (birth.payload.metrics ?? []).find((m) => m.name === "motor1_speed")!.alias;
        await broker.pause();
        await waitFor("the edge node to see the broker gone", () => !rt!.sparkplug!.online);
        writes.holdUntilHostBack();
        await manualCall(rt, "sim0", "chaos_control", 1, {
          device_id: { type: "string", string: "motorctl0" },
          duration_ms: i(2000),
        });
        await waitFor(
          "motorctl0 down",
          () => rt!.outages.condition("sim0", "motorctl0").kind === "down",
          10_000,
        );
        await waitFor(
          "motorctl0 back",
          () => rt!.outages.condition("sim0", "motorctl0").kind === "up",
          10_000,
        );
        const marker = host.messages.length;
        await broker.resume();
        const replayed = await waitFor("motor1_speed's outage replayed", () => {
          const q = host.messages.slice(marker)
            .filter((m) => m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${MOTOR}`)
            .flatMap((m) => qualities(m.payload.metrics ?? [], alias));
          return q.includes(192) ? q : null;
        }, 20_000);
        assert.deepEqual(replayed, [0, 192], "its failed polls (bad), then its return (good)");
        const after = host.messages.slice(marker);
        assert.ok(
          after.some((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${MOTOR}`),
          "born again on the new connection",
        );
        assert.ok(
          !host.messages.some((m) => m.topic === `spBv1.0/${GROUP}/DDEATH/${NODE}/${MOTOR}`),
          "its provider stayed up and listed it: no DDEATH",
        );
      } finally {
        await rt?.stop();
        await host.close();
        await broker.dispose();
      }
    },
  });
}
