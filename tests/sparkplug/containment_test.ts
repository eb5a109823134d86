/**
 * A bug in the edge node's own code is contained where the node is entered (src/sparkplug/
 * edge_node.ts #contain): logged at ERROR, counted in runtime_sparkplug_internal_errors_total,
 * and the node -- and the runtime, its API and e-stop route -- go on. Before, the error became an
 * unhandled rejection or an uncaught error in a microtask, which main.ts turns into `crash:` and
 * an exit. The fault is injected into a port the node reads on its deferred node-data path (the
 * status of alarms), against a real Mosquitto.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { type Received, sparkplugHost } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "contain-test";

/** The last value of a node metric the host received (NBIRTH by name, NDATA by alias). */
function lastMode(messages: readonly Received[]): string | undefined {
  let alias: unknown;
  let mode: string | undefined;
  for (const m of messages) {
    for (const metric of m.payload.metrics ?? []) {
      if (m.topic.includes("/NBIRTH/") && metric.name === "Runtime/Mode") {
        alias = metric.alias;
        mode = metric.string_value as string;
      } else if (m.topic.includes("/NDATA/") && alias !== undefined && metric.alias === alias) {
        mode = metric.string_value as string;
      }
    }
  }
  return mode;
}

Deno.test({
  name:
    "an error of the edge node's own code is logged, counted and contained: the runtime and the node go on",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const { log, lines } = capturingLogger({ level: "info" });
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0")],
          sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, reconnectMs: 200 },
        }),
        { host: { log } },
      );
      await waitFor("the node online", () => rt!.sparkplug?.online && lastMode(host.messages));
      assert.equal(lastMode(host.messages), "IDLE");
      // The next status read of the node throws (a bug of the plant link, say).
      const alarms = rt.alarms.alarms.bind(rt.alarms);
      let faults = 1;
      rt.alarms.alarms = () => {
        if (faults-- > 0) throw new Error("injected: a bug on the node-data path");
        return alarms();
      };
      await rt.modes.request("MANUAL");
      await waitFor("the error counted", () => rt!.sparkplug!.counts.internalErrors === 1);
      const errors = lines.filter((l) => l.includes("internal error in node data"));
      assert.equal(errors.length, 1, lines.join("\n"));
      assert.match(errors[0]!, /^ERROR .*injected: a bug on the node-data path/);
      // The runtime goes on, and so does the node: the next change reaches the host.
      assert.equal(rt.modes.current(), "MANUAL");
      await rt.modes.request("IDLE");
      await waitFor("Runtime/Mode IDLE at the host", () => lastMode(host.messages) === "IDLE");
      assert.equal(rt.sparkplug!.counts.internalErrors, 1);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
