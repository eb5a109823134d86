/**
 * An e-stop latched and cleared after the API is served and before the edge node starts (the
 * kernel serves the API, with its e-stop route, first) reaches the host's history after the first
 * births, as one latched and cleared while the births wait does (unborn_estop_test.ts): the
 * NBIRTH carries the latch as it is then (clear), NDATA with is_historical say it latched and
 * cleared, each at its time. The test's serve() latches and clears it before it answers. Against
 * a real Mosquitto and the simulated provider.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { newKernel, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import { LATCHED, latchHistoryAfterBirths } from "./_latch_history.ts";

const GROUP = "lab";
const NODE = "rig-bs";

Deno.test({
  name:
    "Kernel: an e-stop latched and cleared between the API served and the edge node started reaches the host's history after the births",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    let latchedAt = 0;
    let clearedAt = 0;
    const rt: Kernel = newKernel(
      testConfig({
        runtime: { name: NODE },
        providers: [simProvider("sim0")],
        sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, reconnectMs: 100 },
      }),
      {
        // Served: the e-stop route is open before the edge node starts.
        serve: async (o) => {
          const server = await serveHttp(o);
          assert.equal(rt.sparkplug?.counts.connects ?? 0, 0, "the edge node has not started");
          latchedAt = Date.now();
          await rt.estop.trigger("between the API and the edge node");
          await waitFor("FAULT", () => rt.modes.current() === "FAULT");
          rt.estop.clear();
          // The node stamps a change when its queued handling runs (a microtask after the
          // event): read the time after that, or the clear's stamp can fall a millisecond later.
          await new Promise((r) => setTimeout(r, 0));
          clearedAt = Date.now();
          return server;
        },
      },
    );
    try {
      await rt.start();
      assert.ok(clearedAt > 0, "latched and cleared while serving");
      const { born, history } = await latchHistoryAfterBirths(rt, host, GROUP, NODE);
      assert.deepEqual(
        history.map((h) => h.value),
        [true, false],
        `the host's history of ${LATCHED} after the births: ${JSON.stringify(history)}`,
      );
      for (const h of history) {
        assert.ok(h.t >= latchedAt && h.t <= born, `at its time, before the births: ${h.t}`);
      }
      assert.ok(history[1]!.t <= clearedAt, "cleared before the edge node started");
    } finally {
      await rt.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
