/**
 * A reload that drops a provider from the file changes the e-stop plan once: the registry tells
 * its host's `removed`, then (its id no longer configured) `unconfigured`, in one step. The plan
 * logged for it must be the one without the provider's devices -- not one that names the
 * actuating functions of a provider no longer configured as untouched, followed a
 * PLAN_LOG_INTERVAL_MS later by a second line for the same removal (docs/safety.md, "the plan is
 * logged again"). In-process: the kernel on a manual clock, two plant providers.
 */
import assert from "node:assert/strict";
import { PLAN_LOG_INTERVAL_MS } from "../../src/safety/mod.ts";
import { ManualClock, runToSettle } from "../helpers/clock.ts";
import { rig } from "../helpers/rig.ts";
import { plantProvider } from "./_fixture.ts";

Deno.test("Estop plan log: a reload dropping a provider logs one plan, without that provider's functions", async () => {
  const clock = new ManualClock();
  await using r = await rig({
    clock,
    providers: [plantProvider("plant"), plantProvider("other")],
    pollingIntervalMs: 60_000,
    safety: { zeroIsSafe: true },
  });
  const rt = r.kernel;
  const headers = () => r.lines.filter((l) => l.includes("e-stop plan ("));
  assert.equal(headers().length, 1, headers().join("\n"));
  assert.match(headers()[0]!, /e-stop plan \(start-up\): rung 'zero', \d+ call\(s\), 0 actuating/);
  // Long after start-up: the next change is logged at once.
  clock.advance(PLAN_LOG_INTERVAL_MS);
  const before = r.lines.length;
  const report = await runToSettle(
    clock,
    rt.reload({ ...rt.config, providers: rt.config.providers.filter((p) => p.id === "plant") }),
    "the reload",
  );
  assert.deepEqual(report.providers.removed, ["other"]);
  clock.advance(PLAN_LOG_INTERVAL_MS * 3);
  const after = headers().slice(1);
  assert.equal(after.length, 1, after.join("\n"));
  assert.match(
    after[0]!,
    /e-stop plan \(provider other removed\): rung 'zero', \d+ call\(s\), 0 actuating function/,
  );
  // Nothing of other is named after it is gone (no uncovered function, no unverified device).
  const naming = r.lines.slice(before).filter((l) => l.includes("other/"));
  assert.deepEqual(naming, []);
});
