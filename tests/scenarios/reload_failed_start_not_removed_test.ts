/**
 * A reload that changes sim1's entry so that its new process cannot start, then a second reload
 * that leaves that entry as it is (it fails again) or fixes it. sim1's entry is in the
 * configuration file all along: the second reload takes out the host the first one left listed
 * down, but sim1 is not removed. A device-loss latch is released only by the operator's
 * documented acts -- entering AUTO with the device up, or a reload that removes sim1 from the
 * file -- and the e-stop keeps naming the devices sim1 listed before (unverified, and their
 * actuating functions uncovered): docs/safety.md, section 5 and "Verified safe state". In the
 * window of the second reload, between its taking out that host and its registering sim1 again,
 * the e-stop and the device conditions say that reload is starting sim1, not that it is not
 * configured nor that a reload failed to start it. One whose host a reload could not register and
 * a later reload drops from the file is gone: the latch, the e-stop's status (over HTTP) and its
 * plan forget it, also when the file left equals the entries in effect. Real child processes: the
 * inert simulated providers (and the programmable one, to hold that window open).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { DeviceConditionChange } from "../../src/state/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { refuseRegistration, serveKernelApi, withEntryChanged } from "../helpers/unregistered.ts";
import { inertSim } from "../safety/_fixture.ts";
import { automationOptions } from "./automation_helpers.ts";
import { slowToExit } from "../helpers/reload_window.ts";
import { failedStartText } from "../../src/providers/mod.ts";
import { withUnstartable } from "../helpers/sim_config.ts";

/**
 * How far an incident's date may lie from the test's Date.now() reads around the event although
 * right: it counts a monotonic distance (rounded to the ms) back from a whole-ms wall clock read.
 */
const DATE_RESOLUTION_MS = 1;
/**
 * How much earlier still it may lie: the wall clock is read as the change is told and the
 * monotonic one after (the distance counted back); a thread preempted between the two reads on a
 * loaded machine (a scheduler slice is some ms) counts that pause too (CI: 4 ms early once).
 */
const PREEMPTION_SLACK_MS = 50;

const MOTOR = "sim1/motorctl0";

/** Why the e-stop cannot verify sim1's motor controller before the fixed start of the reason. */
const NO_LONGER_LISTED = "no longer listed by its provider, which failed to start at a " +
  "configuration reload (cannot start provider 'sim1' (\"/nonexistent/provider\")";
/** Why the e-stop cannot verify a listed device (no expect entry covers it: rung 3). */
const NO_EXPECT = "no safety.safe_state.expect entry covers it";

/**
 * The latch and e-stop as status shows them for sim1's motor controller: latched, why it is
 * unverified (its reason cut at the start error's details; undefined: not named) and whether its
 * actuating functions are uncovered.
 */
function sim1Motor(rt: Kernel) {
  const estop = rt.estop.status();
  const reason = estop.unverified_reasons.find((u) => u.device_handle === MOTOR)?.reason;
  return {
    latched: rt.automation!.status().device_loss_latched.includes(MOTOR),
    unverified: reason?.startsWith(NO_LONGER_LISTED) ? NO_LONGER_LISTED : reason,
    uncovered: estop.plan.uncovered.some((u) => u.device_handle === MOTOR),
  };
}

/**
 * A rig with sim0 and sim1 (real children), automation on (no tree), rung 3 (zero is safe); and
 * `more` providers after them.
 */
async function sims(more: Config["providers"] = []) {
  const r = await rig({
    programs: false,
    ...automationOptions(null, {
      config: { providers: [inertSim("sim0"), inertSim("sim1"), ...more] },
    }),
    safety: { zeroIsSafe: true },
  });
  await r.kernel.modes.request("MANUAL");
  return r;
}

/** The file with sim1's command changed to one that does not exist. */
function withBrokenSim1(rt: Kernel): Config {
  return withUnstartable(rt.config, "sim1");
}

Deno.test("Reload: a provider whose restart failed to start is not removed by the next reload that keeps its entry", async () => {
  await using r = await sims();
  const rt = r.kernel;
  const broken = withBrokenSim1(rt);
  const first = await rt.reload(broken);
  assert.match(first.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  await waitFor("sim1's motor latched", () => sim1Motor(rt).latched);
  const lost = { latched: true, unverified: NO_LONGER_LISTED, uncovered: true };
  assert.deepEqual(sim1Motor(rt), lost);

  // The same file again: sim1 is started again and fails again; its entry never left the file.
  const second = await rt.reload(broken);
  assert.match(second.providers.failed.map(failedStartText).join(), /^sim1: cannot start provider/);
  assert.deepEqual(second.providers.removed, []);
  assert.deepEqual(sim1Motor(rt), lost);
  const released = r.lines.filter((l) => l.includes(`released "${MOTOR}"`));
  assert.deepEqual(released, [], "nothing released the latch");
});

Deno.test("Reload: a provider whose restart failed to start and a reload fixed stays latched until AUTO is entered", async () => {
  await using r = await sims();
  const rt = r.kernel;
  const good = rt.config;
  await rt.reload(withBrokenSim1(rt));
  await waitFor("sim1's motor latched", () => sim1Motor(rt).latched);

  // Fixed: sim1 comes up and lists its devices again; the latch stands until AUTO is entered.
  const fixed = await rt.reload(good);
  assert.deepEqual(fixed.providers.failed, []);
  assert.deepEqual(fixed.providers.added, ["sim1"]);
  await waitFor("sim1's motor polled", () => rt.cache.device("sim1", "motorctl0")?.available);
  assert.deepEqual(sim1Motor(rt), { latched: true, unverified: NO_EXPECT, uncovered: false });
  await rt.modes.request("AUTO");
  assert.equal(sim1Motor(rt).latched, false, "entering AUTO with it up releases it");

  // Removed from the file (outside AUTO): released, and the e-stop forgets its devices.
  await rt.modes.request("MANUAL");
  await rt.reload(withBrokenSim1(rt));
  await waitFor("sim1's motor latched", () => sim1Motor(rt).latched);
  const removed = await rt.reload({
    ...rt.config,
    providers: rt.config.providers.filter((p) => p.id !== "sim1"),
  });
  assert.deepEqual(removed.providers.failed, []);
  assert.deepEqual(sim1Motor(rt), { latched: false, unverified: undefined, uncovered: false });
});

Deno.test("Reload: a provider whose restart was not registered is not removed: its latch and the e-stop's devices stay", async () => {
  await using r = await sims();
  const rt = r.kernel;
  // A host listener that fails refuses the registration of sim1's replacement.
  refuseRegistration(rt.registry, "sim1");
  const changed = withEntryChanged(rt.config, "sim1");
  const first = await rt.reload(changed);
  assert.match(
    first.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.equal(rt.registry.host("sim1"), undefined);
  const lost = {
    latched: true,
    unverified: "its provider sim1 failed to start at a configuration reload (Provider sim1 " +
      "not registered: a host listener failed: listener broke)",
    uncovered: true,
  };
  assert.deepEqual(sim1Motor(rt), lost);

  // The same file again, the listener still failing: sim1 is still configured.
  const second = await rt.reload(changed);
  assert.match(
    second.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.deepEqual(sim1Motor(rt), lost);
  const released = r.lines.filter((l) => l.includes(`released "${MOTOR}"`));
  assert.deepEqual(released, [], "nothing released the latch");
});

Deno.test("Reload: while a reload starts again a provider the reload before failed to start, the e-stop and the device conditions say it is being started", async () => {
  // `slow` takes 4 s to exit once its stdin closes: the reload that removes it starts sim1 again
  // only then, after it took out the host the reload before left listed down.
  await using r = await sims([await slowToExit("reload-again-")]);
  const rt = r.kernel;
  const good = rt.config.providers;
  await rt.reload(withBrokenSim1(rt));
  await waitFor("sim1's motor latched", () => sim1Motor(rt).latched);
  assert.equal(sim1Motor(rt).unverified, NO_LONGER_LISTED);

  // Fixed, and slow removed: no host of sim1 until slow has exited; its entry is in the file.
  const fixed = rt.reload({ ...rt.config, providers: good.filter((p) => p.id !== "slow") });
  await waitFor(
    "the host listed down taken out, sim1 not registered again yet",
    () =>
      rt.registry.host("sim1") === undefined && rt.registry.configured("sim1") &&
      !rt.registry.replacing("sim1"),
    10_000,
  );
  const inWindow = sim1Motor(rt);
  const condition = rt.outages.condition("sim1", "motorctl0");
  assert.equal(rt.registry.host("sim1"), undefined, "read within the window");
  // This reload is starting it: not "a configuration reload failed to start it".
  assert.deepEqual(inWindow, {
    latched: true,
    unverified: "its provider sim1 is being started by a configuration reload",
    uncovered: true,
  });
  assert.deepEqual([condition.kind, condition.reason, condition.unconfigured], [
    "down",
    "provider sim1 is being started by a configuration reload",
    undefined,
  ]);
  const report = await fixed;
  assert.deepEqual(report.providers.added, ["sim1"], JSON.stringify(report));
});

/**
 * sim1's host not registered at a reload (a host listener fails), then a reload whose file drops
 * sim1 and adds `more`: sim1 is gone, as the API says it (real loopback HTTP) and as the kernel's
 * subsystems do.
 */
async function droppedAfterNotRegistered(more: Config["providers"]) {
  await using r = await sims();
  const rt = r.kernel;
  // The API on a real loopback socket, over the kernel's services.
  await using server = await serveKernelApi(rt);
  const get = async (path: string) => {
    const res = await fetch(`http://127.0.0.1:${server.port}${path}`);
    assert.equal(res.status, 200, path);
    return await res.json();
  };
  /** sim1's motor as the API says it: latched, why unverified (undefined: not named), uncovered. */
  const overHttp = async () => {
    const estop = (await get("/v0/runtime/status")).estop;
    return {
      latched: (await get("/v0/automation/status")).device_loss_latched.includes(MOTOR),
      unverified: estop.unverified_reasons.find(
        (u: { device_handle: string }) => u.device_handle === MOTOR,
      )?.reason,
      uncovered: estop.plan.uncovered.some(
        (u: { device_handle: string }) => u.device_handle === MOTOR,
      ),
    };
  };
  // A host listener that fails refuses the registration of sim1's replacement.
  refuseRegistration(rt.registry, "sim1");
  const changed = withEntryChanged(rt.config, "sim1");
  const first = await rt.reload(changed);
  assert.match(
    first.providers.failed.map(failedStartText).join(),
    /^sim1: Provider sim1 not registered/,
  );
  assert.deepEqual(await overHttp(), {
    latched: true,
    unverified: "its provider sim1 failed to start at a configuration reload (Provider sim1 " +
      "not registered: a host listener failed: listener broke)",
    uncovered: true,
  });

  // The file drops sim1: it is gone for good.
  const dropped = await rt.reload({
    ...changed,
    providers: [...changed.providers.filter((p) => p.id !== "sim1"), ...more],
  });
  assert.deepEqual(dropped.providers.failed, []);
  assert.deepEqual(await overHttp(), { latched: false, unverified: undefined, uncovered: false });
  assert.equal(rt.registry.configured("sim1"), false, "no longer configured");
  assert.deepEqual(sim1Motor(rt), { latched: false, unverified: undefined, uncovered: false });
  assert.ok(
    r.lines.some((l) => l.includes(`released "${MOTOR}": its provider is no longer configured`)),
    "the latch says why it let go",
  );
}

Deno.test("Reload: a provider whose host was not registered is gone once a reload drops it, the file then equal to the entries in effect", async () => {
  await droppedAfterNotRegistered([]);
});

Deno.test("Reload: a provider whose host was not registered is gone once a reload drops it, another provider added", async () => {
  await droppedAfterNotRegistered([inertSim("sim2")]);
});

/**
 * The device-loss causes the incident recorder noted (every trigger of every incident): sim1's
 * lost devices, each once (a cause names its device handle: "device sim1/<id> lost: <why>").
 */
function lossCauses(rt: Kernel): string[] {
  return rt.incidents!.list().flatMap((h) => [h, ...h.also])
    .filter((c) => c.trigger === "device_loss").map((c) => c.cause).sort();
}

for (
  const [how, change, why] of [
    [
      "did not start",
      (rt: Kernel) => withBrokenSim1(rt),
      "provider sim1 failed to start at a configuration reload (cannot start provider 'sim1'",
    ],
    [
      "was not registered",
      (rt: Kernel) => {
        // A host listener that fails refuses the registration of sim1's replacement.
        refuseRegistration(rt.registry, "sim1");
        return withEntryChanged(rt.config, "sim1");
      },
      "provider sim1 failed to start at a configuration reload (Provider sim1 not registered",
    ],
  ] as const
) {
  Deno.test(`Reload: a provider whose restart ${how} loses its devices: one device-loss incident each, dated when the reload took it out`, async () => {
    await using r = await sims();
    const rt = r.kernel;
    await waitFor("sim1's motor polled", () => rt.cache.device("sim1", "motorctl0")?.available);
    const listed = rt.registry.host("sim1")!.devices.map((d) => d.device.deviceId).sort();
    const next = change(rt);
    const told: DeviceConditionChange[] = [];
    const unsubscribe = rt.outages.onChange((ch) => {
      if (ch.previousReloading && ch.deviceId === "motorctl0") told.push(ch);
    });
    const before = Date.now();
    const result = await rt.reload(next);
    const after = Date.now();
    unsubscribe();
    assert.equal(
      result.providers.failed.length,
      1,
      result.providers.failed.map(failedStartText).join(),
    );
    // Not on purpose any more: its devices' condition says why, not that it is being restarted.
    const c = rt.outages.condition("sim1", "motorctl0");
    assert.equal(c.kind, "down");
    assert.equal(c.reloading, undefined, c.reason);
    assert.ok(c.reason.startsWith(why), c.reason);
    // Down since the take-out, as told: what the AUTO gate's blocked devices date it from.
    assert.equal(told.length, 1);
    assert.ok(told[0]!.condition.sinceMono !== null);
    assert.equal(c.sinceMono, told[0]!.condition.sinceMono);
    await waitFor("sim1's devices lost", () => lossCauses(rt).length === listed.length);
    const causes = lossCauses(rt);
    assert.deepEqual(causes.map((c) => c.split(" ")[1]), listed.map((d) => `sim1/${d}`));
    for (const c of causes) assert.ok(c.includes(` lost: ${why}`), c);
    const [h] = rt.incidents!.list();
    // Dated by the take-out's monotonic reading counted back from a wall clock read (both whole
    // ms, the distance rounded): within DATE_RESOLUTION_MS of the test's own whole-ms reads.
    assert.ok(
      h!.at_epoch_ms >= before - DATE_RESOLUTION_MS - PREEMPTION_SLACK_MS &&
        h!.at_epoch_ms <= after + DATE_RESOLUTION_MS,
      `dated within the reload: ${h!.at_epoch_ms} not in [${before}, ${after}]`,
    );
    // The same file again: sim1 fails again, down already: no second loss.
    assert.equal((await rt.reload(next)).providers.failed.length, 1);
    await rt.incidents!.settled();
    assert.equal(lossCauses(rt).length, listed.length, "each device lost once");
  });
}
