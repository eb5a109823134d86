/**
 * While a configuration reload's provider is registered but not up yet (its new process still
 * starting), the e-stop's `unverified_reasons` say why its devices are not listed in the words the
 * device conditions use for it ("… is being restarted by a configuration reload"), not in its
 * lifecycle's ("which is unavailable (DOWN)"): one wording, reloadStartWords. Real child
 * processes: the inert simulated providers and the programmable one whose Hello is never answered.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { programmableProvider, T } from "../helpers/programmable_provider.ts";
import { inertSim } from "./_fixture.ts";

Deno.test("Estop status while a reload restarts a provider whose new process is registered but not up: unverified_reasons say it is being restarted, as the device conditions do", async () => {
  const dir = tempDir("estop-reload-start-words-");
  const hangFile = `${dir}/hang.json`;
  await Deno.writeTextFile(
    hangFile,
    JSON.stringify({
      hello: { hang: true },
      devices: { motorctl0: { signals: [{ id: "x", type: T.DOUBLE }] } },
    }),
  );
  await using r = await rig({
    programs: false,
    providers: [inertSim("sim0"), inertSim("sim1")],
  });
  const rt = r.kernel;
  const before = rt.registry.host("sim1")!;
  // sim1's entry changed (restarted): its new process never answers Hello while the test looks.
  const reload = rt.reload({
    ...rt.config,
    providers: [rt.config.providers[0]!, programmableProvider("sim1", hangFile)],
  });
  try {
    await waitFor(
      "sim1's new host registered, not up",
      () => {
        const h = rt.registry.host("sim1");
        return h !== undefined && h !== before && !h.available;
      },
      10_000,
    );
    const restarting = "provider sim1 is being restarted by a configuration reload";
    assert.equal(rt.outages.condition("sim1", "motorctl0").reason, restarting);
    const ofSim1 = rt.estop.status().unverified_reasons.filter((u) =>
      u.device_handle.startsWith("sim1/")
    );
    assert.ok(ofSim1.length > 0, "sim1's devices listed before are named");
    // Before: "no longer listed by its provider, which is unavailable (DOWN)".
    assert.deepEqual(
      ofSim1.map((u) => u.reason),
      ofSim1.map(() =>
        "no longer listed by its provider, which is being restarted by a configuration reload"
      ),
    );
    assert.ok(rt.registry.host("sim1") !== before && !rt.registry.host("sim1")!.available);
  } finally {
    await rt.stop();
    await reload.catch(() => {});
  }
});
