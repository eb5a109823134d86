/**
 * A reload while latched that changes both the hooks into FAULT and the e-stop's ladder leaves
 * the machine as every other stop path does: the new ladder's calls, then the new hook calls into
 * FAULT. Real child process (the plant provider); the order is read from the audit trail.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, fanIntoFault, plantProvider, readSignal } from "../safety/_fixture.ts";

Deno.test("A latched reload changing both the hooks into FAULT and the ladder makes the ladder's calls first, then the hooks", async () => {
  await using r = await rig({
    providers: [plantProvider("plant")],
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
  });
  const rt = r.kernel;
  await rt.estop.trigger("operator");
  assert.equal(await readSignal(rt, "plant", "plant0", "fan_duty"), 0.5, "ladder, then hooks");
  const mark = (await rt.audit.query({ limit: 1000 })).entries.length;
  const report = await rt.reload({
    ...rt.config,
    automation: {
      ...rt.config.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.7)] },
    },
    safety: {
      ...rt.config.safety,
      safeState: {
        ...rt.config.safety.safeState,
        hooks: [
          call("plant/plant0", "set_heater", { enabled: false }),
          call("plant/plant0", "set_fan", { duty: { double: 0.1 } }),
        ],
      },
    },
  });
  assert.ok(report.applied.includes("safety"), JSON.stringify(report));
  assert.ok(report.applied.includes("automation.mode_transition_hooks"), JSON.stringify(report));
  const fanCalls = async () =>
    (await rt.audit.query({ limit: 1000 })).entries.slice(mark).filter((e) =>
      e.action === "call" && e.function === "set_fan" && e.outcome !== "refused"
    );
  await waitFor(
    "the new hook call into FAULT made",
    async () => (await fanCalls()).some((e) => e.origin.kind === "hook"),
  );
  // Bounded: on the parent the ladder's call lands last and the fan stays at its duty.
  await waitFor(
    "fan at the new hook's duty",
    async () => await readSignal(rt, "plant", "plant0", "fan_duty") === 0.7,
    3000,
  ).catch(() => {});
  const order = (await fanCalls()).map((e) => `${e.origin.kind}:${JSON.stringify(e.args)}`);
  assert.ok(
    order.length > 0 && !order[0]!.startsWith("hook"),
    `the new ladder's calls come before the new hook calls into FAULT: ${order.join(" | ")}`,
  );
  assert.equal(
    order.filter((o) => o.startsWith("hook")).length,
    1,
    `the changed hook call into FAULT is made once: ${order.join(" | ")}`,
  );
  assert.equal(
    await readSignal(rt, "plant", "plant0", "fan_duty"),
    0.7,
    "the state a stop leaves: the ladder's calls, then the hooks into FAULT",
  );
});
