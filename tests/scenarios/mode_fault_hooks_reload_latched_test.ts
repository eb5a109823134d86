/**
 * While the e-stop latch holds, the hooks into FAULT made again for a provider leave out the calls
 * the e-stop's ladder made for it -- when the ladder made them for the same occasion (the provider
 * came back). A reload that changes a hook call into FAULT long after the provider came back must
 * make the new call, even if the ladder once made a call like it: the hooks made since may have
 * undone it. Real child processes (the plant provider, restarted by its supervisor).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, fanIntoFault, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("A reload while latched that changes a hook call into FAULT makes it, though the ladder made a call like it when the provider came back", async () => {
  await using r = await rig({
    providers: [plantProvider("plant", { restartBackoffMs: 50 })],
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      // In FAULT the fan runs at half (a cool-down), after the ladder stopped it.
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
  });
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  await rt.estop.trigger("operator");
  assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.5);
  // The plant restarts while latched: the ladder stops the fan, then the hook runs it at half.
  const pid = r.kill("plant");
  await waitFor("plant restarted", () => plant.available && plant.session!.pid !== pid, 20_000);
  await waitFor(
    "the hook call into FAULT made again",
    () => r.lines.some((l) => l.includes("provider plant is AVAILABLE again; making its 1 hook")),
  );
  await waitFor(
    "fan at half again",
    async () => await readSignal(rt, "plant", "plant0", "fan_duty") === 0.5,
  );
  const hookCalls = async () =>
    (await rt.audit.query({ limit: 100, origin: "hook" })).entries.filter((e) =>
      e.action === "call" && e.function === "set_fan" && e.outcome !== "refused"
    ).reduce((n, e) => n + e.count, 0);
  const before = await hookCalls();
  // The operator fixes the hook: in FAULT the fan is off.
  const report = await rt.reload({
    ...rt.config,
    automation: {
      ...rt.config.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0)] },
    },
  });
  assert.ok(report.applied.includes("automation.mode_transition_hooks"), JSON.stringify(report));
  // Handled: left out as made by the ladder (the defect), or made and answered.
  await waitFor(
    "the changed hook call handled",
    async () =>
      r.lines.some((l) => l.includes("changed by a reload; the e-stop's ladder made its hook")) ||
      await hookCalls() > before,
  );
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0,
    "the changed hook call into FAULT is made",
  );
});

Deno.test("A reload while latched that changes a provider's ladder calls makes its hook calls into FAULT again after them, as a stop does", async () => {
  await using r = await rig({
    providers: [plantProvider("plant")],
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      // In FAULT the fan runs at half (a cool-down), after the ladder stopped it.
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
  });
  const rt = r.kernel;
  await rt.estop.trigger("operator");
  assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.5, "ladder, then hooks");
  const hookCalls = async () =>
    (await rt.audit.query({ limit: 100, origin: "hook" })).entries.filter((e) =>
      e.action === "call" && e.function === "set_fan" && e.outcome !== "refused"
    ).reduce((n, e) => n + e.count, 0);
  const before = await hookCalls();
  // The ladder gains a call for the plant: the e-stop secures it again with the new ladder.
  const report = await rt.reload({
    ...rt.config,
    safety: {
      ...rt.config.safety,
      safeState: {
        ...rt.config.safety.safeState,
        hooks: [
          call("plant/plant0", "set_heater", { enabled: false }),
          call("plant/plant0", "set_fan", { duty: { double: 0 } }),
        ],
      },
    },
  });
  assert.ok(report.applied.includes("safety"), JSON.stringify(report));
  assert.equal(report.estopActions, 2, JSON.stringify(report));
  // The hooks into FAULT follow the ladder's calls, as after a stop (bounded: none on the parent).
  await waitFor("the hook call into FAULT made again", async () => await hookCalls() > before, 3000)
    .catch(() => {});
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0.5,
    "the state a stop leaves: the ladder's calls, then the hooks into FAULT",
  );
});

Deno.test("A reload that changes a provider's ladder calls while the stop's ladder still runs leaves it as a stop does: ladder, then hooks", async () => {
  await using r = await rig({
    // Each actuating call answers 1 s after it arrived, one at a time.
    providers: [plantProvider("plant", { latencyMs: 1000 })],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
  });
  const rt = r.kernel;
  let answered = false;
  const stop = rt.estop.trigger("operator").finally(() => answered = true);
  // While the ladder's call runs, the ladder gains a call for the plant: secured again after it.
  const report = await rt.reload({
    ...rt.config,
    safety: {
      ...rt.config.safety,
      safeState: {
        ...rt.config.safety.safeState,
        hooks: [
          call("plant/plant0", "set_heater", { enabled: false }),
          call("plant/plant0", "set_fan", { duty: { double: 0 } }),
        ],
      },
    },
  });
  assert.ok(report.applied.includes("safety"), JSON.stringify(report));
  const result = await stop;
  assert.deepEqual(result.hook_failures, []);
  assert.equal(answered, true);
  const hookCalls = async () =>
    (await rt.audit.query({ limit: 100, origin: "hook" })).entries.filter((e) =>
      e.action === "call" && e.function === "set_fan" && e.outcome !== "refused"
    ).reduce((n, e) => n + e.count, 0);
  // The stop's own hook call, then the one after the plant's new ladder calls (bounded: the
  // parent makes only the first).
  await waitFor("the hook call into FAULT made again", async () => await hookCalls() >= 2, 5000)
    .catch(() => {});
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0.5,
    "the state a stop leaves: the ladder's calls, then the hooks into FAULT",
  );
});
