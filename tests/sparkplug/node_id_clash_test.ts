/**
 * Two runtimes of a fleet with one edge node id (a configuration copied from one machine to the
 * next, `runtime.name` left as it was) connect with one MQTT client id: the broker closes the older
 * connection at each CONNECT of the other, so each connection ends soon after its births, and
 * from the 5th in a row (BIRTH_LOSSES_BEFORE_BACKOFF) each node WARNs. That WARN named only a
 * message beyond the broker's packet size bound, pointing at `max_packet_size` and the largest
 * DBIRTH, not at the other runtime. It names the client id and that cause too. Two runtimes on a
 * real Mosquitto.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { infoLines } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";

Deno.test({
  name:
    "two runtimes with one edge node id: the WARN on connections closed at their births names the client id they share, not only a message too large",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const rts: Kernel[] = [];
    const logs = [infoLines(), infoLines()];
    try {
      for (const { log } of logs) {
        rts.push(
          await startRuntime(
            testConfig({
              runtime: { name: "rig-copied" },
              providers: [simProvider("sim0")],
              sparkplug: { enabled: true, brokerUrl: broker.url, groupId: "lab", reconnectMs: 100 },
            }),
            { host: { log } },
          ),
        );
      }
      const warned = await waitFor(
        "the WARN on connections closed at their births",
        () =>
          logs.flatMap((l) => l.lines).find((x) =>
            /^WARN .*the broker closed the connection within \d+ ms/.test(x)
          ),
        30_000,
      );
      assert.match(warned, /another client connected with this node's client id "lab-rig-copied"/);
      assert.match(warned, /two runtimes with one edge node id/);
    } finally {
      for (const rt of rts) await rt.stop();
      await broker.dispose();
    }
  },
});
