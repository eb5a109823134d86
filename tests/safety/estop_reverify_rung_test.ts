/**
 * The audit record of a re-verification (a provider that came back while latched was brought to
 * the safe state, then its expectations read back) names the rung its securing calls ran with,
 * whatever a reload of safety.safe_state set between those calls and the read-back; and counts
 * the calls of every securing run of a provider back twice while it waits, a failed one too.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, expectation, plantProvider } from "./_fixture.ts";

const safety = {
  expect: [expectation("plant/plant0/fan_duty", { equals: 0 }, 0)],
  verifyTimeoutMs: 300,
};

/**
 * plant (restarted after 50 ms) and slow, whose ladder call holds the stop (the re-verification
 * waits for it) for `slowMs`; hooks on both.
 */
function latchRig(o: {
  plantLatencyMs?: number;
  slowMs: number;
  slowTimeoutMs?: number;
  plantMaxAttempts?: number;
}) {
  const plantEntry = plantProvider("plant", {
    restartBackoffMs: 50,
    ...(o.plantLatencyMs === undefined ? {} : { latencyMs: o.plantLatencyMs }),
  });
  return rig({
    providers: [
      o.plantMaxAttempts === undefined ? plantEntry : {
        ...plantEntry,
        restartPolicy: { ...plantEntry.restartPolicy, maxAttempts: o.plantMaxAttempts },
      },
      plantProvider("slow", {
        latencyMs: o.slowMs,
        ...(o.slowTimeoutMs === undefined ? {} : { timeoutMs: o.slowTimeoutMs }),
      }),
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
}

Deno.test("Estop re-verification is audited with the rung of its securing calls, not the one a reload set meanwhile", async () => {
  await using r = await latchRig({ slowMs: 3000 });
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

Deno.test("Estop re-verification of a provider back twice while it waits counts both securing runs' calls, the failed one too", async () => {
  // Its securing call takes 1.5 s; slow's ladder call holds the stop for 12 s.
  await using r = await latchRig({
    plantLatencyMs: 1500,
    slowMs: 12_000,
    slowTimeoutMs: 20_000,
    plantMaxAttempts: 5,
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  const pid0 = r.kill("plant");
  await waitFor("plant down", () => !plant.available);
  const stop = rt.estop.trigger("while plant is down");
  let stopped = false;
  void stop.then(() => (stopped = true));
  await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid0, 20_000);
  // Its securing call is in flight (1.5 s): the provider crashes under it (the call fails).
  await waitFor(
    "plant securing",
    () => r.lines.some((l) => l.includes("provider plant is AVAILABLE again")),
  );
  await new Promise((res) => setTimeout(res, 300));
  const pid1 = r.kill("plant");
  await waitFor("plant down again", () => !plant.available);
  await waitFor("plant back again", () => plant.available && plant.session!.pid !== pid1, 20_000);
  await waitFor("the second securing call answered", async () => {
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    return page.entries.some((e) =>
      e.action === "call" && e.device_handle === "plant/plant0" && e.outcome === "accepted"
    );
  }, 20_000);
  // Both runs joined the one re-verification still waiting for the stop's ladder.
  assert.equal(stopped, false, "the stop ended before the provider was back twice (slow machine)");
  await stop;
  const record = await waitFor("the re-verification audited", async () => {
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    return page.entries.find((e) =>
      e.action === "estop" &&
      (e.args as { reason?: string }).reason === "available while latched"
    );
  }, 20_000);
  const result = record.result as { actions: number; actions_failed: number };
  assert.equal(result.actions, 2);
  assert.equal(result.actions_failed, 1);
  // "accepted (or failed when a call failed)": the first run's call failed under the crash.
  assert.equal(record.outcome, "failed");
});
