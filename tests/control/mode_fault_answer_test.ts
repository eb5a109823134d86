/**
 * POST /v0/mode FAULT's answer waits for the hooks of the FAULT entry it commits at most
 * FAULT_HOOKS_ANSWER_WAIT_MS as a whole, as every other FAULT answer does: hook calls that hang
 * (a provider's calls run one after another, each up to its timeout_ms) answer with the failures
 * known then and hooks_pending. Virtual time (runUntil): the plant's latency and every deadline
 * run on the test's clock.
 */
import assert from "node:assert/strict";
import { FAULT_HOOKS_ANSWER_WAIT_MS } from "../../src/control/mod.ts";
import { call, callFlood, d } from "../safety/_fixture.ts";
import { faultHooksRig, hangingFaultHooksRig } from "../safety/_fault_hooks_rig.ts";
import { runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";

Deno.test("ModeManager requestWithReport(FAULT) answers after FAULT_HOOKS_ANSWER_WAIT_MS with the failures so far and hooks_pending while its hook calls hang", async () => {
  const { rt, clock, stop } = await hangingFaultHooksRig();
  try {
    const startedAt = clock.monoMs();
    const report = await runToSettle(clock, rt.modes.requestWithReport("FAULT"), "FAULT");
    const tookMs = clock.monoMs() - startedAt;
    assert.equal(report.hooks_pending, true, `answered after ${tookMs} ms without hooks_pending`);
    assert.ok(tookMs <= FAULT_HOOKS_ANSWER_WAIT_MS, `answered after ${tookMs} ms`);
    assert.equal(report.mode, "FAULT");
    assert.deepEqual(report.hook_failures.map((f) => f.error), [
      "NOT_FOUND: Provider not found: ghost",
    ]);
  } finally {
    await stop();
  }
});

Deno.test("ModeManager FAULT hook call to a provider whose queue is full is not refused as busy, as the e-stop ladder's is not", async () => {
  // A call on the wire for 1500 ms and 64 queued behind it (the bound): the hook's call, a stop
  // action, is queued all the same, before them, and sent once the call on the wire returns; FAULT
  // refuses the queued ones after it. Virtual time (runUntil).
  const { r, rt, clock, stop } = await faultHooksRig({
    latencyMs: 1500,
    timeoutMs: 2000,
    calls: [call("plant/plant0", "set_fan", { duty: { double: 0 } })],
  });
  try {
    await runToSettle(clock, rt.modes.request("MANUAL"), "MANUAL");
    const flood = callFlood(rt, "plant", "plant0", 2, (k) => ({ duty: d((k + 1) / 100) }));
    await runUntil(
      clock,
      "the first call on the wire",
      () => r.provider<FakeProvider>("plant").count("call") === 1,
    );
    const report = await runToSettle(clock, rt.modes.requestWithReport("FAULT"), "FAULT");
    const codes = await runToSettle(clock, flood, "the flood");
    assert.ok(codes.includes("UNAVAILABLE"), "the queue was full");
    assert.deepEqual(report.hook_failures.map((f) => f.error), []);
    // A hook call into FAULT is a stop action: it ends with its call's answer; the device's
    // post-call poll follows (e5b9bd44), so the cache shows the effect once that poll is in.
    await runUntil(clock, "the hook call's effect in the cache", () => {
      const v = rt.cache.signal("plant", "plant0", "fan_duty")?.value;
      return v?.type === "double" && v.double === 0;
    });
    assert.deepEqual(rt.cache.signal("plant", "plant0", "fan_duty")?.value, {
      type: "double",
      double: 0,
    });
  } finally {
    await stop();
  }
});
