/**
 * A probe (the programmable provider) whose temperature turns STALE, guarding the simulated
 * provider's motor: its alarm raises (bad input, MAJOR) and the interlock engages; the interlock
 * then refuses the motor to an HTTP client, to the behavior tree and to a mode-transition hook —
 * but the e-stop's ladder still sets the duty to 0.
 */
import assert from "node:assert/strict";
import type { CallArgValue, HookConfig } from "../../src/config/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import {
  dbl,
  type Inventory,
  programmableProvider,
  Q,
  T,
} from "../helpers/programmable_provider.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig, Api, callBody, program } from "./alarms_helpers.ts";
import { automationOptions, cached, TreeDir, treeXml } from "./automation_helpers.ts";

const INVENTORY: Inventory = {
  devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] } },
};

const i = (v: number): CallArgValue => ({ type: "int64", int64: v });
const d = (v: number): CallArgValue => ({ type: "double", double: v });
const MOTOR1_OFF = {
  deviceHandle: "sim0/motorctl0",
  functionId: 0,
  functionName: "set_motor_duty",
  args: { motor_index: i(1), duty: d(0) },
};

/** AUTO -> MANUAL stops motor 1 first (fail_on_error: a refused call vetoes the transition). */
const STOP_ON_LEAVING_AUTO: HookConfig = {
  from: "AUTO",
  to: "MANUAL",
  failOnError: true,
  path: "automation.mode_transition_hooks.before_transition[1]",
  calls: [{
    ...MOTOR1_OFF,
    path: "automation.mode_transition_hooks.before_transition[1].calls[0]",
  }],
};

/** Runs motor 1 at 0.3 on every tick (CallDevice, then a short sleep). */
const RUN_MOTOR = treeXml(
  `<Sequence>
      <CallDevice name="run_motor" device_handle="sim0/motorctl0" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.3}' />
      <Sleep msec="100" />
    </Sequence>`,
);

Deno.test("A stale input raises its alarm and engages an interlock that refuses HTTP, the tree and hooks, but not the e-stop ladder", async () => {
  const dir = await TreeDir.create();
  const inventoryFile = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(inventoryFile, JSON.stringify(INVENTORY));
  const tree = await dir.write("run_motor.xml", RUN_MOTOR);
  const options = automationOptions(tree, { manualGatingPolicy: "OVERRIDE" });
  const hooks = options.automation!.modeTransitionHooks!;
  const fx = await startHttpFixture({
    config: {
      ...options,
      providers: [
        simProvider("sim0", { yaml: SIM_INERT_YAML }),
        programmableProvider("p0", inventoryFile),
      ],
      automation: {
        ...options.automation,
        modeTransitionHooks: {
          beforeTransition: [...hooks.beforeTransition, STOP_ON_LEAVING_AUTO],
          afterTransition: [],
        },
      },
      safety: { hooks: [{ ...MOTOR1_OFF, path: "safety.safe_state.hooks[0]" }] },
      ...alarmsConfig(
        `
alarms:
  - { id: probe_hot, signal: p0/probe/temp, hi: 80, message: Probe hot }
interlocks:
  - id: probe_guard
    block: [sim0/motorctl0/set_motor_duty]
    while: p0/probe/temp > 80
    message: Motor held while the probe is hot or unreadable
`,
        ["sim0", "p0"],
      ),
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await api.post("/v0/mode", { mode: "AUTO" })).status, 200);
    await waitFor(
      "the tree runs the motor",
      () => cached(fx.runtime, "sim0/motorctl0", "motor1_duty") === 0.3,
    );
    assert.equal((await api.get("/v0/interlocks")).json.interlocks[0].blocking, false);

    await program(fx.runtime, "p0", "probe", {
      read: { values: [dbl("temp", 25, { quality: Q.STALE })] },
    });
    await waitFor(
      "the alarm raised",
      async () => (await api.get("/v0/alarms/probe_hot")).json.alarm.state === "active",
    );
    const alarm = (await api.get("/v0/alarms/probe_hot")).json.alarm;
    assert.deepEqual(
      [alarm.level, alarm.cause, alarm.limit, alarm.quality, alarm.bad_input],
      ["MAJOR", "bad_quality", null, "STALE", "p0/probe/temp is STALE"],
    );
    const [guard] = (await api.get("/v0/interlocks")).json.interlocks;
    assert.equal(guard.blocking, true);
    assert.equal(guard.reason, "bad input: p0/probe/temp is STALE");
    assert.deepEqual(guard.block, ["sim0/motorctl0/set_motor_duty"]);
    const refusal = "Interlock probe_guard blocks sim0/motorctl0 set_motor_duty: Motor held " +
      "while the probe is hot or unreadable (bad input: p0/probe/temp is STALE)";

    // HTTP.
    const manual = await api.post(
      "/v0/call",
      callBody("sim0/motorctl0", 10, {
        motor_index: { type: "int64", int64: 1 },
        duty: { type: "double", double: 0.9 },
      }),
    );
    assert.equal(manual.status, 409);
    assert.deepEqual(manual.json.status, { code: "FAILED_PRECONDITION", message: refusal });

    // The behavior tree: its calls fail with the same refusal -- refused by a gate, which says
    // nothing of the device: listed in `refused_calls`, never as a device outage.
    const refused = await waitFor("the tree's calls refused", async () => {
      const s = (await api.get("/v0/automation/status")).json;
      const entry = s.refused_calls?.find((o: { device_handle: string }) =>
        o.device_handle === "sim0/motorctl0"
      );
      return entry === undefined ? undefined : { s, entry };
    });
    assert.deepEqual(refused.s.device_outages, [], "a healthy device refused is no outage");
    assert.equal(refused.entry.refused_by, "interlock probe_guard");
    assert.equal(refused.entry.last_refusal, refusal);
    assert.ok(refused.entry.consecutive_refusals >= 2);
    assert.equal(typeof refused.entry.since_epoch_ms, "number");
    assert.match(
      refused.s.last_error,
      /^calls refused: sim0\/motorctl0 set_motor_duty by interlock probe_guard \(\d+ in a row\)$/,
    );

    // A mode-transition hook (AUTO -> MANUAL, fail_on_error): refused, so the transition is vetoed.
    const leave = await api.post("/v0/mode", { mode: "MANUAL" });
    assert.equal(leave.status, 409);
    assert.equal(
      leave.json.status.message,
      "Mode transition AUTO -> MANUAL vetoed: before_transition hook " +
        "automation.mode_transition_hooks.before_transition[1] call sim0/motorctl0 " +
        `set_motor_duty failed: FAILED_PRECONDITION: ${refusal}`,
    );
    assert.equal(cached(fx.runtime, "sim0/motorctl0", "motor1_duty"), 0.3, "nothing moved");

    // The e-stop's ladder and the hooks into FAULT are stop actions: never refused.
    const estop = await api.post("/v0/estop", { reason: "probe unreadable" });
    assert.equal(estop.status, 200);
    assert.deepEqual(estop.json.actions, [
      { device_handle: "sim0/motorctl0", function: "set_motor_duty", success: true },
    ]);
    assert.deepEqual(estop.json.hook_failures, []);
    // A stop action ends with its call's answer; the device's post-call poll follows
    // (e5b9bd44), so the cache shows the effect once that poll is in.
    await waitFor(
      "the ladder call's effect in the cache",
      () => cached(fx.runtime, "sim0/motorctl0", "motor1_duty") === 0,
    );
    assert.equal(cached(fx.runtime, "sim0/motorctl0", "motor1_duty"), 0);
    assert.equal((await api.get("/v0/interlocks")).json.interlocks[0].blocking, true);
    assert.equal((await api.get("/v0/runtime/status")).json.estop.cause, "api");
  } finally {
    await fx.close();
    await dir.dispose();
    await Deno.remove(inventoryFile);
  }
});
