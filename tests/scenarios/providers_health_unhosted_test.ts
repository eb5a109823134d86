/**
 * GET /v0/providers/health lists every configured provider, also one no host is registered under:
 * a reload could not register it (a host listener failed), or a reload is starting it and its host
 * is not registered yet. It is listed DOWN, as a provider a reload failed to start, with the
 * reason in `start_error` (docs/http-api.md). Real child processes (the inert simulated providers,
 * the programmable one to hold a reload's window open) and real loopback HTTP.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { ProviderHealthView } from "../../src/common/mod.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { programmableProvider } from "../helpers/programmable_provider.ts";
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

/** What the health answer says of a provider that did not come up. */
function downPart(p: ProviderHealthView | undefined) {
  return p === undefined ? undefined : {
    state: p.state,
    lifecycle_state: p.lifecycle_state,
    last_seen_ago_ms: p.last_seen_ago_ms,
    uptime_seconds: p.uptime_seconds,
    device_count: p.device_count,
    devices: p.devices,
    reported: p.reported,
    start_error: p.start_error,
  };
}

function down(startError: string) {
  return {
    state: "UNAVAILABLE",
    lifecycle_state: "DOWN",
    last_seen_ago_ms: null,
    uptime_seconds: 0,
    device_count: 0,
    devices: [],
    reported: null,
    start_error: startError,
  };
}

Deno.test("providers/health lists a provider whose host a reload could not register, DOWN with why", async () => {
  await using r = await sims();
  const rt = r.kernel;
  await using server = await serveKernelApi(rt);
  // A host listener that fails refuses the registration of sim1's replacement.
  refuseRegistration(rt.registry, "sim1");
  const first = await rt.reload(withEntryChanged(rt.config, "sim1"));
  assert.match(
    first.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);

  // apiFetch: the answer is checked against the OpenAPI document as well.
  const res = await apiFetch(`http://127.0.0.1:${server.port}/v0/providers/health`);
  assert.equal(res.status, 200);
  const providers: ProviderHealthView[] = (await res.json()).providers;
  assert.deepEqual(providers.map((p) => p.provider_id), ["sim0", "sim1"]);
  const sim1 = providers.find((p) => p.provider_id === "sim1");
  assert.deepEqual(
    downPart(sim1),
    down(
      "provider sim1 failed to start at a configuration reload (Provider sim1 not registered: " +
        "a host listener failed: listener broke)",
    ),
  );
  assert.equal(providers[0]!.start_error, null);
  // Nothing supervises it; its entry's restart policy is said.
  const policy = rt.config.providers.find((p) => p.id === "sim1")?.restartPolicy;
  assert.deepEqual(sim1!.supervision, {
    enabled: policy?.enabled ?? false,
    attempt_count: 0,
    max_attempts: policy?.enabled === true ? policy.maxAttempts : 0,
    crash_detected: false,
    circuit_open: false,
    next_restart_in_ms: null,
  });
});

Deno.test("providers/health lists a provider a reload is starting, before its host is registered", async () => {
  await using r = await sims([await slowToExit("health-unhosted-")]);
  const rt = r.kernel;
  const good = rt.config.providers;
  const broken = withUnstartable(rt.config, "sim1");
  await rt.reload(broken);
  // Fixed, and slow removed: no host of sim1 until slow has exited; its entry is in the file.
  const fixed = rt.reload({ ...rt.config, providers: good.filter((p) => p.id !== "slow") });
  await waitFor(
    "the host listed down taken out, sim1 not registered again yet",
    () => rt.registry.host("sim1") === undefined && rt.registry.starting("sim1"),
    10_000,
  );
  const views = rt.providerHealth();
  assert.equal(rt.registry.host("sim1"), undefined, "read within the window");
  assert.deepEqual(
    downPart(views.find((p) => p.provider_id === "sim1")),
    down("provider sim1 is being started by a configuration reload"),
  );
  const report = await fixed;
  assert.deepEqual(report.providers.added, ["sim1"], JSON.stringify(report));
});

Deno.test("providers/health lists a provider a reload is restarting (its entry changed), before its new host is registered: DOWN, being restarted", async () => {
  // `slow` takes 4 s to exit once its stdin closes: the reload that removes it starts sim1's new
  // process only then, after it took sim1's old one out.
  await using r = await sims([await slowToExit("health-replacing-")]);
  const rt = r.kernel;
  const { reload } = await reloadIntoWindow(rt);
  const views = rt.providerHealth();
  assert.equal(rt.registry.host("sim1"), undefined, "read within the window");
  assert.deepEqual(views.map((p) => p.provider_id), ["sim0", "sim1"]);
  assert.deepEqual(
    downPart(views.find((p) => p.provider_id === "sim1")),
    down("provider sim1 is being restarted by a configuration reload"),
  );
  const report = await reload;
  assert.deepEqual(report.providers.restarted, ["sim1"], JSON.stringify(report));
});

Deno.test("providers/health lists every provider in the configuration file's order, also one a reload failed to start or could not register", async () => {
  await using r = await sims([inertSim("sim2")]);
  const rt = r.kernel;
  const ids = () => rt.providerHealth().map((p) => [p.provider_id, p.lifecycle_state]);
  const good = rt.config.providers;
  // sim1's new process cannot start: its host stays listed down until the next reload.
  const broken = await rt.reload(withUnstartable(rt.config, "sim1"));
  assert.match(broken.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  assert.deepEqual(ids(), [["sim0", "RUNNING"], ["sim1", "DOWN"], ["sim2", "RUNNING"]]);

  // sim1's host cannot be registered (a host listener fails): no host at all.
  refuseRegistration(rt.registry, "sim1");
  const refused = await rt.reload(withEntryChanged({ ...rt.config, providers: good }, "sim1"));
  assert.match(
    refused.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);
  assert.deepEqual(ids(), [["sim0", "RUNNING"], ["sim1", "DOWN"], ["sim2", "RUNNING"]]);
});

Deno.test("providers/health shows in held_claims the claims of a provider's old process a reload restarting it is still stopping: they count until it has exited", async () => {
  const KEY = "i2c:/dev/i2c-1:0x61";
  // `holder` takes 4 s to exit once its stdin closes: the reload's window stays open meanwhile.
  const file = `${tempDir("health-retiring-claims-")}/holder.json`;
  await Deno.writeTextFile(
    file,
    JSON.stringify({
      exitDelayMs: 4000,
      devices: { dcmt_0: { signals: [], tags: { "anolis.claim": KEY } }, probe: { signals: [] } },
    }),
  );
  await using r = await sims([programmableProvider("holder", file)]);
  const rt = r.kernel;
  await using server = await serveKernelApi(rt);
  const holder = () =>
    apiFetch(`http://127.0.0.1:${server.port}/v0/providers/health`).then(async (res) => {
      assert.equal(res.status, 200);
      const providers: ProviderHealthView[] = (await res.json()).providers;
      return providers.find((p) => p.provider_id === "holder")!;
    });
  assert.deepEqual((await holder()).held_claims, []);
  const reload = rt.reload({
    ...rt.config,
    providers: rt.config.providers.map((p) =>
      p.id === "holder" ? { ...p, timeoutMs: p.timeoutMs + 1 } : p
    ),
  });
  await waitFor(
    "holder's old host taken out, its process still ending",
    () => rt.registry.host("holder") === undefined && rt.registry.retiringHosts().length === 1,
    10_000,
    0,
  );
  const retiring = await holder();
  assert.equal(rt.registry.retiringHosts().length, 1, "read within the window");
  assert.equal(
    retiring.start_error,
    "provider holder is being restarted by a configuration reload",
  );
  assert.deepEqual(retiring.held_claims, [{ device_id: "dcmt_0", claims: [KEY] }]);
  const report = await reload;
  assert.deepEqual(report.providers.restarted, ["holder"], JSON.stringify(report));
  // The new process lists dcmt_0: its claim is the device's own again, none held apart.
  const back = await holder();
  assert.deepEqual(back.devices.map((d) => [d.device_id, d.claims]), [
    ["dcmt_0", [KEY]],
    ["probe", []],
  ]);
  assert.deepEqual(back.held_claims, []);
});
