import assert from "node:assert/strict";
import { RuntimeError, type TypedValue } from "../../src/common/mod.ts";
import type { CallRequest } from "../../src/control/mod.ts";
import { startArmed, waitFor } from "../helpers/kernel.ts";
import { SIM_INERT_YAML, simProvider, testConfig } from "../helpers/sim_config.ts";

const D = (double: number): TypedValue => ({ type: "double", double });
const I = (int64: number): TypedValue => ({ type: "int64", int64 });
const B = (bool: boolean): TypedValue => ({ type: "bool", bool });

const base = { providerId: "sim0", origin: "manual" } as const;

const REFUSED: Array<
  [string, Omit<CallRequest, "origin" | "providerId"> & { providerId?: string }, string, RegExp]
> = [
  [
    "unknown provider",
    { providerId: "nope", deviceId: "motorctl0", functionId: 10, args: {} },
    "NOT_FOUND",
    /Provider not found: nope/,
  ],
  [
    "unknown device",
    { deviceId: "motorctl9", functionId: 10, args: {} },
    "NOT_FOUND",
    /Device not found: sim0\/motorctl9/,
  ],
  [
    "unknown function id",
    { deviceId: "motorctl0", functionId: 99, args: {} },
    "NOT_FOUND",
    /function_id 99/,
  ],
  [
    "unknown function name",
    { deviceId: "motorctl0", functionName: "fly", args: {} },
    "NOT_FOUND",
    /"fly"/,
  ],
  [
    "no selector",
    { deviceId: "motorctl0", functionId: 0, args: {} },
    "INVALID_ARGUMENT",
    /missing function selector/,
  ],
  [
    "id/name mismatch",
    { deviceId: "motorctl0", functionId: 10, functionName: "other", args: {} },
    "INVALID_ARGUMENT",
    /is "set_motor_duty", not "other"/,
  ],
  [
    "missing required arg",
    { deviceId: "motorctl0", functionId: 10, args: { motor_index: I(1) } },
    "INVALID_ARGUMENT",
    /args\.duty: required/,
  ],
  [
    "duty above max",
    { deviceId: "motorctl0", functionId: 10, args: { motor_index: I(1), duty: D(1.5) } },
    "INVALID_ARGUMENT",
    /above the maximum 1/,
  ],
  [
    "motor index below min",
    { deviceId: "motorctl0", functionId: 10, args: { motor_index: I(0), duty: D(0.5) } },
    "INVALID_ARGUMENT",
    /below the minimum 1/,
  ],
  [
    "wrong arg type",
    { deviceId: "relayio0", functionId: 1, args: { enabled: D(1) } },
    "INVALID_ARGUMENT",
    /expected bool, got double/,
  ],
  // Passes our validation (mode has no allowed_values), refused by the provider: mapped code.
  [
    "provider INVALID_ARGUMENT",
    { deviceId: "tempctl0", functionId: 1, args: { mode: { type: "string", string: "turbo" } } },
    "INVALID_ARGUMENT",
    /provider answered INVALID_ARGUMENT/,
  ],
];

Deno.test("CallRouter routes valid calls and refuses invalid ones before the provider", async (t) => {
  const rt = await startArmed(
    testConfig({ providers: [simProvider("sim0", { yaml: SIM_INERT_YAML })] }),
  );
  try {
    for (const [name, req, code, message] of REFUSED) {
      await t.step(`${name} -> ${code}`, async () => {
        await assert.rejects(rt.router.call({ ...base, ...req }), (e) => {
          assert.ok(e instanceof RuntimeError, String(e));
          assert.equal(e.code, code);
          assert.match(e.message, message);
          return true;
        });
      });
    }
    await t.step(
      "a valid call reaches the provider and the cache is re-polled at once",
      async () => {
        const r = await rt.router.call({
          ...base,
          deviceId: "motorctl0",
          functionId: 10,
          args: { motor_index: I(2), duty: D(0.25) },
        });
        assert.equal(r.functionName, "set_motor_duty");
        assert.equal(r.postCallPollTriggered, true);
        assert.deepEqual(rt.cache.signal("sim0", "motorctl0", "motor2_duty")?.value, D(0.25));
      },
    );
    await t.step("select by name works and int64 widens into a double argument", async () => {
      await rt.router.call({
        ...base,
        deviceId: "motorctl0",
        functionName: "set_motor_duty",
        args: { motor_index: I(1), duty: I(1) },
      });
      assert.deepEqual(rt.cache.signal("sim0", "motorctl0", "motor1_duty")?.value, D(1));
    });
    await t.step("provider FAILED_PRECONDITION maps to FAILED_PRECONDITION", async () => {
      await rt.router.call({
        ...base,
        deviceId: "tempctl0",
        functionId: 1,
        args: { mode: { type: "string", string: "closed" } },
      });
      await assert.rejects(
        rt.router.call({
          ...base,
          deviceId: "tempctl0",
          functionId: 3,
          args: { relay_index: I(1), state: B(true) },
        }),
        (e) => e instanceof RuntimeError && e.code === "FAILED_PRECONDITION",
      );
    });
    await t.step(
      "a gate refuses with its own error, and safety-origin calls skip gates",
      async () => {
        let refusing = true;
        rt.router.addGate((
          { fn },
        ) => (refusing && fn.actuating ? new RuntimeError("FAILED_PRECONDITION", "gated") : null));
        const req = { ...base, deviceId: "relayio0", functionId: 2, args: { enabled: B(true) } };
        await assert.rejects(rt.router.call(req), /gated/);
        await rt.router.call({ ...req, origin: "safety" });
        // A stop action ends with its call's answer; the device's post-call poll follows
        // (e5b9bd44), so the cache shows the effect once that poll is in.
        await waitFor("the safety call's effect in the cache", () => {
          const v = rt.cache.signal("sim0", "relayio0", "relay_ch2_state")?.value;
          return v?.type === "bool" && v.bool === true;
        });
        assert.deepEqual(rt.cache.signal("sim0", "relayio0", "relay_ch2_state")?.value, B(true));
        refusing = false;
      },
    );
  } finally {
    await rt.stop();
  }
});
