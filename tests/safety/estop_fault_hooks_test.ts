/**
 * The e-stop's wait for the hooks into FAULT is bounded as a whole (FAULT_HOOKS_ANSWER_WAIT_MS),
 * not only by each hook call's deadline: a hook whose calls hang answers with the failures known
 * so far and `hooks_pending`. Virtual time (runUntil): the plant's latency and every deadline run
 * on the test's clock, nothing waits in real time.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { FAULT_HOOKS_ANSWER_WAIT_MS } from "../../src/control/mod.ts";
import { call, hook, plantProvider } from "./_fixture.ts";
import { ManualClock, runToSettle } from "../helpers/clock.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { rig } from "../helpers/rig.ts";

Deno.test("Estop answers after FAULT_HOOKS_ANSWER_WAIT_MS with the hook failures so far and hooks_pending while hook calls hang", async () => {
  const clock = new ManualClock();
  const heaterOff = call("plant/plant0", "set_heater", { enabled: false });
  const r = await rig({
    // Each actuating call takes 60 s; each one's deadline is 30 s: two of them hang for 60 s.
    providers: [plantProvider("plant", { latencyMs: 60_000, timeoutMs: 30_000 })],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [
          hook("*", "FAULT", [heaterOff, heaterOff, call("ghost/dev0", "stop")], false, "h"),
        ],
      },
    },
    safety: { present: true },
    clock,
    host: { files: new MemoryFiles() },
  });
  const rt = r.kernel;
  try {
    const startedAt = clock.monoMs();
    const result = await runToSettle(clock, rt.estop.trigger("hooks hang"), "the e-stop");
    const tookMs = clock.monoMs() - startedAt;
    assert.equal(result.hooks_pending, true, `answered after ${tookMs} ms without hooks_pending`);
    assert.ok(tookMs <= FAULT_HOOKS_ANSWER_WAIT_MS, `answered after ${tookMs} ms`);
    // The call to the other provider failed at once: it is listed; the plant's are not yet.
    assert.deepEqual(result.hook_failures.map((f) => f.error), [
      "NOT_FOUND: Provider not found: ghost",
    ]);
    // They still run: re-arming waits for them.
    rt.estop.clear();
    await assert.rejects(rt.modes.request("MANUAL"), (e: RuntimeError) => {
      assert.match(e.message, /^FAULT hooks are still running/);
      return true;
    });
  } finally {
    await runToSettle(clock, rt.stop(), "the stop");
  }
});
