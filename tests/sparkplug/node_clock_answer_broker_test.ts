/**
 * The answer to an NCMD e-stop whose time the edge node cannot read (its wall-clock read fails
 * at the answer) is not lost: it waits for the clock (NODE_CLOCK_RETRY_MS) and reaches the host.
 * In-process runtime (the simulated provider as a child process) against a real Mosquitto; the
 * wall clock fails at the node's reads for the answer alone (its method on the stack), so the
 * latch itself is dated as usual. (Every message of the node: node_clock_messages_test.ts.)
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  commandResultAlias,
  nodeAnswers,
  simNodeConfig,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import { failingClock } from "../safety/_clock_rig.ts";
import { NODE_METRICS } from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-clock-answer";

Deno.test({
  name: "an NCMD e-stop answer the node's clock cannot date reaches the Sparkplug host once it can",
  ignore: mosquittoMissing(),
  async fn() {
    const failing = { at: false };
    const fc = failingClock({
      read: "nowMs",
      times: Infinity,
      when: () =>
        failing.at && /SparkplugEdgeNode\.#(commandResult|answer)\b/.test(new Error().stack ?? ""),
    });
    await withSparkplugRuntime({
      group: GROUP,
      config: simNodeConfig(NODE, GROUP, { commands: true }),
      start: { host: { clock: fc.clock } },
    }, async (rt, host) => {
      await waitFor("the births", () => rt.sparkplug!.online);
      const alias = await commandResultAlias(host, GROUP, NODE);
      const from = host.messages.length;
      failing.at = true;
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: NODE_METRICS.estop, datatype: 11, boolean_value: true },
      ]);
      await waitFor("the NCMD e-stop latched", () => rt.estop.latched);
      await waitFor("the answer's clock read failed", () => fc.failures() > 0);
      failing.at = false;
      const answers = await nodeAnswers(host, { group: GROUP, node: NODE, alias, from, count: 1 });
      assert.deepEqual(answers, [`${NODE_METRICS.estop}: OK`]);
      assert.equal(rt.sparkplug!.counts.internalErrors, 0, "a failing clock is no internal error");
    });
  },
});
