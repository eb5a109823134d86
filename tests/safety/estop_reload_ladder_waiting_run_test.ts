/**
 * A reload that changes the ladder calls of a provider up while latched secures it again with them
 * and waits for that run, counting its calls (docs/safety.md: "the reload waits for it and counts
 * its calls"), also when a securing run of that provider still waits for its turn and takes the
 * new plan in its place (a return of the provider while its securing run before was making its
 * calls). That run's line then names every cause that joined it, the reload among them, and its
 * read-back says the reload (docs/safety.md: "is AVAILABLE again and had its ladder calls changed by
 * a reload", `ladder reloaded while latched`), whatever return began it or joined it.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import type { Estop, SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshRead, FreshReader } from "../../src/state/mod.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";
import {
  heaterOffHeldReadBack,
  heaterOffLadder,
  heaterOffReader,
  heaterOffVerifiedLadder,
} from "./_clock_rig.ts";
import { call, expectation } from "./_fixture.ts";
import { holdingEstop } from "./_holding_estop_rig.ts";

/** `ladder` with a call setting plant's fan to 0 after its own. */
function withFanCall(ladder: SafeStateConfig): SafeStateConfig {
  return {
    ...ladder,
    hooks: [...ladder.hooks, call("plant/plant0", "set_fan", { duty: { double: 0 } })],
  };
}

/** `ladder` expecting plant's fan at 0 too. */
function expectingFan(ladder: SafeStateConfig): SafeStateConfig {
  return {
    ...ladder,
    expect: [...ladder.expect, expectation("plant/plant0/fan", { equals: 0 }, 1)],
  };
}

/** Released and pressed again; the new latch's stop (begun, a macrotask later) still pending. */
async function relatched(estop: Estop): Promise<{ second: ReturnType<Estop["trigger"]> }> {
  estop.clear();
  const second = estop.trigger("second latch");
  await macrotask();
  return { second };
}

type HoldingRig = ReturnType<typeof holdingEstop>;

/**
 * Latched (`reason`; its ladder call, `what`, made): plant comes back twice, the second return's
 * run waits behind the first's held call.
 */
async function secondReturnWaiting(
  rig: HoldingRig,
  reason = "test",
  what = "the stop's ladder call",
): Promise<void> {
  await rig.latched(reason, what);
  await rig.backHeld();
  rig.comeBack();
}

/**
 * Answers every held call (and `alsoAnswer()`) a turn at a time until all of `waits` settled
 * (`what`, named if they never do): their answers.
 */
async function answeredUntilSettled<T>(
  rig: HoldingRig,
  waits: readonly (T | Promise<T>)[],
  what: string,
  alsoAnswer: () => void = () => {},
): Promise<T[]> {
  let settled: T[] | null = null;
  void Promise.all(waits).then((all) => (settled = all));
  await untilTurns(() => (rig.answerAll(), alsoAnswer(), settled !== null), what);
  return settled!;
}

/** The audit's reasons of the e-stop's decisions. */
function estopReasons(audit: readonly AuditDecision[]): unknown[] {
  return audit.flatMap((d) => d.origin.kind === "estop" && d.args?.reason ? [d.args.reason] : []);
}

/**
 * Latched with a verified ladder; plant comes back, its securing run's call is held; then a
 * return and a reload adding plant's fan call, in the order `reloadFirst` says, while that run
 * waits for its turn; everything answered. One line says the run's two calls, at WARN with
 * `says`; the audit's reasons are the return's, then the reload's.
 */
async function returnAndReloadJoined(reloadFirst: boolean, says: RegExp): Promise<void> {
  const audit: AuditDecision[] = [];
  const rig = holdingEstop({
    reads: heaterOffReader().reads,
    audit: { record: (d) => audit.push(d) },
    safeState: heaterOffVerifiedLadder(),
  });
  const { estop, host, comeBack, lines, latched, backHeld } = rig;
  await latched("test", "the stop's ladder call");
  await backHeld();
  if (!reloadFirst) comeBack();
  const runs = estop.reconfigure(withFanCall(heaterOffVerifiedLadder()));
  if (reloadFirst) comeBack();
  await answeredUntilSettled(rig, runs, "the reload's wait");
  await estop.securing(host);

  const said = lines.filter((l) => /bringing it to the safe state \(2 call/.test(l));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(said[0]!, says);
  assert.deepEqual(
    estopReasons(audit),
    ["available while latched", "ladder reloaded while latched"],
    JSON.stringify(audit),
  );
}

/** plant's heater and fan are read back, as status shows once the reload has answered. */
function assertHeaterAndFanChecked(estop: Estop): void {
  assert.deepEqual(
    estop.status().verification?.checks.map((c) => c.signal),
    ["plant/plant0/heater", "plant/plant0/fan"],
    "status shows checks of the expectations in force once the reload has answered",
  );
}

/**
 * The securing run waiting for its turn (`secured`), dropped: it answered no call (counted as
 * none) and the router saw `calls` calls only; one line (`pattern`) says why.
 */
async function assertDropped(
  rig: HoldingRig,
  secured: Promise<unknown>,
  calls: number,
  pattern: RegExp,
): Promise<string> {
  assert.deepEqual(await secured, [], "the run made no call: counted as none");
  assert.equal(rig.calls(), calls, rig.made.join(", "));
  const dropped = rig.lines.filter((l) => pattern.test(l));
  assert.equal(dropped.length, 1, rig.lines.join("\n"));
  return dropped[0]!;
}

Deno.test("Estop latched: a reload changing the ladder calls of a provider whose securing run waits for its turn waits for that run and counts its calls", async () => {
  // In-process: the real Estop over a router that holds each call until the test answers it.
  const rig = holdingEstop({ safeState: heaterOffLadder() });
  const { estop, host, calls } = rig;
  // plant comes back: its securing run's ladder call is held; back again meanwhile, its next
  // securing run waits for its turn behind it.
  await secondReturnWaiting(rig);
  const waiting = estop.securing(host);
  // The reload adds a call for plant: the waiting run takes the new plan at its turn.
  const runs = estop.reconfigure(withFanCall(heaterOffLadder()));
  assert.equal(estop.securing(host), waiting, "the waiting run takes the new plan");
  assert.equal(runs.length, 1, "the reload waits for the run that makes the new plan's calls");
  const made = (await answeredUntilSettled(rig, runs, "the reload's wait"))
    .reduce((n, a) => n + a.length, 0);
  assert.equal(calls(), 4, "the first run's call, then the new plan's two");
  assert.equal(made, 2, "the reload counts the new plan's calls");
});

Deno.test("Estop latched: a reload changing the ladder calls of a provider whose own return's securing run waits for its turn says the return and the reload in its line, the reload in its audit", async () => {
  // plant comes back twice: the second return's run waits behind the first's held call.
  await returnAndReloadJoined(
    false,
    /WARN.*provider plant is AVAILABLE again and had its ladder calls changed by a reload;/,
  );
});

Deno.test("Estop latched: a provider's return joining the waiting securing run of a reload that changed its ladder calls says the reload and the return in its line, the reload in its audit", async () => {
  // plant comes back: its securing run's call is held. A reload changes its ladder calls (its
  // run waits behind that call), then plant comes back again before that run's turn: it joins.
  await returnAndReloadJoined(
    true,
    /WARN.*provider plant had its ladder calls changed by a reload and is AVAILABLE again;/,
  );
});

Deno.test("Estop latched: a reload changing the expectations of a provider it started reads them back when its securing run, waiting for its turn, is of a latch released and pressed again", async () => {
  const rig = holdingEstop({
    reads: heaterOffReader().reads,
    safeState: heaterOffVerifiedLadder(),
  });
  const { estop, host } = rig;
  // plant comes back twice: the second return's run waits behind the first's held call. Released
  // and pressed again: the new latch's stop, begun now, reads back the old expectations.
  await secondReturnWaiting(rig, "first latch", "the first stop's ladder call");
  const { second } = await relatched(estop);
  // The reload (as one that started plant) expects its fan at 0 too.
  const runs = estop.reconfigure(expectingFan(heaterOffVerifiedLadder()), [host]);
  await answeredUntilSettled<unknown>(
    rig,
    [second, ...runs],
    "the second stop and the reload's wait",
  );
  assertHeaterAndFanChecked(estop);
});

Deno.test("Estop latched: a reload changing the ladder calls of a provider whose waiting securing run is of a latch released and pressed again secures it with a run of its own", async () => {
  const rig = holdingEstop({ safeState: heaterOffLadder() });
  const { estop, lines, made } = rig;
  // plant comes back twice: the second return's run waits behind the first's held call. Released
  // and pressed again: the new latch's stop, begun now, makes the old plan's calls.
  await secondReturnWaiting(rig, "first latch", "the first stop's ladder call");
  const { second } = await relatched(estop);
  // The reload adds a call for plant: made under the new latch, though the old run is skipped.
  const runs = estop.reconfigure(withFanCall(heaterOffLadder()));
  assert.equal(runs.length, 1, "the reload waits for the run that makes the new plan's calls");
  const [, ...done] = await answeredUntilSettled<unknown>(
    rig,
    [second, ...runs],
    "the second stop and the reload's wait",
  );
  const counted = done.reduce((n: number, a) => n + (a as readonly unknown[]).length, 0);
  assert.deepEqual(made.slice(3), ["set_heater", "set_fan"], made.join(", "));
  assert.equal(counted, 2, "the reload counts the new plan's calls");
  assert.ok(
    lines.some((l) => /provider plant had its ladder calls changed by a reload;/.test(l)),
    lines.join("\n"),
  );
});

Deno.test("Estop latched: a reload changing the expectations of a provider it started whose securing run still waits for its turn answers once that run has read them back", async () => {
  const rig = holdingEstop({
    reads: heaterOffReader().reads,
    safeState: heaterOffVerifiedLadder(),
  });
  const { estop, host } = rig;
  // plant comes back twice: the second return's run waits behind the first's held call.
  await secondReturnWaiting(rig);
  // The reload (as one that started plant) expects its fan at 0 too.
  const runs = estop.reconfigure(expectingFan(heaterOffVerifiedLadder()), [host]);
  await answeredUntilSettled(rig, runs, "the reload's wait");
  assertHeaterAndFanChecked(estop);
});

Deno.test("Estop latched: a reload changing the expectations of a provider up all along while a further stop waits for its turn is read back by that stop alone, not again after it", async () => {
  const audit: AuditDecision[] = [];
  const rig = holdingEstop({
    reads: heaterOffReader().reads,
    audit: { record: (d) => audit.push(d) },
    safeState: heaterOffVerifiedLadder(),
  });
  const { estop, calls } = rig;
  // The stop's ladder call is held; a second press queues a further stop behind it (not begun).
  const first = estop.trigger("first press");
  await untilTurns(() => calls() === 1, "the first stop's ladder call");
  const second = estop.trigger("second press");
  // The reload expects plant's fan at 0 too: the further stop, begun after it, reads that back.
  const runs = estop.reconfigure(expectingFan(heaterOffVerifiedLadder()));
  await answeredUntilSettled<unknown>(
    rig,
    [first, second, ...runs],
    "both stops and the reload's wait",
  );

  assert.deepEqual(
    (await second).verification.checks.map((c) => c.signal),
    ["plant/plant0/heater", "plant/plant0/fan"],
    "the further stop reads back the reloaded expectations",
  );
  assert.deepEqual(
    estop.status().verification?.checks.map((c) => c.signal),
    ["plant/plant0/heater", "plant/plant0/fan"],
  );
  const reloaded = audit.filter((d) => d.args?.reason === "expectations reloaded while latched");
  assert.deepEqual(reloaded, [], "no second read-back of the list the further stop read back");
});

/**
 * The stop's read-back held (`heldReads`: how many wait); plant comes back (a reload starts it):
 * its securing run makes its call; its read-back waits for the stop. Returns the stop.
 */
async function securingRunWaitingForStop(
  rig: ReturnType<typeof holdingEstop>,
  heldReads: () => number,
): Promise<{ stop: ReturnType<Estop["trigger"]> }> {
  const { estop, comeBack, calls, answerAll } = rig;
  const stop = estop.trigger("test");
  await untilTurns(() => (answerAll(), heldReads() > 0), "the stop's read-back");
  comeBack();
  await untilTurns(() => calls() === 2, "the securing run's call");
  answerAll();
  await macrotask();
  return { stop };
}

/** plant's heater and fan read back last; one record of the securing run, its call counted once. */
function assertHeaterAndFanReadBackOnce(estop: Estop, audit: AuditDecision[]): void {
  assert.deepEqual(
    estop.status().verification?.checks.map((c) => c.signal),
    ["plant/plant0/heater", "plant/plant0/fan"],
  );
  const records = audit.filter((d) => d.origin.kind === "estop" && d.args?.reason);
  assert.deepEqual(
    records.map((d) => [d.args?.reason, d.result?.actions]),
    [["available while latched", 1]],
    "one record of the securing run, its call counted once: " + JSON.stringify(records),
  );
}

Deno.test("Estop latched: a reload changing the expectations of a provider it started whose securing run's read-back, waiting for a stop, reads the new list is not read back again after it", async () => {
  const audit: AuditDecision[] = [];
  const { reads, safeState, heldReads, answerReads } = heaterOffHeldReadBack();
  const rig = holdingEstop({ reads, audit: { record: (d) => audit.push(d) }, safeState });
  const { estop, host } = rig;
  const { stop } = await securingRunWaitingForStop(rig, heldReads);
  // The same reload expects plant's fan at 0 too: the run's read-back, after the stop, reads it.
  const runs = estop.reconfigure(expectingFan(heaterOffVerifiedLadder()), [host]);
  await answeredUntilSettled<unknown>(
    rig,
    [stop, estop.securing(host), ...runs],
    "the stop and the reload's wait",
    answerReads,
  );

  assertHeaterAndFanReadBackOnce(estop, audit);
});

Deno.test("Estop latched: two reloads changing the expectations of a provider the first started, its securing run's read-back waiting for a stop, read the list in force back once: the run's call is recorded once", async () => {
  const audit: AuditDecision[] = [];
  // plant's heater reads off and its fan 0: every list read back here is met at once.
  const met = {
    ok: true,
    samples: new Map([
      ["heater", { value: { type: "bool", bool: false }, quality: "OK" }],
      ["fan", { value: { type: "double", double: 0 }, quality: "OK" }],
    ]),
  } as FreshRead;
  const heldReads: (() => void)[] = [];
  const reads: FreshReader = {
    readFresh: () => new Promise((resolve) => heldReads.push(() => resolve(met))),
  };
  const answerReads = () => heldReads.splice(0).forEach((answer) => answer());
  const rig = holdingEstop({
    reads,
    audit: { record: (d) => audit.push(d) },
    // Its read-back waits for the held reads, never for its timeout.
    safeState: { ...heaterOffVerifiedLadder(), verifyTimeoutMs: 600_000 },
  });
  const { estop, host } = rig;
  // plant comes back as the first reload starts it.
  const { stop } = await securingRunWaitingForStop(rig, () => heldReads.length);
  // The first reload expects plant's fan at 0 too; a second one, before the stop has read back,
  // expects it within [0, 0.1] instead: the run's read-back, after the stop, reads that list whole.
  const first = estop.reconfigure(expectingFan(heaterOffVerifiedLadder()), [host]);
  const second = estop.reconfigure({
    ...heaterOffVerifiedLadder(),
    verifyTimeoutMs: 600_000,
    expect: [
      ...heaterOffVerifiedLadder().expect,
      expectation("plant/plant0/fan", { min: 0, max: 0.1 }, 1),
    ],
  });
  await answeredUntilSettled<unknown>(
    rig,
    [stop, estop.securing(host), ...first, ...second],
    "the stop and the reloads' waits",
    answerReads,
  );

  assertHeaterAndFanReadBackOnce(estop, audit);
});

Deno.test("Estop latched: a securing run re-stamped to a new latch whose provider a reload takes out before its turn is dropped: no call, one INFO line, counted as none", async () => {
  // In-process: the real Estop over a router that holds each call until the test answers it.
  const rig = holdingEstop({ safeState: heaterOffLadder() });
  const { estop, host, comeBack, takeOut, lines, calls } = rig;
  // The first stop's ladder call to plant is held. plant comes back meanwhile: its securing run
  // waits behind that call. Released and pressed again: the new latch's stop waits for the first.
  // plant comes back again under the new latch: it joins the waiting run (re-stamped to it).
  const first = estop.trigger("first latch");
  await untilTurns(() => calls() === 1, "the first stop's ladder call");
  comeBack();
  estop.clear();
  const second = estop.trigger("second latch");
  comeBack();
  const secured = estop.securing(host);
  assert.ok(secured !== null);
  // A reload removes plant (the file keeps its ladder call: a warning only) before the run's turn.
  takeOut();
  await answeredUntilSettled<unknown>(
    rig,
    [first, second, secured],
    "both stops and the securing run",
  );
  estop.clear();

  // The first stop's call, then the new latch's stop's (the plan still has it): none by the run.
  const dropped = await assertDropped(rig, secured, 2, /provider plant .*no longer listed/);
  assert.deepEqual(
    lines.filter((l) => /bringing it to the safe state/.test(l)),
    [],
    "the run dropped says no securing",
  );
  assert.match(dropped, /^INFO /);
});

Deno.test("Estop latched: a securing run waiting for its turn whose provider a reload restarts before it is dropped: no call to its successor", async () => {
  const rig = holdingEstop({ safeState: heaterOffLadder() });
  const { estop, host, comeBack, replaceHost, calls } = rig;
  // The stop's ladder call to plant is held; plant comes back meanwhile: its run waits behind it.
  const stop = estop.trigger("test");
  await untilTurns(() => calls() === 1, "the stop's ladder call");
  comeBack();
  const secured = estop.securing(host);
  assert.ok(secured !== null);
  // A reload restarts plant before the run's turn: another process under its id, not up yet.
  replaceHost();
  await answeredUntilSettled<unknown>(rig, [stop, secured], "the stop and the securing run");
  estop.clear();

  await assertDropped(rig, secured, 1, /provider plant .*took it out/);
});
