/**
 * The audit trail over real HTTP with the simulated provider: every origin appears with its
 * identity (an HTTP client's address and token name, the tree node, the hook's transition, the
 * e-stop ladder's rung) and every refusal with its reason (IDLE gate, validation, e-stop latch);
 * GET /v0/audit filters and rejects bad parameters naming them.
 */
import { apiFetch } from "../helpers/openapi_check.ts";
import assert from "node:assert/strict";
import type { CallArgValue, CallConfig, HookConfig } from "../../src/config/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import {
  automationOptions,
  MOTOR_THEN_SLEEP,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
} from "./automation_helpers.ts";

const TOKEN = "audit-test-token-0123456789";
const i = (v: number): CallArgValue => ({ type: "int64", int64: v });
const d = (v: number): CallArgValue => ({ type: "double", double: v });

/** after_transition IDLE -> MANUAL: motor 2 to duty 0 (runs in MANUAL, so it actuates). */
const ZERO_MOTOR2_ON_ARM: HookConfig = {
  from: "IDLE",
  to: "MANUAL",
  failOnError: false,
  path: "automation.mode_transition_hooks.after_transition[0]",
  calls: [{
    deviceHandle: "sim0/motorctl0",
    functionId: 0,
    functionName: "set_motor_duty",
    args: { motor_index: i(2), duty: d(0) },
    path: "automation.mode_transition_hooks.after_transition[0].calls[0]",
  }],
};

const LADDER_CALL: CallConfig = {
  deviceHandle: "sim0/motorctl0",
  functionId: 0,
  functionName: "set_motor_duty",
  args: { motor_index: i(1), duty: d(0) },
  path: "safety.safe_state.hooks[0]",
};

function duty(value: number) {
  return {
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: value } },
  };
}

Deno.test("GET /v0/audit names every origin with its identity and every refusal with its reason", async () => {
  const dir = await TreeDir.create();
  const tree = await dir.write("recipe.xml", MOTOR_THEN_SLEEP);
  const base = automationOptions(tree);
  const fx = await startHttpFixture({
    config: {
      ...base,
      http: { authEnabled: true, authToken: TOKEN, authExemptLoopback: true },
      automation: {
        ...base.automation,
        modeTransitionHooks: {
          beforeTransition: [STOP_MOTOR_ON_FAULT],
          afterTransition: [ZERO_MOTOR2_ON_ARM],
        },
      },
      safety: { hooks: [LADDER_CALL] },
    },
    api: { apiToken: TOKEN },
  });
  try {
    const url = `http://127.0.0.1:${(await fx.serve()).port}`;
    const send = async (method: string, path: string, body?: unknown, token = true) => {
      const headers: Record<string, string> = {};
      if (token) headers.authorization = `Bearer ${TOKEN}`;
      if (body !== undefined) headers["content-type"] = "application/json";
      const r = await apiFetch(`${url}${path}`, {
        method,
        headers,
        body: body === undefined ? null : JSON.stringify(body),
      });
      return { status: r.status, json: await r.json() };
    };
    // deno-lint-ignore no-explicit-any
    const audit = async (query = ""): Promise<any[]> => {
      const r = await send("GET", `/v0/audit${query}`);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      return r.json.entries;
    };

    // IDLE refuses an actuating call; a loopback client without a token acts as `local`.
    assert.equal((await send("POST", "/v0/call", duty(0.3), false)).status, 409);
    let entries = await audit();
    assert.equal(entries.length, 1);
    assert.deepEqual(entries[0].origin, {
      kind: "http",
      address: "127.0.0.1",
      token_name: "local",
    });
    assert.equal(entries[0].action, "call");
    assert.equal(entries[0].outcome, "refused");
    assert.equal(entries[0].refused_by, "mode");
    assert.match(entries[0].reason, /^FAILED_PRECONDITION: Call blocked in IDLE mode/);
    assert.equal(entries[0].mode, "IDLE");
    assert.equal(entries[0].device_handle, "sim0/motorctl0");
    assert.equal(entries[0].function, "set_motor_duty");
    assert.deepEqual(entries[0].args.duty, { type: "double", double: 0.3 });
    assert.equal(entries[0].count, 1);

    // Arming with the token: the mode entry names `default`, the after-hook its transition.
    assert.equal((await send("POST", "/v0/mode", { mode: "MANUAL" })).status, 200);
    // Validation refusal, then an accepted call with the provider's result and latency.
    assert.equal((await send("POST", "/v0/call", duty(5))).status, 400);
    assert.equal((await send("POST", "/v0/call", duty(0.25))).status, 200);
    assert.equal(
      (await send("POST", "/v0/parameters", { name: "target_temp", value: 55 })).status,
      200,
    );
    entries = (await audit()).slice(1);
    // The mode change first, then its after-hook's call (the trail reads as things happened).
    assert.deepEqual(entries.map((e) => [e.action, e.origin.kind, e.outcome]), [
      ["mode", "http", "accepted"],
      ["call", "hook", "accepted"],
      ["call", "http", "refused"],
      ["call", "http", "accepted"],
      ["parameter", "http", "accepted"],
    ]);
    const [mode, hook, invalid, accepted, parameter] = entries;
    assert.deepEqual(hook.origin, {
      kind: "hook",
      transition: "IDLE->MANUAL",
      hook: "automation.mode_transition_hooks.after_transition[0]",
    });
    assert.equal(hook.mode, "MANUAL");
    assert.deepEqual(mode.origin, { kind: "http", address: "127.0.0.1", token_name: "default" });
    assert.equal(mode.function, "MANUAL");
    assert.equal(invalid.refused_by, "validation");
    assert.match(invalid.reason, /^INVALID_ARGUMENT: .*duty/);
    assert.equal(accepted.refused_by, null);
    assert.deepEqual(accepted.result, {});
    assert.equal(typeof accepted.latency_ms, "number");
    assert.equal(parameter.function, "target_temp");
    assert.deepEqual(parameter.args, { value: 55 });

    // AUTO: the tree's call carries its node path.
    assert.equal((await send("POST", "/v0/mode", { mode: "AUTO" })).status, 200);
    const auto = await waitFor("the tree's call", async () => {
      const found = await audit("?origin=automation");
      return found.length > 0 ? found : null;
    });
    assert.equal(auto.length, 1);
    assert.match(auto[0].origin.node, /^Main\/.*CallDevice/);
    assert.equal(auto[0].mode, "AUTO");
    assert.deepEqual(auto[0].args.duty, { type: "double", double: 0.5 });

    // The e-stop: its entry, FAULT, the hooks into FAULT and the ladder's calls, each named.
    const stop = await send("POST", "/v0/estop", { reason: "audit test" });
    assert.equal(stop.status, 200);
    entries = await audit("?since=0");
    const estop = entries.find((e) => e.action === "estop");
    assert.deepEqual(estop.origin, { kind: "http", address: "127.0.0.1", token_name: "default" });
    assert.equal(estop.args.cause, "api");
    // The reason, read after the latch, is in an entry of the same stop (function "reason").
    const withReason = entries.filter((e) => e.action === "estop" && e.args.reason !== null);
    assert.deepEqual(
      withReason.map((e) => [e.origin, e.function, e.args]),
      [[estop.origin, "reason", { reason: "audit test", cause: "api" }]],
      "the e-stop's reason is in no audit entry",
    );
    const fault = entries.find((e) => e.action === "mode" && e.function === "FAULT");
    assert.deepEqual(fault.origin, { kind: "estop", cause: "api" });
    const intoFault = entries.filter((e) =>
      e.origin.kind === "hook" && e.origin.transition === "AUTO->FAULT"
    );
    assert.equal(intoFault.length, 1);
    assert.equal(intoFault[0].outcome, "accepted");
    const ladder = entries.filter((e) => e.origin.kind === "estop" && e.action === "call");
    assert.equal(ladder.length, 1);
    assert.deepEqual(ladder[0].origin, { kind: "estop", rung: "hooks", cause: "api" });
    assert.equal(ladder[0].outcome, "accepted");

    // Re-arming while latched is refused by the latch; the clear is recorded.
    assert.equal((await send("POST", "/v0/mode", { mode: "MANUAL" })).status, 409);
    assert.equal((await send("POST", "/v0/estop/clear")).status, 200);
    entries = (await audit()).slice(-2);
    assert.equal(entries[0].action, "mode");
    assert.equal(entries[0].outcome, "refused");
    assert.equal(entries[0].refused_by, "estop");
    assert.match(entries[0].reason, /E-stop latched/);
    assert.equal(entries[1].action, "estop_clear");
    assert.equal(entries[1].origin.token_name, "default");

    // A request without a valid token from the network (401) is recorded as refused by auth.
    const denied = await fx.request("POST", "/v0/estop/clear", { remoteAddr: "10.1.2.3" });
    assert.equal(denied.status, 401);
    const [unauthenticated] = (await audit()).slice(-1);
    assert.equal(unauthenticated.action, "estop_clear");
    assert.equal(unauthenticated.outcome, "refused");
    assert.equal(unauthenticated.refused_by, "auth");
    assert.deepEqual(unauthenticated.origin, { kind: "http", address: "10.1.2.3" });

    // Filters and paging.
    const hooks = await audit("?origin=hook");
    assert.deepEqual(hooks.map((e) => e.origin.transition), ["IDLE->MANUAL", "AUTO->FAULT"]);
    const motors = await audit("?device_id=motorctl0");
    assert.ok(motors.every((e) => e.device_handle === "sim0/motorctl0"));
    assert.deepEqual(await audit("?device_id=sim0/tempctl0"), []);
    const everything = await audit();
    const page1 = await send("GET", "/v0/audit?limit=2");
    assert.equal(page1.json.entries.length, 2);
    const page2 = await send("GET", `/v0/audit?limit=1000&cursor=${page1.json.next_cursor}`);
    assert.deepEqual([...page1.json.entries, ...page2.json.entries], everything);
    assert.equal(page2.json.next_cursor, null);
    const later = await audit(`?since=${estop.time_epoch_ms}`);
    assert.ok(later.every((e) => e.last_time_epoch_ms >= estop.time_epoch_ms));
    assert.ok(later.length < everything.length);

    for (
      const [query, name] of [
        ["limit=0", "limit"],
        ["limit=1001", "limit"],
        ["origin=robot", "origin"],
        ["since=yesterday", "since"],
        ["until=-1", "until"],
        ["cursor=zzzz", "cursor"],
        ["device_id=", "device_id"],
      ]
    ) {
      const bad = await send("GET", `/v0/audit?${query}`);
      assert.equal(bad.status, 400, query);
      assert.match(bad.json.status.message, new RegExp(`^${name}: `), query);
    }
  } finally {
    await fx.close();
    await dir.dispose();
  }
});
