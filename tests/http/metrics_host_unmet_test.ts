/**
 * /metrics lists each unmet host requirement a provider reported once: a provider naming the same
 * requirement twice, or two that are equal once cut to their bound or written as UTF-8, would
 * give the same series twice, and Prometheus rejects a scrape holding a duplicate series.
 */
import assert from "node:assert/strict";
import { startServing, tempDir } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { programmableProvider } from "../helpers/programmable_provider.ts";
import { parsePrometheusText } from "../helpers/prometheus_text.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** A provider file: up, no devices, these WaitReady diagnostics. */
async function unmetProvider(file: string, diagnostics: Record<string, string>): Promise<void> {
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      hello: { metadata: { supports_wait_ready: "true" } },
      waitReady: { diagnostics: { host_check: "unmet", ...diagnostics } },
      devices: {},
    }),
  );
}

Deno.test("/metrics: unmet host requirements repeated by the provider, or equal after the cut, are one series each", async () => {
  const dir = tempDir("host-unmet-");
  const long = "r".repeat(400);
  // The summary: one requirement twice, and two ids equal once cut to 300 characters.
  await unmetProvider(`${dir}/bus0.json`, {
    host_unmet: "i2c.bus_present: /dev/i2c-9 missing; i2c.bus_present: /dev/i2c-9 missing; " +
      `${long}1: d; ${long}2: d`,
  });
  // The --check-host list: one requirement twice, and two ids that differ only in a lone
  // surrogate (both U+FFFD once written as UTF-8). The JSON text carries the escapes.
  await unmetProvider(`${dir}/bus1.json`, {
    host_unmet: "gpio: x",
    host_requirements: "[" +
      '{"id":"gpio","status":"unmet","detail":"x","remedy":"y"},' +
      '{"id":"gpio","status":"unmet","detail":"x","remedy":"y"},' +
      '{"id":"spi\\ud800","status":"unmet"},{"id":"spi\\udc00","status":"unmet"}]',
  });
  const rt = await startServing(
    testConfig({
      providers: [
        programmableProvider("bus0", `${dir}/bus0.json`),
        programmableProvider("bus1", `${dir}/bus1.json`),
      ],
      runtime: { dataDir: dir },
    }),
  );
  try {
    const text = await (await apiFetch(`http://127.0.0.1:${rt.http!.port}/metrics`)).text();
    const family = parsePrometheusText(text).get("runtime_provider_host_requirement_unmet");
    assert.deepEqual(
      family?.samples.map((x) => `${x.labels.provider} ${x.labels.requirement}`),
      ["bus0 i2c.bus_present", `bus0 ${"r".repeat(300)}\u2026`, "bus1 gpio", "bus1 spi\ufffd"],
    );
  } finally {
    await rt.stop();
  }
});
