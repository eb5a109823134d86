/**
 * A stop action ends with its call's answer, not with the post-call poll the router makes after it
 * (docs/safety.md, step 2): a reload that removes the provider a ladder call is at waits for that
 * call, within its bound (stopActionWorstCaseMs: the call on the wire ahead, then its own, each up
 * to timeout_ms, + DRAIN_MARGIN_MS), and a slow read of the device afterwards does not hold it
 * past that bound. In-process: the kernel on a manual clock, the plant provider (in-process, one
 * request at a time) whose actuating calls take just under its timeout_ms.
 */
import assert from "node:assert/strict";
import { stopActionWorstCaseMs } from "../../src/control/mod.ts";
import { DRAIN_MARGIN_MS } from "../../src/safety/mod.ts";
import { ManualClock, runDueUntil, runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { rig } from "../helpers/rig.ts";
import { call, d, manualCall, plantProvider } from "./_fixture.ts";

/** plant's timeout_ms. */
const TIMEOUT_MS = 5000;
/** How long each actuating call to plant takes, and then each read of plant0: within TIMEOUT_MS. */
const SLOW_MS = 4900;

Deno.test("Estop ladder call: a slow post-call poll after it does not keep a reload that removes its provider waiting past the call's bound", async () => {
  const clock = new ManualClock();
  await using r = await rig({
    clock,
    providers: [plantProvider("plant", { latencyMs: SLOW_MS, timeoutMs: TIMEOUT_MS })],
    pollingIntervalMs: 60_000,
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
    arm: true,
  });
  const rt = r.kernel;
  const fake = r.provider<FakeProvider>("plant");
  // An operator's call on the wire: the ladder's call waits for it (its turn), then runs.
  const manual = manualCall(rt, "plant", "plant0", 2, { duty: d(0.5) }).catch((err) => err);
  await runUntil(clock, "the operator's call at plant", () => fake.count("call") === 1);
  // The ladder's call, once asked, waits its turn behind the operator's (the reload comes then).
  const router = rt.router;
  const ask = router.call.bind(router);
  let ladderAsked = false;
  router.call = (req) => {
    if (req.origin === "safety") ladderAsked = true;
    return ask(req);
  };
  const stop = rt.estop.trigger("ladder x slow post-call poll");
  await runDueUntil(clock, "the ladder's call asked", () => ladderAsked);
  const next = {
    ...rt.config,
    providers: [],
    safety: { ...rt.config.safety, safeState: { ...rt.config.safety.safeState, hooks: [] } },
  };
  const report = rt.reload(next);
  // Once the ladder's call is at plant (the operator's call and its poll done), plant0's reads
  // turn slow: the ladder call's post-call poll takes SLOW_MS.
  await runUntil(clock, "the ladder's call at plant", () => fake.count("call") === 2);
  fake.answer("read_signals", { delayMs: SLOW_MS }, "plant0");
  const result = await runToSettle(clock, stop, "the e-stop");
  assert.deepEqual(result.actions, [
    { device_handle: "plant/plant0", function: "set_fan", success: true },
  ]);
  assert.deepEqual((await runToSettle(clock, report, "the reload")).providers.removed, ["plant"]);
  assert.equal((await manual).functionName, "set_fan", "the operator's call was answered");
  const bound = stopActionWorstCaseMs(TIMEOUT_MS) + DRAIN_MARGIN_MS;
  const lines = r.lines.filter((l) => l.includes("reload: ") && l.includes(" to plant"));
  assert.equal(lines.length, 1, lines.join("\n"));
  assert.doesNotMatch(lines[0]!, new RegExp(`had not finished within ${bound} ms`));
  assert.match(
    lines[0]!,
    /^INFO .*reload: waited \d+ ms for the e-stop's safe-state calls to plant, then stopped it$/,
  );
});
