/**
 * The e-stop must work whatever else is failing: a provider that comes back while latched is
 * secured by a run begun from a promise reaction, where a rejection nobody handles ends the
 * runtime (main.ts). A securing run that fails (here the plan cannot be made: the inventory port
 * throws as it is read) is contained: one ERROR line naming the provider, its securing reported
 * failed to whoever awaits it, whoever waits for its ladder calls let go, and the provider's next
 * return secured as usual. In-process: the real Estop over a router that answers every call at
 * once, an inventory whose provider's device list throws while the test says so, and a modes port
 * that records FAULT and keeps the e-stop's latch securing.
 */
import assert from "node:assert/strict";
import { brittleEstop, heaterOffLadder } from "./_clock_rig.ts";
import { call } from "./_fixture.ts";

/** The real Estop over brittleEstop's inventory (its device list whole), latched by a trigger. */
async function latchedOverBrittle() {
  const r = brittleEstop();
  await r.estop.trigger("test");
  return r;
}

/** The end of a failed securing run's ERROR line (and its error), naming what brought it. */
const FAILED_LINE = (why: string) =>
  `e-stop latched: securing provider plant (${why}) failed: inventory port failed; ` +
  "it is not known to be at the safe state";

Deno.test("Estop contains a securing run that fails while latched: one ERROR line, reported failed, the next return secured", async () => {
  const { estop, made, host, broken, restarted, errors, latchSecuring } =
    await latchedOverBrittle();
  assert.deepEqual(made, ["plant set_heater"], "the trigger's ladder call");
  broken.on = true;
  restarted();
  const failing = estop.securing(host);
  assert.ok(failing !== null, "a securing run began for the return while latched");
  const err = await failing.then(() => null, (e: unknown) => e);
  assert.ok(err instanceof Error, "its securing is reported failed to whoever awaits it");
  assert.equal((err as { code?: string }).code, "INTERNAL");
  assert.match(err.message, /securing provider plant .* failed: inventory port failed/);
  const lines = errors.filter((l) => l.includes("securing provider plant"));
  assert.equal(lines.length, 1, `one ERROR line: ${errors.join(" | ")}`);
  assert.ok(lines[0]!.startsWith("ERROR"));
  // It names its cause: the provider's return.
  assert.ok(lines[0]!.endsWith(FAILED_LINE("is AVAILABLE again")), lines[0]);
  assert.ok(err.message.endsWith(FAILED_LINE("is AVAILABLE again")), err.message);
  assert.deepEqual(made, ["plant set_heater"], "no call made by the failed run");
  // Whoever waits for its ladder calls (the hooks into FAULT made again) is let go.
  const letGo = latchSecuring();
  assert.ok(letGo !== undefined);
  assert.deepEqual(await letGo(host, { notBegun: false }), []);
  // The provider's next return is secured as usual.
  broken.on = false;
  restarted();
  const next = estop.securing(host);
  assert.ok(next !== null && next !== failing, "a new securing run began for the next return");
  const actions = await next;
  assert.deepEqual(made, ["plant set_heater", "plant set_heater"], "secured again");
  assert.deepEqual(actions.map((a) => a.success), [true]);
});

Deno.test("Estop's ERROR line for a failed securing run names every cause that joined it: a reload's ladder change and the provider's return", async () => {
  const { estop, made, host, broken, restarted, errors } = await latchedOverBrittle();
  // A reload changes its ladder calls while latched: a securing run of the provider begins (it
  // waits for the next microtask); in the same step the provider comes back, its return joining
  // that run, whose plan then cannot be made.
  const ladder = heaterOffLadder();
  const runs = estop.reconfigure({
    ...ladder,
    hooks: [...ladder.hooks, call("plant/plant0", "set_fan", { on: false })],
  });
  const failing = estop.securing(host);
  assert.ok(failing !== null, "the reload began a securing run");
  assert.equal(runs.length, 1, "the reload waits for it");
  broken.on = true;
  restarted();
  assert.equal(estop.securing(host), failing, "the return joined the waiting run");
  const outcomes = await Promise.allSettled([failing, ...runs]);
  assert.ok(outcomes.every((o) => o.status === "rejected"), "reported failed to whoever awaits it");
  const err = (outcomes[0] as PromiseRejectedResult).reason as Error;
  const both = "had its ladder calls changed by a reload and is AVAILABLE again";
  assert.ok(err.message.endsWith(FAILED_LINE(both)), err.message);
  const lines = errors.filter((l) => l.includes("securing provider plant"));
  assert.equal(lines.length, 1, `one ERROR line: ${errors.join(" | ")}`);
  assert.ok(lines[0]!.startsWith("ERROR"));
  assert.ok(lines[0]!.endsWith(FAILED_LINE(both)), lines[0]);
  assert.deepEqual(made, ["plant set_heater"], "no call made by the failed run");
});
