/**
 * A reload that starts a provider while the e-stop is latched waits for the e-stop's securing run
 * of it (the report counts its calls). A securing run that fails is the e-stop's to report (one
 * ERROR line) and to redo at the provider's next return (src/safety/estop.ts): the provider did
 * start, so the providers section applies, its note names the failure, and each device of the
 * providers it started is polled once before the next sections apply -- an alarm the same reload
 * adds on one of their signals judges a sample, not "no sample yet". Real: the kernel over
 * simulated provider processes; the fault is the one estop.ts contains, a plan that cannot be made
 * (its plan port throws while the test says so). The same holds for a reload that changes the
 * ladder of a provider up while latched (its securing run made again under the new ladder): the
 * ladder is in force, so the safety section applied, and the configuration in effect has it.
 */
import assert from "node:assert/strict";
import { summarize } from "../../src/app/reloader.ts";
import { recordEvents, startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { call, inertSim } from "../safety/_fixture.ts";
import type { Config } from "../../src/config/mod.ts";

Deno.test("Kernel.reload adding a provider while latched whose securing run fails: applied, the failure noted, its devices polled", async () => {
  const protections = alarmsConfig(
    `
alarms:
  - { id: sim1_hot, signal: sim1/tempctl0/tc1_temp, hihi: 500 }
`,
    ["sim0", "sim1"],
  );
  // No regular poll before the reload ends: only the providers section's own poll samples sim1.
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0")], pollingIntervalMs: 60_000 }),
  );
  const events = recordEvents(rt);
  const plan = rt.estop.plan.bind(rt.estop);
  const broken = { on: false };
  rt.estop.plan = () => {
    if (broken.on) throw new Error("plan port failed");
    return plan();
  };
  try {
    await rt.estop.trigger("test");
    broken.on = true;
    const report = await rt.reload({
      ...rt.config,
      providers: [...rt.config.providers, simProvider("sim1")],
      alarms: protections.alarms,
    });
    broken.on = false;
    assert.deepEqual(report.providers.added, ["sim1"]);
    // sim1 was polled by the reload: the alarm added with it judged a sample.
    assert.ok((rt.cache.device("sim1", "tempctl0")?.lastPollMono ?? 0) > 0, "sim1 polled");
    assert.equal(rt.alarms.alarm("sim1_hot").quality, "OK");
    const raises = events.events.filter((e) => e.kind === "alarm" && e.transition === "raise");
    assert.deepEqual(raises.map((e) => e.kind === "alarm" && e.alarm_id), []);
    // The provider started: the section applied; the report (and its summary line) names the
    // securing run that failed.
    assert.deepEqual(report.failed, [], JSON.stringify(report));
    assert.ok(report.applied.includes("providers"), JSON.stringify(report));
    assert.equal(report.estopActions, 0);
    assert.equal(report.estopFailures.length, 1, JSON.stringify(report));
    assert.match(report.estopFailures[0]!, /securing provider sim1 .*failed: plan port failed/);
    assert.match(summarize(report), /securing provider sim1 .*failed: plan port failed/);
  } finally {
    broken.on = false;
    events.stop();
    await rt.stop();
  }
});

Deno.test("Kernel.reload changing the e-stop's ladder while latched whose securing run fails: safety applied (in force and in effect), the failure noted", async () => {
  // The e-stop zeroes sim0; the file gives it a ladder call instead (its calls to sim0 change).
  const ladder = [
    call("sim0/motorctl0", "set_motor_duty", { motor_index: 2, duty: { double: 0 } }),
  ];
  const rt = await startRuntime(
    testConfig({ providers: [inertSim("sim0")], safety: { zeroIsSafe: true } }),
  );
  const plan = rt.estop.plan.bind(rt.estop);
  const broken = { on: false };
  rt.estop.plan = () => {
    if (broken.on) throw new Error("plan port failed");
    return plan();
  };
  // The plan port fails once the new ladder is in force: the re-securing run of sim0 (begun by
  // reconfigure, a microtask later) cannot make its plan.
  const reconfigure = rt.estop.reconfigure.bind(rt.estop);
  rt.estop.reconfigure = (...args) => {
    const runs = reconfigure(...args);
    broken.on = true;
    return runs;
  };
  try {
    await rt.estop.trigger("test");
    const next: Config = {
      ...rt.config,
      safety: { present: true, safeState: { ...rt.config.safety.safeState, hooks: ladder } },
    };
    const report = await rt.reload(next);
    broken.on = false;
    // The e-stop runs the new ladder: the section applied, and the configuration in effect says
    // so (a section reported failed keeps its old value there, and the next reload would judge
    // its weakenings against a ladder no longer run).
    assert.equal(rt.estop.plan().rung, "hooks");
    assert.deepEqual(rt.config.safety, next.safety);
    assert.deepEqual(report.failed, [], JSON.stringify(report));
    assert.ok(report.applied.includes("safety"), JSON.stringify(report));
    assert.equal(report.estopFailures.length, 1, JSON.stringify(report));
    assert.match(report.estopFailures[0]!, /securing provider sim0 .*failed: plan port failed/);
    assert.match(summarize(report), /securing provider sim0 .*failed: plan port failed/);
  } finally {
    broken.on = false;
    await rt.stop();
  }
});
