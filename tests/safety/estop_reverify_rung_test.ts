/**
 * The audit record of a re-verification (a provider that came back while latched was brought to
 * the safe state, then its expectations read back) names the rung its securing calls ran with,
 * whatever a reload of safety.safe_state set between those calls and the read-back.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, expectation, plantProvider } from "./_fixture.ts";

Deno.test("Estop re-verification is audited with the rung of its securing calls, not the one a reload set meanwhile", async () => {
  const safety = {
    expect: [expectation("plant/plant0/fan_duty", { equals: 0 }, 0)],
    verifyTimeoutMs: 300,
  };
  await using r = await rig({
    providers: [
      plantProvider("plant", { restartBackoffMs: 50 }),
      // Its ladder call holds the stop (the re-verification waits for it) for 3 s.
      plantProvider("slow", { latencyMs: 3000 }),
    ],
    safety: {
      ...safety,
      hooks: [
        call("slow/plant0", "set_heater", { enabled: false }),
        call("plant/plant0", "set_heater", { enabled: false }),
      ],
      zeroIsSafe: false,
    },
    pollingIntervalMs: 100,
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  const pid = r.kill("plant");
  await waitFor("plant down", () => !plant.available);
  const stop = rt.estop.trigger("while plant is down");
  await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid, 20_000);
  // The securing call reached the new process while the slow ladder call still runs.
  await waitFor(
    "plant secured",
    () => r.lines.some((l) => l.includes("provider plant is AVAILABLE again")),
  );
  await waitFor("plant's securing call answered", async () => {
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    return page.entries.some((e) =>
      e.action === "call" && e.device_handle === "plant/plant0" && e.outcome === "accepted"
    );
  });
  // A reload of safety.safe_state before the read-back (it waits for the stop).
  rt.estop.reconfigure({ ...safety, setpoints: [], hooks: [], zeroIsSafe: true });
  const result = await stop;
  assert.equal(result.software_safe_state, "hooks");
  const record = await waitFor("the re-verification audited", async () => {
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    return page.entries.find((e) =>
      e.action === "estop" && e.outcome !== "refused" &&
      (e.args as { reason?: string }).reason === "available while latched"
    );
  });
  assert.deepEqual(record.origin, { kind: "estop", rung: "hooks", cause: "api" });
});
