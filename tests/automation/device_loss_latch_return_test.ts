/**
 * A latched device the tree depends on (commanded by it in an earlier AUTO session, its handle
 * computed, so the AUTO gate does not judge it) that is still down when MANUAL -> AUTO is
 * requested stays latched by that entry (docs/safety.md section 5: "entering AUTO while it is
 * still down ... keeps it latched: its return would otherwise restart it"). When it comes back
 * while that transition's before_transition hooks run, the request was judged with it down: the
 * commit would release it and the tree command it at once. The latch refuses that entry at its
 * commit, as it refuses one during whose hooks such a device was lost.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import type { RuntimeMode } from "../../src/config/mod.ts";
import { DeviceLossLatch, MAX_LATCHED_DEVICES_PER_PROVIDER } from "../../src/automation/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import type {
  DeviceCondition,
  DeviceConditionChange,
  DeviceConditionListener,
} from "../../src/state/mod.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { rig as kernelRig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  automationConfig,
  callAs,
  SLOW_ARMING_HOOK,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
  treeXml,
  tv,
} from "../scenarios/automation_helpers.ts";

const WALL_MS = 1_767_000_000_000;

const UP: DeviceCondition = { kind: "up", reason: "", sinceMono: null };

/** `dependsOn`: the handles the tree depends on. */
function rig(dependsOn: readonly string[] = ["sim1/motorctl0"]) {
  const listeners = new Set<DeviceConditionListener>();
  const conditions = new Map<string, DeviceCondition>();
  const mode: RuntimeMode = "MANUAL";
  /** A MANUAL -> AUTO transition whose before-hooks run (invalidateAutoEntry acts only then). */
  let pending = false;
  const invalidated: [string, string | undefined, string | undefined][] = [];
  const clock: Clock = {
    nowMs: () => WALL_MS,
    monoMs: () => 0,
    setTimer: () => 0,
    clearTimer: () => {},
  };
  const latch = new DeviceLossLatch({
    outages: {
      condition: (_p, d) => conditions.get(d) ?? UP,
      onChange: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
    },
    modes: {
      current: () => mode,
      forceFault: () => Promise.resolve(true),
      invalidateAutoEntry: (why, remedy, refusedBy) => {
        if (pending) invalidated.push([why, remedy, refusedBy]);
      },
    },
    bus: new EventBus(),
    clock,
    log: testLogger(),
    treeDependsOn: (h) => dependsOn.includes(h),
  });
  const change = (deviceId: string, next: DeviceCondition) => {
    const c: DeviceConditionChange = {
      providerId: "sim1",
      deviceId,
      previous: (conditions.get(deviceId) ?? UP).kind,
      condition: next,
      atWallMs: WALL_MS,
    };
    conditions.set(deviceId, next);
    for (const l of [...listeners]) l(c);
  };
  return {
    latch,
    invalidated,
    lose: (deviceId = "motorctl0") =>
      change(deviceId, { kind: "down", reason: "its reads fail", sinceMono: 0 }),
    back: (deviceId = "motorctl0") => change(deviceId, UP),
    hooksBegin: () => (pending = true),
  };
}

Deno.test("DeviceLossLatch refuses an AUTO entry during whose hooks a latched device the tree depends on came back", () => {
  const r = rig();
  r.lose(); // lost in MANUAL (after a FAULT its loss forced, say): latched
  assert.deepEqual(r.latch.latched(), ["sim1/motorctl0"]);
  r.hooksBegin(); // AUTO requested while it is down: judged with it down, so it stays latched
  r.back(); // back while the MANUAL -> AUTO before_transition hooks run
  assert.equal(r.invalidated.length, 1, "the entry is refused at its commit");
  const [why, remedy, refusedBy] = r.invalidated[0]!;
  assert.match(why, /^sim1\/motorctl0, a device the behavior tree depends on, came back/);
  assert.match(remedy ?? "", /request AUTO again/);
  assert.equal(refusedBy, "device_loss");
  assert.deepEqual(r.latch.latched(), ["sim1/motorctl0"], "still latched until AUTO is entered");
});

Deno.test("DeviceLossLatch refuses an AUTO entry during whose hooks a device the tree depends on, held in its provider's provider-wide entry, came back", () => {
  const r = rig(["sim1/motor64"]);
  // One more than the latch holds by name: the last is held in the provider-wide entry.
  for (let i = 0; i <= MAX_LATCHED_DEVICES_PER_PROVIDER; i++) r.lose(`motor${i}`);
  assert.equal(r.latch.latched().length, MAX_LATCHED_DEVICES_PER_PROVIDER);
  assert.equal(r.latch.providerEntries()[0]?.lastDeviceId, "motor64");
  r.hooksBegin();
  r.back("motor0"); // latched by name, the tree does not depend on it: nothing refused
  assert.equal(r.invalidated.length, 0);
  r.back("motor64"); // back while the MANUAL -> AUTO before_transition hooks run
  assert.equal(r.invalidated.length, 1, "the entry is refused at its commit");
  const [why, , refusedBy] = r.invalidated[0]!;
  assert.match(why, /^sim1\/motor64, a device the behavior tree depends on, came back \(it was /);
  assert.match(why, /provider-wide entry/);
  assert.equal(refusedBy, "device_loss");
});

Deno.test("DeviceLossLatch: a device back before AUTO is requested refuses nothing", () => {
  const r = rig();
  r.lose();
  r.back();
  r.hooksBegin();
  assert.deepEqual(r.invalidated, []);
});

Deno.test("AUTO requested while a device the tree commanded is down, back during the before_transition hooks, is refused at its commit", async () => {
  const dir = await TreeDir.create();
  try {
    // The handle is computed: the AUTO gate does not judge the device, only the latch does.
    const tree = await dir.write(
      "motor.xml",
      treeXml(`<Sequence>
      <SetBlackboard output_key="dev" value="sim1/motorctl0" />
      <CallDevice device_handle="{dev}" function_name="set_motor_duty"
        args='json:{"motor_index": 1, "duty": 0.1}' />
      <Sleep msec="60000" />
    </Sequence>`),
    );
    const base = automationConfig(tree, {
      // sim1 back about 1 s after its kill (well after AUTO is requested, well within the hook).
      config: {
        providers: [
          simProvider("sim0"),
          simProvider("sim1", { restart: { backoffMs: [1000, 1000, 1000] } }),
        ],
      },
    });
    const config = {
      ...base,
      automation: {
        ...base.automation,
        modeTransitionHooks: {
          beforeTransition: [STOP_MOTOR_ON_FAULT, SLOW_ARMING_HOOK],
          afterTransition: [],
        },
      },
    };
    await using r = await kernelRig({ config, arm: true });
    const rt = r.kernel;
    const engine = rt.automation!;
    const duties = async () =>
      (await rt.audit.query({ limit: 500 })).entries.filter((e) =>
        e.action === "call" && e.device_handle === "sim1/motorctl0" && e.outcome === "accepted"
      ).length;
    // A first AUTO session: the tree commands sim1/motorctl0 (it depends on it from then on).
    await rt.modes.request("AUTO");
    await waitFor("the tree's call to sim1/motorctl0", async () => (await duties()) === 1);
    await rt.modes.request("MANUAL");
    // Lost in MANUAL: latched; its supervisor restarts it.
    r.kill("sim1");
    await waitFor(
      "sim1/motorctl0 latched",
      () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
    );
    assert.notEqual(rt.registry.host("sim1")?.available, true, "down when AUTO is requested");
    await callAs(rt, "manual", "sim0/chaos_control", "inject_call_latency", {
      device_id: tv.s("tempctl0"),
      latency_ms: tv.i(5000),
    });
    // Requested while it is down: this entry is to keep it latched.
    const auto = rt.modes.request("AUTO").then(() => "AUTO", (err: unknown) => String(err));
    await waitFor("sim1 back", () => rt.registry.host("sim1")?.available === true);
    const outcome = await auto;
    if (outcome === "AUTO") {
      await waitFor("the tree commands sim1/motorctl0 again", async () => (await duties()) === 2);
      assert.fail(
        "AUTO entered, releasing sim1/motorctl0 that was down when it was requested, and the " +
          "tree commanded it again at once",
      );
    }
    assert.match(outcome, /sim1\/motorctl0, a device the behavior tree depends on, came back/);
    assert.ok(engine.status().device_loss_latched.includes("sim1/motorctl0"));
  } finally {
    await dir.dispose();
  }
});
