/**
 * A stop action goes to its provider right after the call on the wire, before the calls queued
 * there (docs/safety.md, step 2): read-only calls admitted before the stop pass the latch and FAULT,
 * each up to the provider's timeout_ms, so a ladder call behind them would reach the safe state
 * only after all of them, and one that found the queue full would fail as busy. `POST /v0/estop`
 * over real HTTP on loopback; the plant provider (tests/safety/_plant_provider.ts) runs as a child
 * process, its read_status slowed, and each read_status answers the fan duty as it arrived: the
 * order in which the provider received the reads and the ladder's set_fan.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import type { CallResult } from "../../src/control/mod.ts";
import { MAX_QUEUED_CALLS_PER_PROVIDER } from "../../src/control/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { call, d, manualCall, plantProvider } from "../safety/_fixture.ts";

/** plant0's read_status function id. */
const READ_STATUS = 3;
/** plant0's set_fan function id. */
const SET_FAN = 2;
/** The fan duty set before the stop; the ladder sets 0. */
const RUNNING_DUTY = 0.5;

/** The fixture: `plant`, its read_status answering `readLatencyMs` after it arrived. */
function fixture(readLatencyMs: number, timeoutMs: number) {
  return startHttpFixture({
    config: {
      providers: [plantProvider("plant", { readLatencyMs, timeoutMs })],
      pollingIntervalMs: 60_000,
      safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
    },
  });
}

/** A manual read_status to plant0 and whether it was written to the provider after the latch. */
interface Read {
  readonly answer: Promise<CallResult>;
  /** Null until it is written to the provider. */
  readonly afterLatch: boolean | null;
}

/** Sends a read_status to plant0; `onSent` once it is written to the provider. */
function read(rt: Kernel, onSent?: () => void): Read {
  let afterLatch: boolean | null = null;
  const answer = rt.router.call({
    providerId: "plant",
    deviceId: "plant0",
    functionId: READ_STATUS,
    args: {},
    origin: "manual",
    onSent: () => {
      afterLatch = rt.estop.latched;
      onSent?.();
    },
  });
  // Awaited by the test; a failed assertion before that must not be hidden by its rejection.
  answer.catch(() => {});
  return {
    answer,
    get afterLatch() {
      return afterLatch;
    },
  };
}

/** The fan duty a read_status answer says it found as it arrived. */
function dutyAtArrival(r: CallResult): number {
  const v = r.results.fan_duty;
  assert.ok(v?.type === "double", JSON.stringify(r.results));
  return v.double;
}

/**
 * The fan duty each read written to the provider after the latch found as it arrived (at least one
 * is): the ladder's set_fan went before every one of them when each found 0.
 */
async function dutiesAfterLatch(reads: readonly Read[]): Promise<number[]> {
  const after = reads.filter((r) => r.afterLatch === true);
  assert.ok(after.length > 0, "no read was written to the provider after the latch");
  return (await Promise.all(after.map((r) => r.answer))).map(dutyAtArrival);
}

/** The e-stop's actions as `device function success`. */
function actions(
  json: { actions: { device_handle: string; function: string; success: boolean }[] },
): string[] {
  return json.actions.map((a) => `${a.device_handle} ${a.function} ${a.success}`);
}

Deno.test("Estop ladder call goes to its provider right after the call on the wire, before 10 slow read-only calls queued there", async () => {
  const fx = await fixture(300, 5000);
  try {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(RUNNING_DUTY) });
    const sent = Promise.withResolvers<void>();
    const onWire = read(rt, sent.resolve);
    const queued = Array.from({ length: 10 }, () => read(rt));
    await sent.promise; // the first read is on the wire, ten queued behind it
    const r = await fx.request("POST", "/v0/estop", { body: { reason: "queued reads" } });
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(actions(r.json), ["plant/plant0 set_fan true"]);
    assert.equal(onWire.afterLatch, false);
    assert.equal(dutyAtArrival(await onWire.answer), RUNNING_DUTY, "the call on the wire first");
    const duties = await dutiesAfterLatch(queued);
    assert.deepEqual(duties, duties.map(() => 0), "a queued read went before the ladder's call");
  } finally {
    await fx.close();
  }
});

Deno.test("Estop ladder call is neither refused as busy nor sent after the calls queued on a provider queue kept full of slow read-only calls", async () => {
  const fx = await fixture(100, 1000);
  const refill = { on: true };
  const reads: Read[] = [];
  try {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    await manualCall(rt, "plant", "plant0", SET_FAN, { duty: d(RUNNING_DUTY) });
    // Each read, once written to the provider, queues two more (one is refused while the queue is
    // full): the queue stays full, whatever else takes a place in it, while the test says.
    const sent = Promise.withResolvers<void>();
    const refilling = () => {
      sent.resolve();
      if (refill.on) reads.push(read(rt, refilling), read(rt, refilling));
    };
    reads.push(read(rt, refilling));
    for (let k = 0; k < MAX_QUEUED_CALLS_PER_PROVIDER; k++) reads.push(read(rt, refilling));
    await sent.promise;
    await assert.rejects(
      read(rt).answer,
      new RegExp(`Provider busy: plant has ${MAX_QUEUED_CALLS_PER_PROVIDER} calls queued`),
      "the queue is full",
    );
    const r = await fx.request("POST", "/v0/estop", { body: { reason: "full queue" } });
    refill.on = false;
    assert.equal(r.status, 200, r.text);
    assert.deepEqual(actions(r.json), ["plant/plant0 set_fan true"], JSON.stringify(r.json));
    const duties = await dutiesAfterLatch(reads);
    assert.deepEqual(duties, duties.map(() => 0), "a queued read went before the ladder's call");
  } finally {
    refill.on = false;
    await fx.close();
    await Promise.allSettled(reads.map((r) => r.answer));
  }
});
