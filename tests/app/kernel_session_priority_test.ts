/**
 * The kernel's wiring of SessionPriority (src/app/session_priority.ts): the session raised while
 * its provider starts, settled once it is up, and left as it is while the runtime stops (its
 * providers going is the runtime's end, not a provider down: no raise and no fork for it).
 */
import assert from "node:assert/strict";
import type { PriorityResult } from "../../src/common/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel raises its session while its provider starts, settles it once up, and asks nothing while it stops", async () => {
  const asked: number[] = [];
  const setSessionPriority = (nice: number): Promise<PriorityResult> => {
    asked.push(nice);
    return Promise.resolve({ outcome: "set" });
  };
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { setSessionPriority },
  });
  let stopped = false;
  try {
    await waitFor("the session settled", () => asked.at(-1) === 0);
    assert.deepEqual(asked, [-10, 0]);
    await rt.stop();
    stopped = true;
    // Anything asked during the stop would have been made by now (the double answers at once).
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(asked, [-10, 0], "no setting while the runtime stops");
  } finally {
    if (!stopped) await rt.stop();
  }
});
