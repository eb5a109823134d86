/**
 * A hook call into FAULT runs after FAULT is committed (docs/safety.md section 2): its failure
 * (`hook_failure`, a run's event of that category) is part of that FAULT entry's story, so it is
 * dated no earlier than the mode change it follows. A step back of the wall clock (NTP on a
 * Raspberry Pi without a real-time clock) while the hooks run must not date the failure an hour
 * before the FAULT entry that ran them. In-process: the Kernel's mode manager (not started) over an
 * empty registry, whose hook calls fail with NOT_FOUND; the wall clock steps back as FAULT is
 * announced.
 */
import assert from "node:assert/strict";
import { rigNotStarted } from "../helpers/rig.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { call, hook } from "../safety/_fixture.ts";

const NOW_MS = 1_700_000_000_123;

Deno.test("ModeManager dates a FAULT hook's failure no earlier than the FAULT entry when the wall clock steps back while the hooks run (NTP)", async () => {
  let wall = NOW_MS;
  const r = rigNotStarted({
    clock: withRealTimers({ nowMs: () => wall, monoMs: () => 0 }),
    logLevel: "warn",
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: {
        beforeTransition: [hook("*", "FAULT", [call("ghost/dev0", "heater_off")], false)],
        afterTransition: [],
      },
    },
    safety: { present: true },
  });
  const { modes, bus } = r.kernel;
  const told: [string, number][] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "mode_change" || event.kind === "hook_failure") {
      told.push([event.kind, event.timestamp_ms - NOW_MS]);
    }
    // NTP steps the wall clock back an hour once FAULT is announced, before its hooks answer.
    if (event.kind === "mode_change" && event.new_mode === "FAULT") wall = NOW_MS - 3_600_000;
  });
  await modes.request("MANUAL");
  const report = await modes.requestWithReport("FAULT");
  assert.equal(report.hook_failures.length, 1, "the hook's call failed");
  assert.deepEqual(
    told,
    [["mode_change", 0], ["mode_change", 0], ["hook_failure", 0]],
    "the failure is dated no earlier than the FAULT entry it follows",
  );
});
