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
import { type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-bs";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDATA = `spBv1.0/${GROUP}/NDATA/${NODE}`;
const LATCHED = "Runtime/Estop Latched";

/** Node metric `name`'s values with is_historical after the NBIRTH, by its alias. */
function historicalNode(messages: Received[], name: string) {
  const birth = messages.find((m) => m.topic === NBIRTH);
  const alias = (birth?.payload.metrics ?? []).find((m) => m.name === name)?.alias;
  if (alias === undefined) return [];
  return messages.filter((m) => m.topic === NDATA)
    .flatMap((m) => m.payload.metrics ?? [])
    .filter((x) => x.alias === alias && x.is_historical === true)
    .map((x) => ({ value: x.boolean_value ?? x.string_value, t: Number(x.timestamp) }));
}

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
      const nbirth = await waitFor("NBIRTH", () => host.messages.find((m) => m.topic === NBIRTH));
      const born = Number(nbirth.payload.timestamp);
      const latched = (nbirth.payload.metrics ?? []).find((m) => m.name === LATCHED);
      assert.equal(latched?.boolean_value, false, "the births carry the latch as it is now");
      // A live change after the births: published after what the births sent (QoS 0, one
      // connection: the broker keeps their order), so once the host has it, it has the rest.
      await rt.estop.trigger("after the births");
      await waitFor(
        "the live NDATA of the second latch",
        () =>
          host.messages.some((m) =>
            m.topic === NDATA &&
            (m.payload.metrics ?? []).some((x) =>
              x.is_historical !== true && x.boolean_value === true && x.alias === latched?.alias
            )
          ),
      );
      const history = historicalNode(host.messages, LATCHED);
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
