/**
 * The e-stop's plan lines quote what the provider sent (rung `zero` plans from the inventory: the
 * device id, the function and argument names), cut, so that a quote in them cannot make the rest
 * of the line ambiguous nor 10 KB flood it; its E-STOP lines cut a client's reason and its
 * verification line a failed check's reason. The programmable provider in-process.
 */
import assert from "node:assert/strict";
import { CallRouter } from "../../src/control/mod.ts";
import type { SafeStateExpectation } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import {
  Estop,
  ESTOP_LOGGED_CHECK_REASON_CHARS,
  ESTOP_LOGGED_REASON_CHARS,
  ESTOP_QUOTED_NAME_CHARS,
  type EstopModes,
} from "../../src/safety/mod.ts";
import { readPorts, waitFor } from "../helpers/kernel.ts";
import { startProgrammable, T } from "../helpers/programmable_provider.ts";

Deno.test("Estop quotes the provider's device id and function name in its plan and failed-call lines, cut to a bound", async () => {
  const forged = 'd"0 ERROR forged'; // (a line break in an id is refused at discovery)
  const long = "L".repeat(10_000);
  const off = (name: string) => ({
    function_id: 9,
    name,
    policy: { category: 3 },
    args: [{ name: 'on"', type: T.BOOL, required: true }],
  });
  const fx = await startProgrammable({
    devices: {
      [forged]: { signals: [], functions: [off('off" now')] },
      [long]: { signals: [], functions: [off(long)] },
    },
  }, { inProcess: true });
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: true,
    now: () => 0,
    write: (line) => {
      const m = /^<\d>\[estop\] (e-stop plan call: .*|safe-state call .*)$/.exec(line);
      if (m) lines.push(m[1]!);
    },
  });
  try {
    const modes: EstopModes = {
      current: () => "MANUAL",
      enterFault: () => ({
        committed: true,
        from: "MANUAL",
        runHooks: () => Promise.resolve([]),
        hookFailuresSoFar: () => [],
      }),
      addArmCheck: () => {},
    };
    const estop = new Estop({
      router: new CallRouter({ registry: fx.registry, cache: fx.cache, log, clock: fx.clock }),
      ...readPorts(fx.registry),
      clock: fx.clock,
      log,
      safeState: { hooks: [], setpoints: [], zeroIsSafe: true, expect: [], verifyTimeoutMs: 100 },
      modes,
    });
    estop.logPlan("start-up");
    const cut = `${"L".repeat(ESTOP_QUOTED_NAME_CHARS)}\u2026`;
    await estop.trigger("test");
    const failed = lines.filter((l) => l.startsWith("safe-state call "));
    // The provider's error names the device again: cut too (ESTOP_QUOTED_ERROR_CHARS).
    assert.equal(failed.length, 2);
    assert.ok(failed.every((l) => l.length < 1000), "bounded");
    assert.ok(failed.includes(
      'safe-state call "p0/d\\"0 ERROR forged" "off\\" now" failed: ' +
        '"NOT_FOUND: provider answered NOT_FOUND: d\\"0 ERROR forged: function 9 not found"',
    ));
    assert.deepEqual(lines.filter((l) => l.startsWith("e-stop plan call: ")).sort(), [
      `e-stop plan call: "p0/${cut.slice(3)}" "${cut}"("on\\""=false)`,
      'e-stop plan call: "p0/d\\"0 ERROR forged" "off\\" now"("on\\""=false)',
    ]);
  } finally {
    await fx.close();
  }
});

/** An e-stop over the in-process programmable provider, rung `zero`, its log lines kept. */
async function estopOver(
  inventory: Parameters<typeof startProgrammable>[0],
  o: { expect?: SafeStateExpectation[]; bus?: EventBus } = {},
) {
  const fx = await startProgrammable(inventory, { inProcess: true });
  const lines: string[] = [];
  const log = new LineLogger({
    level: "info",
    journald: true,
    now: () => 0,
    write: (line) => {
      const m = /^<\d>\[estop\] (.*)$/.exec(line);
      if (m) lines.push(m[1]!);
    },
  });
  const modes: EstopModes = {
    current: () => "MANUAL",
    enterFault: () => ({
      committed: true,
      from: "MANUAL",
      runHooks: () => Promise.resolve([]),
      hookFailuresSoFar: () => [],
    }),
    addArmCheck: () => {},
  };
  const estop = new Estop({
    router: new CallRouter({ registry: fx.registry, cache: fx.cache, log, clock: fx.clock }),
    ...readPorts(fx.registry),
    clock: fx.clock,
    log,
    safeState: {
      hooks: [],
      setpoints: [],
      zeroIsSafe: true,
      expect: o.expect ?? [],
      verifyTimeoutMs: 100,
    },
    modes,
    ...(o.bus ? { bus: o.bus } : {}),
  });
  return { fx, estop, lines };
}

Deno.test("Estop's uncovered warning (the answer's and its log line) and its unverified-devices line quote the provider's device ids and function names, cut to ESTOP_QUOTED_NAME_CHARS", async () => {
  const forged = 'd"0 ERROR forged'; // (a line break in an id is refused at discovery)
  const long = "L".repeat(10_000);
  // A string argument: rung zero never guesses one, so the function is left untouched.
  const named = (name: string) => ({
    function_id: 9,
    name,
    policy: { category: 3 },
    args: [{ name: "text", type: T.STRING, required: true }],
  });
  const { fx, estop, lines } = await estopOver({
    devices: {
      [forged]: { signals: [], functions: [named('say" now')] },
      [long]: { signals: [], functions: [named(long)] },
    },
  });
  try {
    estop.logPlan("start-up");
    const cut = `${"L".repeat(ESTOP_QUOTED_NAME_CHARS)}\u2026`;
    const items = `"p0/d\\"0 ERROR forged" "say\\" now", "p0/${cut.slice(3)}" "${cut}"`;
    const warning = `The 'zero' rung leaves 2 actuating function(s) untouched: ${items}. ` +
      "The e-stop did not change them; cover them with safety.safe_state.hooks and check the " +
      "outputs that matter with safety.safe_state.expect, or use the hardware emergency stop.";
    assert.ok(lines.includes(warning), lines.join("\n").slice(0, 2000));
    assert.ok(lines.includes(
      `no safe-state expectation covers 2 actuating device(s): "p0/d\\"0 ERROR forged", ` +
        `"p0/${cut.slice(3)}" (an e-stop cannot verify them; add safety.safe_state.expect entries)`,
    ));
    const result = await estop.trigger();
    assert.equal(result.warning, warning);
    assert.ok(lines.every((l) => l.length < 1000), "every line bounded");
  } finally {
    await fx.close();
  }
});

Deno.test("Estop cuts a 10 KB reason to ESTOP_LOGGED_REASON_CHARS in its E-STOP lines only: the stop latches and its event keeps the reason whole", async () => {
  const bus = new EventBus();
  const reasons: (string | null)[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "estop_change" && event.latched) reasons.push(event.reason);
  });
  const { fx, estop, lines } = await estopOver({ devices: { d0: { signals: [] } } }, { bus });
  try {
    const now = "N".repeat(10_000);
    const late = "A".repeat(10_000);
    const first = await estop.trigger(now);
    assert.equal(first.latched, true);
    let arrive!: (r: string) => void;
    const arriving = new Promise<string>((resolve) => arrive = resolve);
    const second = estop.trigger(arriving);
    arrive(late);
    assert.equal((await second).latched, true);
    await waitFor("the late reason's line", () => lines.some((l) => l.startsWith("E-STOP reason")));
    const cut = (r: string) => `${r.slice(0, ESTOP_LOGGED_REASON_CHARS)}\u2026`;
    assert.deepEqual(lines.filter((l) => l.startsWith("E-STOP ")), [
      `E-STOP latched: ${cut(now)}`,
      "E-STOP latched",
      `E-STOP reason: ${cut(late)}`,
    ]);
    assert.deepEqual(reasons, [now, null], "the event keeps it whole");
  } finally {
    await fx.close();
  }
});

Deno.test("Estop cuts a failed read-back check's reason (a provider's 10 KB string value) to ESTOP_LOGGED_CHECK_REASON_CHARS in its verification line", async () => {
  const value = `o"ff\n${"V".repeat(10_000)}`;
  const { fx, estop, lines } = await estopOver({
    devices: {
      d0: {
        signals: [{ id: "state", type: T.STRING }],
        values: [{ id: "state", type: T.STRING, string: value, quality: 1 }],
      },
    },
  }, {
    expect: [{
      signal: "p0/d0/state",
      providerId: "p0",
      deviceId: "d0",
      signalId: "state",
      equals: "off",
      path: "safety.safe_state.expect[0]",
    }],
  });
  try {
    const result = await estop.trigger();
    assert.equal(result.verification.outcome, "mismatch");
    const reason = `reads ${JSON.stringify(value)}`;
    assert.equal(result.verification.checks[0]!.reason, reason, "the answer keeps it whole");
    assert.ok(
      lines.includes(
        `e-stop verification mismatch: p0/d0/state: ${
          reason.slice(0, ESTOP_LOGGED_CHECK_REASON_CHARS)
        }\u2026`,
      ),
      lines.map((l) => l.slice(0, 200)).join("\n"),
    );
  } finally {
    await fx.close();
  }
});
