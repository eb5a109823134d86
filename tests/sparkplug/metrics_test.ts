/**
 * The Sparkplug B edge node in GET /metrics (docs/metrics.md, "Sparkplug B"): a runtime child
 * process (simulated provider) against a real Mosquitto, scraped over HTTP while the primary host
 * is offline then online, commands are refused and ignored, the broker goes away and comes back:
 * connection state, births, store and forward kept/queued/replayed, commands by result.
 */
import assert from "node:assert/strict";
import mqtt from "mqtt";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { SIM_MAIN, SIM_YAML } from "../helpers/sim_config.ts";
import { type Family, parsePrometheusText, sampleValue } from "../helpers/prometheus_text.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { encode } from "../../src/sparkplug/mod.ts";
import { startSparkplugRuntimeChild } from "../helpers/sparkplug_host.ts";

const GROUP = "lab";
const NODE = "rig-metrics";
const HOST = "scada-m";

/** Every Sparkplug family with a primary host configured, and its type. */
const SPARKPLUG_FAMILIES: Record<string, Family["type"]> = {
  runtime_sparkplug_enabled: "gauge",
  runtime_sparkplug_connected: "gauge",
  runtime_sparkplug_online: "gauge",
  runtime_sparkplug_primary_host_online: "gauge",
  runtime_sparkplug_bdseq: "gauge",
  runtime_sparkplug_connects_total: "counter",
  runtime_sparkplug_births_total: "counter",
  runtime_sparkplug_messages_published_total: "counter",
  runtime_sparkplug_publish_failures_total: "counter",
  runtime_sparkplug_store_queued_messages: "gauge",
  runtime_sparkplug_store_queued_bytes: "gauge",
  runtime_sparkplug_store_replay_pending: "gauge",
  runtime_sparkplug_store_kept_total: "counter",
  runtime_sparkplug_store_dropped_total: "counter",
  runtime_sparkplug_store_replayed_total: "counter",
  runtime_sparkplug_commands_total: "counter",
  runtime_sparkplug_primary_host_offline_disconnects_total: "counter",
  runtime_sparkplug_state_ignored_total: "counter",
  runtime_sparkplug_internal_errors_total: "counter",
  runtime_sparkplug_too_large_dropped_total: "counter",
  runtime_sparkplug_foreign_births_total: "counter",
  runtime_sparkplug_device_birth_too_large_bytes: "gauge",
};

async function scrape(base: string): Promise<Map<string, Family>> {
  const res = await apiFetch(`${base}/metrics`);
  const text = await res.text();
  assert.equal(res.status, 200, text);
  return parsePrometheusText(text);
}

/** Waits until a scrape satisfies `check`; returns that scrape. */
function scrapeUntil(
  base: string,
  what: string,
  check: (v: (name: string, labels?: Record<string, string>) => number) => boolean,
): Promise<Map<string, Family>> {
  return waitFor(
    what,
    async () => {
      const f = await scrape(base);
      return check((name, labels) => sampleValue(f, name, labels)) ? f : null;
    },
    20_000,
    100,
  );
}

async function post(base: string, path: string, body: unknown): Promise<void> {
  const res = await apiFetch(`${base}${path}`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify(body),
  });
  const text = await res.text();
  assert.equal(res.status, 200, `${path}: ${text}`);
}

Deno.test({
  name:
    "GET /metrics: the edge node's connection, births, store and forward and commands, scraped while it runs",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const dir = await Deno.makeTempDir({ prefix: "sparkplug-metrics-" });
    const host = await mqtt.connectAsync(broker.url, { clientId: `host-${crypto.randomUUID()}` });
    const rt = await startSparkplugRuntimeChild({
      node: NODE,
      dir,
      brokerUrl: broker.url,
      group: GROUP,
      simArgs: `run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_YAML}`,
      // Store and forward is the queue here (with history: store_forward_ring_test).
      before: "history:\n  enabled: false",
      pollIntervalMs: 100,
      sparkplug: [`primary_host_id: ${HOST}`, "reconnect_ms: 100"],
    });
    const base = rt.base;
    try {
      // Connected, the primary host not online: no births, nothing published but subscriptions.
      const waiting = await scrapeUntil(
        base,
        "connected and waiting for the host",
        (v) => v("runtime_sparkplug_connected") === 1,
      );
      const types = Object.fromEntries(
        [...waiting.values()].filter((f) => f.name.startsWith("runtime_sparkplug_"))
          .map((f) => [f.name, f.type]),
      );
      assert.deepEqual(types, SPARKPLUG_FAMILIES);
      const v0 = (name: string, labels?: Record<string, string>) =>
        sampleValue(waiting, name, labels);
      assert.equal(v0("runtime_sparkplug_enabled"), 1);
      assert.equal(v0("runtime_sparkplug_online"), 0);
      assert.equal(v0("runtime_sparkplug_primary_host_online"), 0);
      assert.equal(v0("runtime_sparkplug_births_total"), 0);
      assert.equal(v0("runtime_sparkplug_connects_total"), 1);

      // The host comes online (retained, so a reconnect reads it again): births.
      await host.publishAsync(
        `spBv1.0/STATE/${HOST}`,
        JSON.stringify({ online: true, timestamp: Date.now() }),
        { qos: 1, retain: true },
      );
      await scrapeUntil(
        base,
        "births",
        (v) => v("runtime_sparkplug_online") === 1 && v("runtime_sparkplug_births_total") === 1,
      );

      // Commands: a DCMD refused (commands are off), an undecodable NCMD ignored.
      await host.publishAsync(
        `spBv1.0/${GROUP}/DCMD/${NODE}/sim0:relayio0`,
        Buffer.from(encode({
          timestamp: Date.now(),
          metrics: [{ name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true }],
        })),
        { qos: 1 },
      );
      await host.publishAsync(`spBv1.0/${GROUP}/NCMD/${NODE}`, Buffer.from([0xff, 0xff]), {
        qos: 1,
      });
      await scrapeUntil(
        base,
        "a refused and an ignored command",
        (v) =>
          v("runtime_sparkplug_commands_total", { result: "refused" }) === 1 &&
          v("runtime_sparkplug_commands_total", { result: "ignored" }) === 1 &&
          v("runtime_sparkplug_commands_total", { result: "accepted" }) === 0,
      );

      // The broker goes away: not connected; a call's change is kept for later.
      await broker.pause();
      await scrapeUntil(base, "the broker gone", (v) => v("runtime_sparkplug_connected") === 0);
      await post(base, "/v0/mode", { mode: "MANUAL" });
      await post(base, "/v0/call", {
        provider_id: "sim0",
        device_id: "motorctl0",
        function_id: 10,
        args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
      });
      const kept = await scrapeUntil(
        base,
        "data kept",
        (v) =>
          v("runtime_sparkplug_store_queued_messages") >= 1 &&
          v("runtime_sparkplug_store_queued_bytes") > 0,
      );
      assert.ok(
        sampleValue(kept, "runtime_sparkplug_store_kept_total") >=
          sampleValue(kept, "runtime_sparkplug_store_queued_messages"),
      );

      // Back: a new connection, births again, the kept data replayed and the queue empty.
      await broker.resume();
      const back = await scrapeUntil(
        base,
        "the replay",
        (v) =>
          v("runtime_sparkplug_connected") === 1 && v("runtime_sparkplug_births_total") === 2 &&
          v("runtime_sparkplug_store_replayed_total") >= 1 &&
          v("runtime_sparkplug_store_queued_messages") === 0,
      );
      assert.equal(sampleValue(back, "runtime_sparkplug_connects_total"), 2);
      assert.equal(sampleValue(back, "runtime_sparkplug_bdseq"), 1);
      assert.equal(sampleValue(back, "runtime_sparkplug_store_dropped_total"), 0);
      assert.ok(sampleValue(back, "runtime_sparkplug_messages_published_total") > 0);
    } catch (err) {
      console.error(rt.stderr());
      throw err;
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
      await host.endAsync(true);
      await broker.dispose();
      await Deno.remove(dir, { recursive: true });
    }
  },
});
