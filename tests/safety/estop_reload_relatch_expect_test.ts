/**
 * A reload while latched that restarts a provider and changes its expectations reads them back
 * (docs/safety.md: "status never shows checks of expectations no longer in force"), also when the
 * latch its securing run was made under is released and pressed again before the reload's safety
 * section applies: that run's read-back is skipped (its latch was released), and the new latch's
 * stop, begun before the section applied, read back the old expectations.
 */
import assert from "node:assert/strict";
import { afterPolls, waitFor } from "../helpers/kernel.ts";
import { expectation, plantProvider } from "./_fixture.ts";
import {
  assertReloadReadBackInForce,
  HEATER_OFF,
  heldSlowRig,
  latchThenReloadRestartingPlant,
} from "./_held_slow_rig.ts";

Deno.test("Estop: a reload restarting a provider and changing its expectations reads them back when a release and a new press come before its safety section", async () => {
  const plant = plantProvider("plant");
  const { r: started, held } = await heldSlowRig(plant, [HEATER_OFF]);
  await using r = started;
  try {
    const rt = r.kernel;
    // The first latch: its stop is held by slow's ladder call.
    // The reload restarts plant (another timeout) and expects its fan at 0 too; plant, back
    // under the first latch, is secured, and its read-back waits for the first stop.
    const { first, report } = await latchThenReloadRestartingPlant(r, plant);
    // Released and latched again: the second latch's stop begins once the first has ended,
    // before the reload's safety section applies (the reload still polls plant).
    rt.estop.clear();
    const second = rt.estop.trigger("second latch");
    held.resolve();
    await first;
    await second;
    await assertReloadReadBackInForce(r, report);
    // Read back as of the latch in force, without the released latch's securing calls.
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    assert.deepEqual(
      page.entries.filter((e) =>
        e.action === "estop" && (e.args as { provider_ids?: string[] }).provider_ids !== undefined
      ).map((e) => ({
        reason: (e.args as { reason?: string }).reason,
        actions: (e.result as { actions: number }).actions,
        checks: (e.result as { checks_total: number }).checks_total,
      })),
      [{ reason: "expectations reloaded while latched", actions: 0, checks: 2 }],
    );
  } finally {
    held.resolve();
  }
});

Deno.test("Estop: a reload's read-back of changed expectations waiting behind a stop is skipped once its latch is released and pressed again", async () => {
  const { r: started, held } = await heldSlowRig(plantProvider("plant"), [HEATER_OFF]);
  await using r = started;
  try {
    const rt = r.kernel;
    // The first latch: its stop is held by slow's ladder call.
    const first = rt.estop.trigger("first latch");
    // The reload starts no provider and expects plant's fan at 0 too: that read-back waits for
    // the first stop, and so does the reload.
    const estop = rt.estop;
    const reconfigure = estop.reconfigure.bind(estop);
    let applied = false;
    estop.reconfigure = (...args) => {
      applied = true;
      return reconfigure(...args);
    };
    const safeState = rt.config.safety.safeState;
    const report = rt.reload({
      ...rt.config,
      safety: {
        ...rt.config.safety,
        safeState: {
          ...safeState,
          expect: [...safeState.expect, expectation("plant/plant0/fan_duty", { equals: 0 }, 1)],
        },
      },
    });
    await waitFor("the reload's safety section applied", () => applied);
    // Released and latched again before the read-back's turn: the second latch's stop, begun
    // after the reload's safety section, reads back the new list itself.
    rt.estop.clear();
    const second = rt.estop.trigger("second latch", { cause: "sparkplug" });
    held.resolve();
    await first;
    await second;
    const done = await report;
    assert.ok(done.applied.includes("safety"), JSON.stringify(done));
    const verification = rt.estop.status().verification!;
    assert.deepEqual(
      verification.checks.map((c) => [c.signal, c.outcome]),
      [["plant/plant0/heater_on", "verified"], ["plant/plant0/fan_duty", "verified"]],
    );
    // A read-back queued behind the first stop would have run with the second (its reads are
    // bounded by verify_timeout_ms, 300 ms): the runtime's own poll cycles past it.
    await afterPolls(rt, "plant/plant0", 10);
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    const readBacks = page.entries.filter((e) =>
      e.action === "estop" && (e.args as { provider_ids?: string[] }).provider_ids !== undefined
    );
    assert.deepEqual(
      readBacks.map((e) => [(e.args as { reason?: string }).reason, e.origin]),
      [],
      "one record per latch: the second latch's stop is its record of these devices",
    );
  } finally {
    held.resolve();
  }
});
