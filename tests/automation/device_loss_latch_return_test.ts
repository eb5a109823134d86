/**
 * A latched device the tree depends on (commanded by it in an earlier AUTO session, its handle
 * computed, so the AUTO gate does not judge it) that is still down when MANUAL -> AUTO is
 * requested stays latched by that entry (docs/safety.md section 5: "entering AUTO while it is
 * still down ... keeps it latched: its return would otherwise restart it"). When it comes back
 * while that transition's before_transition hooks run, the request was judged with it down: the
 * commit would release it and the tree command it at once. The latch refuses that entry at its
 * commit, as it refuses one during whose hooks such a device was lost. The same past
 * MAX_LATCHED_DEVICES_PER_PROVIDER: a provider of more devices than the latch names one by one goes
 * down, so its further devices are held by one provider-wide entry; one so held that the tree
 * depends on and that comes back during the hooks would be exempted by the commit (listed and up
 * at the entry), and the tree command it at once -- the restart the latch exists to prevent.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import type { RuntimeMode } from "../../src/config/mod.ts";
import { DeviceLossLatch, MAX_LATCHED_DEVICES_PER_PROVIDER } from "../../src/automation/mod.ts";
import type { GateContext } from "../../src/control/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import type {
  DeviceCondition,
  DeviceConditionChange,
  DeviceConditionListener,
} from "../../src/state/mod.ts";
import { tempDir, testLogger, waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { rig as kernelRig } from "../helpers/rig.ts";
import { simProvider } from "../helpers/sim_config.ts";
import {
  automationConfig,
  modeOutcome,
  slowCallsOf,
  TreeDir,
  treeXml,
  withSlowArming,
} from "../scenarios/automation_helpers.ts";

const WALL_MS = 1_767_000_000_000;

/** The wide provider's devices: past the latch's bound, so the last few are held provider-wide. */
const DEVICES = MAX_LATCHED_DEVICES_PER_PROVIDER + 6;
/** The device the tree commanded in its earlier AUTO session: one the provider-wide entry holds. */
const HELD = `dev${DEVICES - 2}`;

/**
 * A latch following the devices `ids` of provider `providerId`, the tree depending on `dependsOn`
 * (a handle); MANUAL. `lose`/`back` tell each device's change (all of them by default).
 */
function rig(
  { providerId = "sim1", ids = ["motorctl0"], dependsOn = "sim1/motorctl0" }: {
    providerId?: string;
    ids?: readonly string[];
    dependsOn?: string;
  } = {},
) {
  const listeners = new Set<DeviceConditionListener>();
  const up: DeviceCondition = { kind: "up", reason: "", sinceMono: null };
  const down: DeviceCondition = {
    kind: "down",
    reason: `provider ${providerId} is unavailable (RESTARTING)`,
    sinceMono: 0,
  };
  const notAnswering: DeviceCondition = {
    kind: "failing",
    reason: "it has not answered a read since its provider came back",
    sinceMono: null,
  };
  const conditions = new Map<string, DeviceCondition>(ids.map((d) => [d, up]));
  let mode: RuntimeMode = "MANUAL";
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
      condition: (_p, d) => conditions.get(d) ?? up,
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
    devicesOf: () => ids.filter((d) => conditions.get(d)?.kind === "up"),
    bus: new EventBus(),
    clock,
    log: testLogger(),
    treeDependsOn: (h) => h === dependsOn,
  });
  const change = (next: DeviceCondition, which: readonly string[]) => {
    for (const deviceId of which) {
      const c: DeviceConditionChange = {
        providerId,
        deviceId,
        previous: conditions.get(deviceId)!.kind,
        condition: next,
        atWallMs: WALL_MS,
      };
      conditions.set(deviceId, next);
      for (const l of [...listeners]) l(c);
    }
  };
  return {
    latch,
    invalidated,
    lose: (which = ids) => change(down, which),
    back: (which = ids) => change(up, which),
    /** Its provider back, the device not answering yet (DeviceOutages: failing, undated). */
    failing: (which = ids) => change(notAnswering, which),
    hooksBegin: () => (pending = true),
    /** What the commit of MANUAL -> AUTO does to the latch. */
    commitAuto: () => {
      pending = false;
      mode = "AUTO";
      latch.onModeChange({ previous: "MANUAL", current: "AUTO" });
    },
  };
}

/** The wide rig: provider sim0 of DEVICES devices, the tree depending on HELD. */
const wideRig = () =>
  rig({
    providerId: "sim0",
    ids: Array.from({ length: DEVICES }, (_, i) => `dev${i}`),
    dependsOn: `sim0/${HELD}`,
  });

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

Deno.test("DeviceLossLatch refuses an AUTO entry during whose hooks a latched device the tree depends on is no longer down but not answering: it says so, not that it came back", () => {
  const r = rig();
  r.lose(); // lost in MANUAL: latched
  r.hooksBegin(); // AUTO requested while it is down
  // Its provider back, the device not answering yet (down -> failing): the commit would release
  // it (not down), so the entry is refused -- but it never answered.
  r.failing();
  assert.equal(r.invalidated.length, 1, "the entry is refused at its commit");
  const [why, remedy, refusedBy] = r.invalidated[0]!;
  // Before: "sim1/motorctl0, a device the behavior tree depends on, came back (it was lost: ...)".
  assert.doesNotMatch(why, /depends on, came back/);
  assert.equal(
    why,
    "sim1/motorctl0, a device the behavior tree depends on, is no longer down, not answering " +
      "(it has not answered a read since its provider came back; it was lost: provider sim1 " +
      "is unavailable (RESTARTING))",
  );
  assert.match(remedy ?? "", /request AUTO again once it answers/);
  assert.equal(refusedBy, "device_loss");
  // Down again (never up in between): latched still, once.
  r.lose();
  assert.deepEqual(r.latch.latched(), ["sim1/motorctl0"]);
});

Deno.test("DeviceLossLatch: a device back before AUTO is requested refuses nothing", () => {
  const r = rig();
  r.lose();
  r.back();
  r.hooksBegin();
  assert.deepEqual(r.invalidated, []);
});

function automatedCall(deviceId: string): GateContext {
  return {
    origin: "automated",
    device: { device: { providerId: "sim0", deviceId } },
    fn: { name: "set_motor_duty" },
  } as unknown as GateContext;
}

Deno.test("DeviceLossLatch refuses an AUTO entry during whose hooks a device the tree depends on, held by its provider-wide entry, came back", () => {
  const r = wideRig();
  r.lose(); // lost in MANUAL: 64 latched by name, the rest held as one provider-wide entry
  assert.equal(r.latch.entries().length, MAX_LATCHED_DEVICES_PER_PROVIDER);
  assert.equal(r.latch.providerEntries()[0]?.losses, DEVICES - MAX_LATCHED_DEVICES_PER_PROVIDER);
  assert.equal(r.latch.gate(automatedCall(HELD))?.code, "FAILED_PRECONDITION");
  r.hooksBegin(); // AUTO requested while it is down: judged with it down, so it stays refused
  r.back(); // back while the MANUAL -> AUTO before_transition hooks run
  if (r.invalidated.length === 0) {
    // What the commit then does: the device is exempt, and the tree commands it at once.
    r.commitAuto();
    const refusal = r.latch.gate(automatedCall(HELD));
    assert.fail(
      `AUTO entered although sim0/${HELD}, held by the provider-wide entry and down when AUTO ` +
        `was requested, came back during its hooks; the tree's call to it is ${
          refusal === null ? "accepted" : `refused (${refusal.message})`
        }`,
    );
  }
  assert.equal(r.invalidated.length, 1, "the entry is refused at its commit");
  const [why, remedy, refusedBy] = r.invalidated[0]!;
  assert.match(why, new RegExp(`^sim0/${HELD}, a device the behavior tree depends on, came back`));
  assert.match(remedy ?? "", /request AUTO again/);
  assert.equal(refusedBy, "device_loss");
  assert.equal(
    r.latch.gate(automatedCall(HELD))?.code,
    "FAILED_PRECONDITION",
    "still refused until AUTO is entered",
  );
});

Deno.test("DeviceLossLatch: a held device back before AUTO is requested refuses nothing", () => {
  const r = wideRig();
  r.lose();
  r.back();
  r.hooksBegin();
  assert.deepEqual(r.invalidated, []);
  r.commitAuto();
  assert.equal(r.latch.gate(automatedCall(HELD)), null, "exempt: listed and up at the entry");
});

/**
 * A tree computing its handle commands sim1/motorctl0 in a first AUTO session (only those calls say
 * it depends on it; the AUTO gate does not judge the device), then MANUAL; `swap`: a reload outside
 * AUTO then replaces it by a tree that calls nothing. sim1 is lost (latched) and AUTO requested
 * while it is down, with a slow before_transition hook during which it comes back. The request's
 * outcome ("AUTO" or the refusal), the accepted calls to sim1/motorctl0 and the devices latched
 * then.
 */
async function backDuringHooks(
  { swap }: { swap: boolean },
): Promise<{ outcome: string; duties: number; latched: string[] }> {
  const dir = await TreeDir.create();
  try {
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
    const config = withSlowArming(base);
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
    if (swap) {
      const idle = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
      const report = await rt.reload({
        ...config,
        automation: { ...config.automation, behaviorTree: idle },
      });
      assert.ok(report.applied.includes("automation.behavior_tree"), JSON.stringify(report));
    }
    // Lost in MANUAL: latched; its supervisor restarts it.
    r.kill("sim1");
    await waitFor(
      "sim1/motorctl0 latched",
      () => engine.status().device_loss_latched.includes("sim1/motorctl0"),
    );
    assert.notEqual(rt.registry.host("sim1")?.available, true, "down when AUTO is requested");
    await slowCallsOf(rt, "sim0", "tempctl0", 5000);
    // Requested while it is down: this entry is to keep it latched.
    const auto = modeOutcome(rt, "AUTO");
    await waitFor("sim1 back", () => rt.registry.host("sim1")?.available === true);
    const outcome = await auto;
    if (outcome === "AUTO" && !swap) {
      await waitFor("the tree commands sim1/motorctl0 again", async () => (await duties()) === 2);
    }
    return { outcome, duties: await duties(), latched: [...engine.status().device_loss_latched] };
  } finally {
    await dir.dispose();
  }
}

Deno.test("AUTO requested while a device the tree commanded is down, back during the before_transition hooks, is refused at its commit", async () => {
  const { outcome, latched } = await backDuringHooks({ swap: false });
  if (outcome === "AUTO") {
    assert.fail(
      "AUTO entered, releasing sim1/motorctl0 that was down when it was requested, and the " +
        "tree commanded it again at once",
    );
  }
  // Its provider back, the device is failing (not read since) before it answers: the entry is
  // refused then, and says so (not "came back": it had not answered).
  assert.match(
    outcome,
    /sim1\/motorctl0, a device the behavior tree depends on, is no longer down, not answering \(it has not answered a read/,
  );
  assert.ok(latched.includes("sim1/motorctl0"));
});

// What a replaced tree commanded is not what the tree in force depends on: once a reload has
// replaced the tree by one that never commanded the device, nothing depends on it, and the entry
// is not refused for a tree that no longer runs ("a device the behavior tree depends on",
// docs/safety.md section 5), as it is not for a tree loaded at start-up.
Deno.test("AUTO of a tree a reload swapped in is not refused for a device only the replaced tree commanded, back during the before_transition hooks", async () => {
  const { outcome, duties } = await backDuringHooks({ swap: true });
  assert.equal(
    outcome,
    "AUTO",
    "the tree in force never commanded sim1/motorctl0: nothing of it depends on that device",
  );
  assert.equal(duties, 1, "nothing commands sim1/motorctl0 again");
});

/** `n` devices with nothing to poll, each with the programmable provider's own functions. */
function devices(n: number): Inventory {
  return {
    devices: Object.fromEntries(
      Array.from({ length: n }, (_, i) => [`dev${i}`, { signals: [], functions: [] }]),
    ),
  };
}

Deno.test("AUTO requested while a device the tree commanded is held by its provider's provider-wide entry, back during the before_transition hooks, is refused at its commit", async () => {
  const dir = await TreeDir.create();
  try {
    // The handle is computed: the AUTO gate does not judge the device, only the latch does.
    const tree = await dir.write(
      "held.xml",
      treeXml(`<Sequence>
      <SetBlackboard output_key="dev" value="pol/${HELD}" />
      <CallDevice device_handle="{dev}" function_name="stats" />
      <Sleep msec="60000" />
    </Sequence>`),
    );
    const file = `${tempDir("latch-wide-return-")}/pol.json`;
    await Deno.writeTextFile(file, JSON.stringify(devices(DEVICES)));
    const base = automationConfig(tree, {
      // pol back about 1 s after its kill (well after AUTO is requested, well within the hook).
      config: {
        providers: [
          simProvider("sim0"),
          programmableProvider("pol", file, {
            restart: { maxAttempts: 5, backoffMs: [1000, 1000, 1000] },
          }),
        ],
      },
    });
    const config = withSlowArming(base);
    await using r = await kernelRig({ config, arm: true });
    const rt = r.kernel;
    const engine = rt.automation!;
    // The tree is past its call (it succeeded) once it sleeps.
    const sleeping = () =>
      /Sleep/.test(engine.status().engine_diagnostics.current_running_node ?? "");
    // A first AUTO session: the tree commands pol/<HELD> (it depends on it from then on).
    await rt.modes.request("AUTO");
    await waitFor("the tree's call to the device", sleeping);
    await rt.modes.request("MANUAL");
    // Lost in MANUAL with the 69 others: 64 latched by name, the rest (HELD among them) held.
    r.kill("pol");
    await waitFor(
      "the provider-wide entry",
      () =>
        engine.status().device_loss_latched_providers[0]?.losses ===
          DEVICES - MAX_LATCHED_DEVICES_PER_PROVIDER,
    );
    assert.ok(!engine.status().device_loss_latched.includes(`pol/${HELD}`), "held, not named");
    assert.notEqual(rt.registry.host("pol")?.available, true, "down when AUTO is requested");
    await slowCallsOf(rt, "sim0", "tempctl0", 5000);
    // Requested while it is down: this entry is to keep it refused.
    const auto = modeOutcome(rt, "AUTO");
    await waitFor("pol back", () => rt.registry.host("pol")?.available === true, 20_000);
    const outcome = await auto;
    if (outcome === "AUTO") {
      await waitFor("the tree commands the device again", sleeping);
      assert.fail(
        `AUTO entered, exempting pol/${HELD} that was down when it was requested, and the ` +
          "tree commanded it again at once",
      );
    }
    assert.match(
      outcome,
      new RegExp(`pol/${HELD}, a device the behavior tree depends on, came back`),
    );
    assert.ok(
      !engine.status().device_loss_latched_providers[0]?.exempt_device_ids.includes(HELD),
      "still refused until AUTO is entered again",
    );
  } finally {
    await dir.dispose();
  }
});
