/**
 * The whole service (runtime + simulated provider + telemetry + runs) writing into a real
 * VictoriaMetrics: every measurement arrives with the right tags and field types. Exact text
 * (string fields, which VictoriaMetrics drops) is checked on the recorded request bodies.
 */
import assert from "node:assert/strict";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, simProvider, testConfig } from "../helpers/sim_config.ts";
import {
  LineRecorder,
  VictoriaMetrics,
  victoriaMetricsMissing,
} from "../helpers/victoria_metrics.ts";

Deno.test({
  name: "Service streams signals, mode and parameter changes, health and run events to InfluxDB",
  ignore: victoriaMetricsMissing(),
  async fn() {
    const db = await VictoriaMetrics.start();
    const recorder = new LineRecorder(db.url);
    const dataDir = await Deno.makeTempDir({ prefix: "runtime-tel-" });
    const config = testConfig({
      providers: [simProvider("sim0", { yaml: SIM_INERT_YAML })],
      runtime: { name: "lab1", dataDir },
      http: { enabled: false },
      automation: {
        enabled: true,
        parameters: [{ name: "target", type: "double", default: 25, allowedValues: [] }],
      },
      telemetry: {
        enabled: true,
        healthIntervalMs: 300,
        influxdb: {
          url: recorder.url,
          org: "anolis",
          bucket: "anolis",
          token: "t0ken",
          batchSize: 50,
          flushIntervalMs: 100,
          maxRetryBufferSize: 1000,
          queueSize: 10000,
        },
      },
    });
    const service = await startServing(config);
    try {
      await service.modes.request("MANUAL");
      service.parameters!.set("target", 30);
      const { run } = await service.runs.open({ experiment_label: "trial-1" }) as {
        run: { run_id: string };
      };
      await service.runs.addMarker(run.run_id, { type: "sample_taken" });
      await service.router.call({
        providerId: "sim0",
        deviceId: "relayio0",
        functionId: 1,
        args: { enabled: { type: "bool", bool: true } },
        origin: "manual",
      });
      const has = (prefix: string) => recorder.lines.some((l) => l.startsWith(prefix));
      await waitFor(
        "every measurement",
        () =>
          has("runtime_signal,") && has("runtime_mode_change ") &&
          has("runtime_parameter_change,") && has("runtime_provider_health,") &&
          has("runtime_device_health,") && has("runtime_run_event,"),
      );
      // The relay's new value comes with the poll after the call, in a later flush than the
      // first lines of every measurement: wait for it too before reading the lines.
      await waitFor(
        "the relay's value after the call",
        () =>
          recorder.lines.some((l) =>
            /^runtime_signal,.*signal_id=relay_ch1_state value_bool=true,/.test(l)
          ),
      );
      const lines = recorder.lines;
      // Exact text of what was sent (string fields included).
      assert.ok(
        lines.some((l) =>
          /^runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=relayio0,signal_id=relay_ch1_state value_bool=true,quality="OK" \d+$/
            .test(l)
        ),
      );
      assert.ok(
        lines.some((l) =>
          /^runtime_signal,runtime_name=lab1,provider_id=sim0,device_id=tempctl0,signal_id=tc1_temp value_double=25,quality="OK" \d+$/
            .test(l)
        ),
      );
      assert.ok(
        lines.some((l) =>
          /^runtime_signal,.*signal_id=control_mode value_string="open",quality="OK" \d+$/.test(l)
        ),
      );
      assert.ok(
        lines.some((l) =>
          /^runtime_mode_change previous_mode="IDLE",new_mode="MANUAL" \d+$/.test(l)
        ),
      );
      assert.ok(
        lines.some((l) =>
          /^runtime_parameter_change,parameter_name=target old_value="25.000000",new_value="30.000000" \d+$/
            .test(l)
        ),
      );
      assert.ok(
        lines.some((l) =>
          /^runtime_provider_health,runtime_name=lab1,provider_id=sim0 state="AVAILABLE",lifecycle_state="RUNNING",degraded=false,/
            .test(l)
        ),
      );
      assert.ok(
        lines.some((l) =>
          /^runtime_device_health,runtime_name=lab1,provider_id=sim0,device_id=tempctl0 health="OK",registered=true,/
            .test(l)
        ),
      );
      assert.ok(
        lines.some((l) => l.startsWith("runtime_run_event,") && l.includes("sample_taken")),
      );
      assert.ok(!lines.some((l) => /,run_id=/.test(l)), "run_id is never a tag");
      assert.equal(recorder.requests[0]!.headers.get("authorization"), "Token t0ken");

      // And the database has them, with the tags as labels and numeric fields as values. A line
      // the recorder has seen may still be on its way to the database: wait for it to land.
      await recorder.settled();
      const relay = await db.export(
        `{__name__="runtime_signal_value_bool",device_id="relayio0",signal_id="relay_ch1_state"}`,
      );
      assert.equal(relay.length, 1);
      assert.equal(relay[0]!.metric.runtime_name, "lab1");
      assert.equal(relay[0]!.values.at(-1), 1);
      const temps = await db.export(
        `{__name__="runtime_signal_value_double",signal_id="tc1_temp"}`,
      );
      assert.equal(temps[0]!.values.at(-1), 25);
      const health = await db.export(`{__name__="runtime_device_health_staleness_ms"}`);
      assert.ok(health.some((s) => s.metric.device_id === "motorctl0"));
      const status = service.telemetry.status();
      assert.equal(status.connected, true);
      assert.equal(status.dropped_events, 0);
      assert.ok(status.total_written > 0);
    } finally {
      await service.stop();
      await recorder.close();
      await db.dispose();
      await Deno.remove(dataDir, { recursive: true });
    }
  },
});
