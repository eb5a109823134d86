/**
 * An NCMD e-stop in GET /metrics (docs/metrics.md): a runtime child process (simulated provider)
 * with `sparkplug.commands: true` against a real Mosquitto, stopped twice by a host over
 * Sparkplug (the second while latched), scraped over HTTP: the latch, FAULT, both triggers in
 * `runtime_estop_triggers_total` (as a trigger while latched counts), both commands accepted.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { SIM_MAIN, SIM_YAML } from "../helpers/sim_config.ts";
import { parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { startSparkplugRuntimeChild } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-estop-metrics";

Deno.test({
  name:
    "GET /metrics counts an NCMD e-stop as a trigger (runtime_estop_triggers_total), one while latched too, with the latch, FAULT and the commands accepted",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const dir = await Deno.makeTempDir({ prefix: "sparkplug-estop-metrics-" });
    const host = await mqtt.connectAsync(broker.url, { clientId: `host-${crypto.randomUUID()}` });
    const rt = await startSparkplugRuntimeChild({
      node: NODE,
      dir,
      brokerUrl: broker.url,
      group: GROUP,
      simArgs: `run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_YAML}`,
      sparkplug: ["commands: true"],
    });
    const scrape = async () => {
      const res = await apiFetch(`${rt.base}/metrics`);
      const text = await res.text();
      assert.equal(res.status, 200, text);
      const f = parsePrometheusText(text);
      return (name: string, labels?: Record<string, string>) => sampleValue(f, name, labels);
    };
    const estop = () =>
      host.publishAsync(
        `spBv1.0/${GROUP}/NCMD/${NODE}`,
        Buffer.from(encode({
          timestamp: Date.now(),
          metrics: [{
            name: "Node Control/E-Stop",
            datatype: DataType.Boolean,
            boolean_value: true,
          }],
        })),
        { qos: 1 },
      );
    try {
      await waitFor("the births", async () => (await scrape())("runtime_sparkplug_online") === 1);
      assert.equal((await scrape())("runtime_estop_triggers_total"), 0);
      await estop();
      await waitFor(
        "the first NCMD e-stop taken",
        async () =>
          (await scrape())("runtime_sparkplug_commands_total", { result: "accepted" }) === 1,
      );
      await estop();
      const v = await waitFor("the second NCMD e-stop taken", async () => {
        const v = await scrape();
        return v("runtime_sparkplug_commands_total", { result: "accepted" }) === 2 ? v : null;
      });
      assert.equal(v("runtime_estop_latched"), 1);
      assert.equal(v("runtime_mode", { mode: "FAULT" }), 1);
      assert.equal(v("runtime_estop_triggers_total"), 2);
      assert.equal(v("runtime_sparkplug_commands_total", { result: "refused" }), 0);
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
      await host.endAsync(true);
      await broker.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
