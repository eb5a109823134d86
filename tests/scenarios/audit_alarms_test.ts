/**
 * The audit trail of alarm actions on the simulated provider: an operator's call refused by an
 * engaged interlock (refused_by interlock, with its reason), the e-stop an alarm triggered
 * (origin alarm with its id) and the ladder's calls it made (origin estop, cause alarm:<id>).
 */
import assert from "node:assert/strict";
import type { CallArgValue, CallConfig } from "../../src/config/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { alarmsConfig, Api, callBody } from "./alarms_helpers.ts";

const i = (v: number): CallArgValue => ({ type: "int64", int64: v });
const d = (v: number): CallArgValue => ({ type: "double", double: v });

const LADDER: CallConfig = {
  deviceHandle: "sim0/motorctl0",
  functionId: 0,
  functionName: "set_motor_duty",
  args: { motor_index: i(1), duty: d(0) },
  path: "safety.safe_state.hooks[0]",
};

Deno.test("GET /v0/audit records an interlock refusal and the alarm's e-stop with the alarm id", async () => {
  const fx = await startHttpFixture({
    config: {
      // A stale bound no load reaches (1 min, not tc1_temp's 1.5 s): a poll late past the bound
      // would make tc1_temp a bad input, and tc1_overtemp latch the e-stop for it (rightly)
      // before the limits are tried.
      health: { staleness: { warnAfterMs: 0, staleAfterMs: 60_000 } },
      safety: { hooks: [LADDER] },
      ...alarmsConfig(`
alarms:
  - id: tc1_overtemp
    signal: sim0/tempctl0/tc1_temp
    hihi: 40
    action: estop
    message: Heater over temperature
interlocks:
  - id: hot_lockout
    block: [sim0/motorctl0/set_motor_duty]
    while: sim0/tempctl0/tc1_temp > 26.5
    message: Motor locked while above 26.5 °C
`),
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const duty = callBody("sim0/motorctl0", 10, {
      motor_index: { type: "int64", int64: 1 },
      duty: { type: "double", double: 0.5 },
    });
    const heat = callBody("sim0/tempctl0", 3, {
      relay_index: { type: "int64", int64: 1 },
      state: { type: "bool", bool: true },
    });
    assert.equal((await api.post("/v0/call", heat)).status, 200);
    // The heater passes 26.5 C about 0.2 s after it is switched on and 40 C about 2.4 s after: at
    // tempctl's 2 Hz poll hint an alarm at 28 could stop the machine in the interlock's own poll.
    await waitFor(
      "the interlock engaged",
      async () => (await api.get("/v0/interlocks")).json.interlocks[0].blocking,
      30_000,
    );
    assert.equal((await api.post("/v0/call", duty)).status, 409);
    const refused = (await api.get("/v0/audit?device_id=motorctl0")).json.entries;
    assert.equal(refused.length, 1);
    assert.equal(refused[0].outcome, "refused");
    assert.equal(refused[0].refused_by, "interlock");
    assert.match(refused[0].reason, /^FAILED_PRECONDITION: Interlock hot_lockout blocks/);
    assert.deepEqual(refused[0].origin, {
      kind: "http",
      address: "127.0.0.1",
      token_name: "anonymous",
    });

    await waitFor("the e-stop latched", () => fx.runtime.estop.latched, 30_000);
    const entries = await waitFor("the ladder's call", async () => {
      const all = (await api.get("/v0/audit")).json.entries;
      // deno-lint-ignore no-explicit-any
      return all.some((e: any) => e.origin.kind === "estop" && e.action === "call") ? all : null;
    });
    // deno-lint-ignore no-explicit-any
    const estop = entries.find((e: any) => e.action === "estop");
    assert.deepEqual(estop.origin, { kind: "alarm", alarm_id: "tc1_overtemp" });
    assert.equal(estop.args.cause, "alarm:tc1_overtemp");
    assert.match(estop.args.reason, /^alarm tc1_overtemp raised MAJOR/);
    // deno-lint-ignore no-explicit-any
    const ladder = entries.filter((e: any) => e.origin.kind === "estop" && e.action === "call");
    assert.equal(ladder.length, 1);
    assert.deepEqual(ladder[0].origin, {
      kind: "estop",
      rung: "hooks",
      cause: "alarm:tc1_overtemp",
    });
    // The ladder skips the interlock that blocks the operator: accepted.
    assert.equal(ladder[0].outcome, "accepted");
    assert.equal(ladder[0].device_handle, "sim0/motorctl0");
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/audit records the FAULT an alarm with action fault forced, with the alarm id", async () => {
  const fx = await startHttpFixture({
    config: alarmsConfig(`
alarms:
  - { id: too_fast, signal: sim0/motorctl0/motor1_duty, hi: 0.5, action: fault }
`),
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const fast = callBody("sim0/motorctl0", 10, {
      motor_index: { type: "int64", int64: 1 },
      duty: { type: "double", double: 0.7 },
    });
    assert.equal((await api.post("/v0/call", fast)).status, 200);
    await waitFor("FAULT", () => fx.runtime.modes.current() === "FAULT", 30_000);
    // deno-lint-ignore no-explicit-any
    const entries: any[] = (await api.get("/v0/audit?origin=alarm")).json.entries;
    assert.equal(entries.length, 1);
    assert.equal(entries[0].action, "mode");
    assert.equal(entries[0].function, "FAULT");
    assert.equal(entries[0].outcome, "accepted");
    assert.deepEqual(entries[0].origin, { kind: "alarm", alarm_id: "too_fast" });
    assert.equal(entries[0].args.from, "MANUAL");
    assert.match(entries[0].args.reason, /too_fast/);
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/audit records an operator's alarm ack, shelve and unshelve, and a refused shelve, naming who", async () => {
  const fx = await startHttpFixture({
    config: {
      ...alarmsConfig(`
alarms:
  - { id: always, signal: sim0/tempctl0/tc1_temp, lo: 1000, message: Always active }
  - { id: trip, signal: sim0/tempctl0/tc1_temp, lolo: 999, action: fault }
`),
    },
  });
  try {
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    await waitFor(
      "the alarm is active",
      async () => (await api.get("/v0/alarms/always")).json.alarm.state === "active",
    );
    assert.equal((await api.post("/v0/alarms/always/ack", {})).status, 200);
    assert.equal((await api.post("/v0/alarms/always/shelve", { duration_ms: 60_000 })).status, 200);
    assert.equal((await api.post("/v0/alarms/always/unshelve", {})).status, 200);
    assert.equal((await api.post("/v0/alarms/trip/shelve", { duration_ms: 1000 })).status, 409);
    const entries = (await api.get("/v0/audit")).json.entries.filter((e: { action: string }) =>
      e.action === "alarm"
    );
    assert.deepEqual(
      entries.map((e: Record<string, unknown>) => [e.function, e.args, e.outcome]),
      [
        ["ack", { alarm_id: "always" }, "accepted"],
        ["shelve", { alarm_id: "always", duration_ms: 60_000 }, "accepted"],
        ["unshelve", { alarm_id: "always" }, "accepted"],
        ["shelve", { alarm_id: "trip", duration_ms: 1000 }, "refused"],
      ],
    );
    for (const e of entries) {
      assert.equal(e.origin.kind, "http");
      assert.equal(e.origin.address, "127.0.0.1");
      assert.ok(typeof e.origin.token_name === "string" && e.origin.token_name !== "");
    }
    assert.match(entries[3].reason, /^FAILED_PRECONDITION: Alarm trip has action fault/);
  } finally {
    await fx.close();
  }
});
