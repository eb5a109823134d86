/**
 * Before the node's first births (here: they wait for the primary host) the node metric changes
 * are kept and published after the NBIRTH with is_historical (tests/sparkplug/unborn_estop_test.ts)
 * -- except a metric's only change to the value the NBIRTH itself carries: the host never had the
 * value before it (the metrics at start are not published), so that NDATA would show it no
 * transition, only the NBIRTH's value a few moments earlier. A metric that changed more than once
 * keeps every change: the values between are not in the NBIRTH, and the last one ends the one
 * before at its time. Against a real Mosquitto and the simulated provider.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Received, simNodeConfig, withSparkplugRuntime } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-uc";
const HOST = "scada-1";
const NBIRTH = `spBv1.0/${GROUP}/NBIRTH/${NODE}`;
const NDATA = `spBv1.0/${GROUP}/NDATA/${NODE}`;
const MODE = "Runtime/Mode";

/** Metric `name`'s values in the NDATA after the NBIRTH (by its alias), historical or live. */
function nodeData(messages: Received[], name: string) {
  const birth = messages.find((m) => m.topic === NBIRTH);
  const alias = (birth?.payload.metrics ?? []).find((m) => m.name === name)?.alias;
  assert.notEqual(alias, undefined, `${name} in the NBIRTH`);
  return messages.filter((m) => m.topic === NDATA)
    .flatMap((m) => m.payload.metrics ?? [])
    .filter((x) => x.alias === alias)
    .map((x) => ({ value: x.string_value, historical: x.is_historical === true }));
}

for (
  const [modes, historical] of [
    [["MANUAL"], []],
    [["MANUAL", "IDLE"], ["MANUAL", "IDLE"]],
  ] as const
) {
  Deno.test({
    name: `SparkplugEdgeNode: mode changes before the first births (${
      modes.join(", ")
    }) reach the host's history unless the NBIRTH carries the only one`,
    ignore: mosquittoMissing(),
    async fn() {
      await withSparkplugRuntime({
        group: GROUP,
        config: simNodeConfig(NODE, GROUP, { primaryHostId: HOST, reconnectMs: 100 }),
      }, async (rt, host) => {
        const node = rt.sparkplug!;
        assert.equal(rt.modes.current(), "IDLE");
        for (const mode of modes) {
          await rt.modes.request(mode);
          assert.equal(rt.modes.current(), mode);
        }
        assert.equal(node.counts.births, 0, "not born yet: the primary host is not online");

        await host.client.publishAsync(
          `spBv1.0/STATE/${HOST}`,
          JSON.stringify({ online: true, timestamp: Date.now() }),
          { qos: 1, retain: true },
        );
        const nbirth = await waitFor("NBIRTH", () => host.messages.find((m) => m.topic === NBIRTH));
        const born = (nbirth.payload.metrics ?? []).find((m) => m.name === MODE);
        assert.equal(born?.string_value, modes.at(-1), "the NBIRTH carries the mode as it is now");
        // A live change after the births: once the host has it, it has everything before (all
        // QoS 0 on one connection: the broker keeps their order).
        const live = rt.modes.current() === "IDLE" ? "MANUAL" : "IDLE";
        await rt.modes.request(live);
        const data = await waitFor(
          "the live NDATA of the mode",
          () => {
            const d = nodeData(host.messages, MODE);
            return d.some((x) => !x.historical && x.value === live) ? d : null;
          },
        );
        assert.deepEqual(
          data.filter((x) => x.historical).map((x) => x.value),
          historical,
          `the host's history of ${MODE} after the births: ${JSON.stringify(data)}`,
        );
      });
    },
  });
}
