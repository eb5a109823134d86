/**
 * POST /v0/alarms/{id}/ack | shelve | unshelve over real HTTP on an alarm the test raises by
 * setting a motor duty (the inert simulated provider): the transitions and their SSE events, the
 * refusals (unknown id 404, nothing to acknowledge 409, a stopping alarm cannot be shelved 409,
 * a duration outside 1 ms .. 8 h 400), and a shelve that runs out on its own.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { alarmsConfig, Api, callBody, EventStream } from "./alarms_helpers.ts";

const duty = (v: number) =>
  callBody("sim0/motorctl0", 10, {
    motor_index: { type: "int64", int64: 1 },
    duty: { type: "double", double: v },
  });

Deno.test("Alarms are acknowledged, shelved (bounded, never a stopping one) and unshelved over HTTP", async () => {
  const fx = await startHttpFixture({
    config: {
      providers: [simProvider("sim0", { yaml: SIM_INERT_YAML })],
      // A stale bound no load reaches (1 min, not motor1_duty's 0.8 s): this test is about the
      // operator's actions, and a poll late past the bound would raise both alarms for their bad
      // input (rightly; duty_trip faults the machine).
      health: { staleness: { warnAfterMs: 0, staleAfterMs: 60_000 } },
      ...alarmsConfig(`
alarms:
  - { id: duty_high, signal: sim0/motorctl0/motor1_duty, hi: 0.5, message: Motor 1 fast }
  - { id: duty_trip, signal: sim0/motorctl0/motor1_duty, hi: 0.95, action: fault }
`),
    },
  });
  const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
  const sse = await EventStream.open(api.base);
  try {
    const transitions = () =>
      sse.of("alarm").filter((f) => f.data.alarm_id === "duty_high").map((f) =>
        `${f.data.transition}:${f.data.state}`
      );
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);

    const notActive = await api.post("/v0/alarms/duty_high/ack");
    assert.equal(notActive.status, 409);
    assert.deepEqual(notActive.json.status, {
      code: "FAILED_PRECONDITION",
      message: "Alarm duty_high is normal: only an active alarm is acknowledged",
    });
    const unknown = await api.post("/v0/alarms/nope/ack");
    assert.equal(unknown.status, 404);
    assert.equal(unknown.json.status.message, "Alarm not found: nope");
    assert.equal((await api.get("/v0/alarms/nope")).status, 404);

    assert.equal((await api.post("/v0/call", duty(0.7))).status, 200);
    await waitFor("raised", () => transitions().length === 1);
    assert.deepEqual(transitions(), ["raise:active"]);

    const acked = await api.post("/v0/alarms/duty_high/ack", {});
    assert.equal(acked.status, 200);
    assert.equal(acked.json.alarm.state, "active_acked");
    assert.equal((await api.post("/v0/alarms/duty_high/ack")).json.alarm.state, "active_acked");

    for (
      const [body, message] of [
        [{}, "duration_ms: missing (how long to shelve, in ms, at most 8 h)"],
        [{ duration_ms: 0 }, "duration_ms: must be an integer from 1 to 28800000 (8 h), got 0"],
        [
          { duration_ms: 28_800_001 },
          "duration_ms: must be an integer from 1 to 28800000 (8 h), got 28800001",
        ],
        [
          { duration_ms: "60000" },
          'duration_ms: must be an integer from 1 to 28800000 (8 h), got "60000"',
        ],
        [[60000], "body: must be a JSON object with duration_ms"],
      ] as const
    ) {
      const r = await api.post("/v0/alarms/duty_high/shelve", body);
      assert.equal(r.status, 400, JSON.stringify(body));
      assert.deepEqual(r.json.status, { code: "INVALID_ARGUMENT", message });
    }
    const stopping = await api.post("/v0/alarms/duty_trip/shelve", { duration_ms: 60_000 });
    assert.equal(stopping.status, 409);
    assert.equal(
      stopping.json.status.message,
      "Alarm duty_trip has action fault: an alarm that faults the machine cannot be shelved",
    );

    const shelved = await api.post("/v0/alarms/duty_high/shelve", { duration_ms: 28_800_000 });
    assert.equal(shelved.status, 200);
    assert.equal(shelved.json.alarm.state, "shelved");
    assert.equal(shelved.json.alarm.level, "MINOR", "the condition still holds underneath");
    const now = Date.now();
    assert.ok(Math.abs(shelved.json.alarm.shelved_until_epoch_ms - (now + 28_800_000)) < 5_000);
    assert.equal((await api.post("/v0/call", duty(0.2))).status, 200);
    assert.equal((await api.post("/v0/call", duty(0.8))).status, 200);
    const unshelved = await api.post("/v0/alarms/duty_high/unshelve");
    assert.equal(unshelved.status, 200);
    assert.equal(
      unshelved.json.alarm.state,
      "active",
      "raised again while shelved: unacknowledged",
    );
    assert.equal((await api.post("/v0/alarms/duty_high/unshelve")).status, 409);

    // A short shelve runs out on its own (a real timer). The events come over the stream: wait for
    // an unshelve after this shelve (the last one seen may still be the unshelve above).
    const seen = transitions().length;
    assert.equal(
      (await api.post("/v0/alarms/duty_high/shelve", { duration_ms: 300 })).json.alarm.state,
      "shelved",
    );
    await waitFor(
      "the shelve ran out",
      () => transitions().slice(seen).join() === "shelve:shelved,unshelve:active",
      10_000,
    );
    assert.equal((await api.get("/v0/alarms/duty_high")).json.alarm.shelved_until_epoch_ms, null);
    assert.equal((await api.post("/v0/call", duty(0))).status, 200);
    await waitFor("cleared", () => transitions().at(-1) === "clear:normal");
    assert.deepEqual(transitions(), [
      "raise:active",
      "ack:active_acked",
      "shelve:shelved",
      "unshelve:active",
      "shelve:shelved",
      "unshelve:active",
      "clear:normal",
    ]);
    const last = sse.of("alarm").at(-1)!.data;
    assert.deepEqual(Object.keys(last).sort(), [
      "action",
      "alarm_id",
      "cause",
      "level",
      "limit",
      "message",
      "quality",
      "shelved_until_epoch_ms",
      "signal",
      "state",
      "timestamp_ms",
      "transition",
      "value",
    ]);
    const list = (await api.get("/v0/alarms")).json.alarms;
    assert.deepEqual(list.map((a: { id: string }) => a.id), ["duty_high", "duty_trip"]);
    assert.equal(list[0].transitions.length, 7);
  } finally {
    await sse.close();
    await fx.close();
  }
});

Deno.test("/v0/alarms and /v0/interlocks answer empty lists without alarms", async () => {
  const none = await startHttpFixture({ start: false });
  try {
    assert.deepEqual((await none.request("GET", "/v0/alarms")).json.alarms, []);
    assert.deepEqual((await none.request("GET", "/v0/interlocks")).json.interlocks, []);
  } finally {
    await none.close();
  }
});
