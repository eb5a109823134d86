/**
 * GET /v0/runtime/status lists every configured provider, as GET /v0/providers/health and
 * /metrics do: also one no host is registered under (a reload could not register it, or is
 * restarting it and its new host is not registered yet) -- UNAVAILABLE with no devices, not
 * left out -- in the configuration file's order, also after a reload failed to start one. The
 * console's header shows the providers of this answer: one left out there reads as nothing down.
 * Real child processes (the inert simulated providers, the programmable one to hold a reload's
 * window open) and real loopback HTTP.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { rig } from "../helpers/rig.ts";
import { refuseRegistration, serveKernelApi, withEntryChanged } from "../helpers/unregistered.ts";
import { inertSim } from "../safety/_fixture.ts";
import { automationOptions } from "./automation_helpers.ts";
import { reloadIntoWindow, slowToExit } from "../helpers/reload_window.ts";
import { failedStartText } from "../../src/providers/mod.ts";
import { withUnstartable } from "../helpers/sim_config.ts";

async function sims(more: Config["providers"] = []) {
  return await rig({
    programs: false,
    ...automationOptions(null, {
      config: { providers: [inertSim("sim0"), inertSim("sim1"), ...more] },
    }),
    safety: { zeroIsSafe: true },
  });
}

interface StatusProvider {
  provider_id: string;
  state: string;
  device_count: number;
}

async function statusProviders(port: number): Promise<StatusProvider[]> {
  // apiFetch: the answer is checked against the OpenAPI document as well.
  const res = await apiFetch(`http://127.0.0.1:${port}/v0/runtime/status`);
  assert.equal(res.status, 200);
  return (await res.json()).providers;
}

Deno.test("runtime/status lists a provider whose host a reload could not register, UNAVAILABLE with no devices", async () => {
  await using r = await sims();
  const rt = r.kernel;
  await using server = await serveKernelApi(rt);
  refuseRegistration(rt.registry, "sim1");
  const report = await rt.reload(withEntryChanged(rt.config, "sim1"));
  assert.match(
    report.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);

  const providers = await statusProviders(server.port);
  const sim0 = rt.registry.host("sim0")!;
  assert.deepEqual(providers, [
    { provider_id: "sim0", state: "AVAILABLE", device_count: sim0.devices.length },
    { provider_id: "sim1", state: "UNAVAILABLE", device_count: 0 },
  ]);
  // As GET /v0/providers/health lists them.
  assert.deepEqual(
    rt.providerHealth().map((p) => [p.provider_id, p.state, p.device_count]),
    providers.map((p) => [p.provider_id, p.state, p.device_count]),
  );
});

Deno.test("runtime/status lists a provider a reload is restarting, before its new host is registered", async () => {
  // `slow` takes 4 s to exit once its stdin closes: the reload that removes it starts sim1's new
  // process only then, after it took sim1's old one out.
  await using r = await sims([await slowToExit("status-replacing-")]);
  const rt = r.kernel;
  await using server = await serveKernelApi(rt);
  const { reload } = await reloadIntoWindow(rt);
  const providers = await statusProviders(server.port);
  assert.equal(rt.registry.host("sim1"), undefined, "read within the window");
  assert.deepEqual(providers.map((p) => [p.provider_id, p.state, p.device_count]), [
    ["sim0", "AVAILABLE", rt.registry.host("sim0")!.devices.length],
    ["sim1", "UNAVAILABLE", 0],
  ]);
  const report = await reload;
  assert.deepEqual(report.providers.restarted, ["sim1"], JSON.stringify(report));
});

Deno.test("runtime/status lists the providers in the configuration file's order, also one a reload failed to start", async () => {
  await using r = await sims([inertSim("sim2")]);
  const rt = r.kernel;
  await using server = await serveKernelApi(rt);
  const broken = await rt.reload(withUnstartable(rt.config, "sim1"));
  assert.match(broken.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  const providers = await statusProviders(server.port);
  assert.deepEqual(providers.map((p) => [p.provider_id, p.state]), [
    ["sim0", "AVAILABLE"],
    ["sim1", "UNAVAILABLE"],
    ["sim2", "AVAILABLE"],
  ]);
});
