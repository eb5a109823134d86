/**
 * GET /metrics has the provider series of every configured provider, in the configuration file's
 * order, as GET /v0/providers/health lists them: also one no host is registered under (a reload
 * could not register it), down -- not absent, which a scrape cannot tell from a provider that was
 * never configured (docs/metrics.md). Real child processes (the inert simulated providers) and
 * real loopback HTTP.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { parsePrometheusText } from "../helpers/prometheus_text.ts";
import { rig } from "../helpers/rig.ts";
import { refuseRegistration, serveKernelApi, withEntryChanged } from "../helpers/unregistered.ts";
import { inertSim } from "../safety/_fixture.ts";
import { failedStartText } from "../../src/providers/mod.ts";

Deno.test("GET /metrics lists a provider whose host a reload could not register as down, in the file's order", async () => {
  await using r = await rig({
    programs: false,
    providers: [inertSim("sim0"), inertSim("sim1"), inertSim("sim2")],
  });
  const rt = r.kernel;
  await using server = await serveKernelApi(rt);
  // A host listener that fails refuses the registration of sim1's replacement.
  refuseRegistration(rt.registry, "sim1");
  const reload = await rt.reload(withEntryChanged(rt.config, "sim1"));
  assert.match(
    reload.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);
  assert.deepEqual(rt.registry.configuredWithoutHost(), ["sim1"]);

  const res = await apiFetch(`http://127.0.0.1:${server.port}/metrics`);
  assert.equal(res.status, 200);
  const families = parsePrometheusText(await res.text());
  const series = (name: string) =>
    families.get(name)?.samples.map((s) => [s.labels.provider, s.value]);
  assert.deepEqual(series("runtime_provider_up"), [["sim0", 1], ["sim1", 0], ["sim2", 1]]);
  assert.deepEqual(series("runtime_provider_devices")?.map(([id, n]) => [id, n === 0]), [
    ["sim0", false],
    ["sim1", true],
    ["sim2", false],
  ]);
  assert.deepEqual(series("runtime_provider_circuit_open"), [["sim0", 0], ["sim1", 0], [
    "sim2",
    0,
  ]]);
  const lifecycle = families.get("runtime_provider_lifecycle_state")?.samples
    .filter((s) => s.value === 1)
    .map((s) => [s.labels.provider, s.labels.state]);
  assert.deepEqual(lifecycle, [["sim0", "RUNNING"], ["sim1", "DOWN"], ["sim2", "RUNNING"]]);
  assert.deepEqual(series("runtime_provider_failures_total"), [["sim0", 0], ["sim1", 0], [
    "sim2",
    0,
  ]]);
  assert.deepEqual(series("runtime_provider_host_unmet"), [["sim0", 0], ["sim1", 0], [
    "sim2",
    0,
  ]]);
});
