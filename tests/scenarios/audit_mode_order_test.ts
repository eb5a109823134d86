/**
 * The audit trail reads in the order things happened (docs/http-api.md "Audit trail"): a mode
 * request's entry is written when the mode changes, before its after_transition hooks run, so a
 * FAULT that one of them causes meanwhile follows it. Real HTTP on loopback, two simulated
 * providers as child processes, an alarm whose action is FAULT.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { call, hook } from "../safety/_fixture.ts";
import { alarmsConfig } from "./alarms_helpers.ts";
import {
  automationOptions,
  callAs,
  STOP_MOTOR_ON_FAULT,
  TreeDir,
  treeXml,
  tv,
} from "./automation_helpers.ts";

/** How long sim1's tempctl0 takes per call: the after-hook's second call is in flight that long. */
const SLOW_CALL_MS = 1500;

Deno.test("GET /v0/audit lists AUTO accepted before the FAULT its after_transition hook caused, with result.mode AUTO", async () => {
  const dir = await TreeDir.create();
  const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
  const base = automationOptions(tree, {
    config: { providers: [simProvider("sim0"), simProvider("sim1")] },
  });
  // Relay 1 on raises relay_trip, whose action forces FAULT (at sim0's next poll).
  const { alarms } = alarmsConfig(`
alarms:
  - { id: relay_trip, signal: sim0/relayio0/relay_ch1_state, alarm_when: true, action: fault }
`);
  const afterAuto = hook(
    "MANUAL",
    "AUTO",
    [
      call("sim0/relayio0", "set_relay_ch1", { enabled: true }),
      call("sim1/tempctl0", "set_setpoint", { value: { double: 30 } }),
    ],
    false,
    "automation.mode_transition_hooks.after_transition[0]",
  );
  const fx = await startHttpFixture({
    config: {
      ...base,
      alarms,
      automation: {
        ...base.automation,
        modeTransitionHooks: {
          beforeTransition: [STOP_MOTOR_ON_FAULT],
          afterTransition: [afterAuto],
        },
      },
    },
  });
  try {
    const url = `http://127.0.0.1:${(await fx.serve()).port}`;
    const post = async (path: string, body: unknown) => {
      const r = await apiFetch(`${url}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      return { status: r.status, json: await r.json() };
    };
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    // The after-hook's second call stays in flight while sim0's poll sees relay 1 on.
    await callAs(fx.runtime, "manual", "sim1/chaos_control", "inject_call_latency", {
      device_id: tv.s("tempctl0"),
      latency_ms: tv.i(SLOW_CALL_MS),
    });
    const auto = await post("/v0/mode", { mode: "AUTO" });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));
    assert.equal(auto.json.mode, "FAULT", "the alarm faulted the runtime while the hooks ran");

    const r = await apiFetch(`${url}/v0/audit?limit=1000`);
    assert.equal(r.status, 200);
    // deno-lint-ignore no-explicit-any
    const entries: any[] = (await r.json()).entries;
    const seqs = entries.map((e) => e.seq);
    assert.deepEqual(seqs, [...seqs].sort((a, b) => a - b), "oldest first");
    // The mode requests and the FAULT, as the trail lists them; each entry's mode is the mode
    // when it was decided.
    assert.deepEqual(
      entries
        .filter((e) => e.action === "mode")
        .map((e) => [e.function, e.origin.kind, e.outcome, e.mode]),
      [
        ["MANUAL", "http", "accepted", "MANUAL"],
        ["AUTO", "http", "accepted", "AUTO"],
        ["FAULT", "alarm", "accepted", "FAULT"],
      ],
    );
    // The after-hook's calls come after the change they follow (the second one is refused or
    // accepted, whether FAULT came before it was sent or while it was in flight).
    const seqOf = (fn: string) => entries.find((e) => e.action === "mode" && e.function === fn).seq;
    const hookCalls = entries.filter((e) =>
      e.origin.kind === "hook" && e.origin.transition === "MANUAL->AUTO"
    );
    assert.deepEqual(hookCalls.map((e) => e.function), ["set_relay_ch1", "set_setpoint"]);
    assert.ok(
      hookCalls.every((e) => e.seq > seqOf("AUTO")),
      `after-hook calls at ${hookCalls.map((e) => e.seq)}, AUTO at ${seqOf("AUTO")}`,
    );
    const accepted = entries.find((e) => e.action === "mode" && e.function === "AUTO");
    assert.deepEqual(accepted.args, { from: "MANUAL" });
    assert.deepEqual(accepted.result, { mode: "AUTO", hook_failures: 0 });
    assert.equal(typeof accepted.latency_ms, "number");
  } finally {
    await fx.close();
    await dir.dispose();
  }
});
