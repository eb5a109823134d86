/**
 * A reload that changes a delayed alarm while it restarts the provider the alarm reads takes the
 * alarm out before the provider is stopped and puts the file's version back with the alarms
 * section. When the restart fails, that version's delay runs from when its input became unusable
 * -- the provider's stop -- not from the alarms section (docs/alarms.md, "Delay": "An alarm a
 * reload adds on a signal some alarm or interlock already read runs its delay from when that input
 * became unusable, not from the reload"), as it does when the provider is not restarted.
 */
import assert from "node:assert/strict";
import { startRuntime, tempDir, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { failedStartText } from "../../src/providers/mod.ts";

const DELAY_MS = 1000;
/** How long the replacement process lives before it fails its start (longer than the delay). */
const FAILS_AFTER_S = 2.5;

function guard(hihi: number) {
  return alarmsConfig(
    `
alarms:
  - { id: guard, signal: sim1/tempctl0/tc1_temp, hihi: ${hihi}, delay_ms: ${DELAY_MS} }
`,
    ["sim0", "sim1"],
  ).alarms;
}

Deno.test("Kernel.reload changing a delayed alarm and failing to restart its provider: the delay runs from the provider's stop, not from the alarms section", async () => {
  const script = `${tempDir()}/slow_fail.sh`;
  Deno.writeTextFileSync(script, `#!/bin/sh\nsleep ${FAILS_AFTER_S}\nexit 1\n`);
  Deno.chmodSync(script, 0o755);
  const rt = await startRuntime(
    testConfig({ providers: [simProvider("sim0"), simProvider("sim1")], alarms: guard(500) }),
    { arm: true },
  );
  try {
    await waitFor("sim1 sampled", () => rt.alarms.alarm("guard").quality === "OK", 5000);
    const stopped = performance.now();
    const report = await rt.reload({
      ...rt.config,
      providers: rt.config.providers.map((p) =>
        p.id === "sim1" ? { ...p, command: script, args: [] } : p
      ),
      alarms: guard(600),
    });
    assert.match(report.providers.failed.map(failedStartText).join(), /^sim1: /);
    assert.ok(performance.now() - stopped > DELAY_MS + 500, "the start failed after the delay");
    // Its input has been unusable since the stop, longer than its delay: raised at once.
    const alarm = rt.alarms.alarm("guard");
    assert.equal(alarm.state, "active", JSON.stringify(alarm));
    assert.equal(alarm.cause, "bad_quality");
  } finally {
    await rt.stop();
  }
});
