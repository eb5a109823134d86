/**
 * A DCMD that arrives while the runtime stops is not carried out (docs/sparkplug.md, "Commands"):
 * from the stop on, the tree is halted and the HTTP API refuses every new call ("nothing new
 * commands the machine while the runtime stops", docs/http-api.md), while the HTTP server's drain
 * may take seconds (a call still being answered: HTTP_SHUTDOWN_MAX_MS) before the edge node
 * publishes its NDEATH. A DCMD in that window was carried out. An NCMD e-stop still is taken, as
 * the HTTP e-stop is still served. Against a real Mosquitto and the simulated provider; the HTTP
 * server is real, its shutdown held by the test where a slow call's answer would hold it.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  simNodeConfig,
  type SparkplugHost,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { serveHttp } from "../../src/host/mod.ts";
import type { HttpServerHandle, ServeOptions } from "../../src/host/mod.ts";
import { NODE_METRICS, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";

const GROUP = "lab";
const NODE = "rig-stopping";
const relay = sparkplugDeviceId("sim0", "relayio0");

Deno.test({
  name:
    "SparkplugEdgeNode refuses a DCMD while the runtime stops (its HTTP drain under way), and still takes an NCMD e-stop",
  ignore: mosquittoMissing(),
  async fn() {
    const drainStarted = Promise.withResolvers<void>();
    const drainHeld = Promise.withResolvers<void>();
    // The real server; its shutdown waits for the test, as for a call still being answered.
    const serve = async (o: ServeOptions): Promise<HttpServerHandle> => {
      const s = await serveHttp(o);
      return {
        hostname: s.hostname,
        port: s.port,
        tls: s.tls,
        maxConnections: s.maxConnections,
        openFileLimit: s.openFileLimit,
        connectionStats: () => s.connectionStats(),
        shutdown: async () => {
          drainStarted.resolve();
          await drainHeld.promise;
          await s.shutdown();
        },
      };
    };
    let stopping: Promise<void> | null = null;
    await withSparkplugRuntime({
      group: GROUP,
      config: simNodeConfig(NODE, GROUP, { commands: true }),
      start: { arm: true, host: { serve } },
    }, async (rt, host) => {
      // Whatever fails, the drain ends (the rig's stop waits for it).
      try {
        await body(rt, host);
      } finally {
        drainHeld.resolve();
      }
    });
    await stopping;

    async function body(rt: Kernel, host: SparkplugHost): Promise<void> {
      const entries: AuditEntry[] = [];
      rt.audit.onEntry((e) => entries.push(e));
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = (birth.payload.metrics ?? []).find((m) =>
        m.name === "Functions/set_relay_ch3"
      )!.alias;
      const relayOn = () => {
        const v = rt.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
        return v?.type === "bool" && v.bool;
      };
      assert.equal(relayOn(), false, "relay 3 starts off");

      stopping = rt.stop();
      await drainStarted.promise; // the tree halted, the HTTP API closed, its server draining
      const before = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      const answer = await waitFor(
        "the DCMD's answer",
        () =>
          host.messages.slice(before).flatMap((m) =>
            m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}` ? m.payload.metrics ?? [] : []
          ).find((x) => x.alias === alias && typeof x.string_value === "string"),
      );
      // The e-stop is still taken while the runtime stops (as POST /v0/estop is still served).
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: NODE_METRICS.estop, datatype: 11, boolean_value: true },
      ]);
      await waitFor("the NCMD e-stop latched", () => rt.estop.latched);
      await rt.cache.pollDevice("sim0", "relayio0");
      rt.audit.flushOpen();
      const carriedOut = entries.filter((e) =>
        e.origin.kind === "sparkplug" && e.action === "call" && e.outcome !== "refused"
      );
      assert.match(
        String(answer.string_value),
        /^REFUSED: the runtime is stopping/,
        `a DCMD while the runtime stops is answered ${JSON.stringify(answer.string_value)} ` +
          `(audited as ${JSON.stringify(carriedOut.map((e) => e.outcome))}; relay 3 ${
            relayOn() ? "switched on" : "off"
          })`,
      );
      assert.deepEqual(carriedOut, [], "no DCMD call is made while the runtime stops");
      assert.equal(relayOn(), false, "relay 3 stays off");
    }
  },
});
