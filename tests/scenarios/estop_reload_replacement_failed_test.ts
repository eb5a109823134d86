/**
 * A configuration reload restarts a provider (its entry changed) and its replacement does not come
 * up: its process cannot be started (listed down with why until the next reload), or it is not
 * registered at all (a host listener failed). Its entry is in the configuration file all along, so
 * the devices it listed before -- which the e-stop ladder is to secure and cannot reach -- are
 * named in `estop.unverified_reasons` with why: its provider failed to start, never "no provider
 * sim1 is configured" (docs/safety.md, "Verified safe state"). Real child processes: the inert
 * simulated providers.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { refuseRegistration } from "../helpers/unregistered.ts";
import { inertSim } from "../safety/_fixture.ts";
import { failedStartText } from "../../src/providers/mod.ts";

/** The reasons status gives for sim1's devices. */
function reasonsOfSim1(s: { unverified_reasons: { device_handle: string; reason: string }[] }) {
  return s.unverified_reasons.filter((u) => u.device_handle.startsWith("sim1/"));
}

Deno.test("Estop status names the devices of a provider whose reload replacement cannot start with why: it failed to start", async () => {
  await using r = await rig({
    programs: false,
    providers: [inertSim("sim0"), inertSim("sim1")],
    safety: { zeroIsSafe: true },
  });
  const rt = r.kernel;
  const sim1 = rt.config.providers.find((p) => p.id === "sim1")!;
  const report = await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...sim1, command: "/nonexistent/provider" }],
  });
  assert.match(report.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  const reasons = reasonsOfSim1(rt.estop.status());
  assert.ok(reasons.length > 0, "its devices listed before are named");
  for (const { device_handle, reason } of reasons) {
    assert.match(
      reason,
      /^no longer listed by its provider, which failed to start at a configuration reload \(cannot start provider 'sim1' \("\/nonexistent\/provider"\): Failed to spawn: /,
      device_handle,
    );
  }
});

Deno.test("Estop status names the devices of a provider whose reload replacement is not registered with why: it failed to start, not 'not configured'", async () => {
  await using r = await rig({
    programs: false,
    providers: [inertSim("sim0"), inertSim("sim1")],
    safety: { zeroIsSafe: true },
  });
  const rt = r.kernel;
  // A host listener that fails refuses the registration of sim1's replacement.
  refuseRegistration(rt.registry, "sim1");
  const sim1 = rt.config.providers.find((p) => p.id === "sim1")!;
  const report = await rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, { ...sim1, timeoutMs: sim1.timeoutMs + 1 }],
  });
  assert.match(
    report.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);
  const reasons = reasonsOfSim1(rt.estop.status());
  assert.ok(reasons.length > 0, "its devices listed before are named");
  for (const { device_handle, reason } of reasons) {
    assert.equal(
      reason,
      "its provider sim1 failed to start at a configuration reload (Provider sim1 not " +
        "registered: a host listener failed: listener broke)",
      device_handle,
    );
  }
});
