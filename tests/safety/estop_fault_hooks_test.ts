/**
 * The e-stop's wait for the hooks into FAULT is bounded as a whole (FAULT_HOOKS_ANSWER_WAIT_MS),
 * not only by each hook call's deadline: a hook whose calls hang answers with the failures known
 * so far and `hooks_pending`. Virtual time (runUntil): the plant's latency and every deadline run
 * on the test's clock, nothing waits in real time.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import { FAULT_HOOKS_ANSWER_WAIT_MS } from "../../src/control/mod.ts";
import { hangingFaultHooksRig } from "./_fault_hooks_rig.ts";
import { runToSettle } from "../helpers/clock.ts";

Deno.test("Estop answers after FAULT_HOOKS_ANSWER_WAIT_MS with the hook failures so far and hooks_pending while hook calls hang", async () => {
  const { rt, clock, stop } = await hangingFaultHooksRig();
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
    await stop();
  }
});
