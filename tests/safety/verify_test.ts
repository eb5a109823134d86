/**
 * Read-back verification of the safe state (src/safety/verify.ts): how a value is judged against
 * an expectation, which devices and expectations are reported at start-up, and how
 * verifySafeState reads back fresh through the runtime's state cache from the scripted read-back
 * provider (in-process) until every expectation holds or the timeout passes.
 */
import assert from "node:assert/strict";
import {
  type DeviceCapabilities,
  type FunctionCategory,
  QUOTED_PROVIDER_ID_CHARS,
  type TypedValue,
  type ValueType,
} from "../../src/common/mod.ts";
import type { SafeStateExpectation } from "../../src/config/mod.ts";
import type { ProviderSummary } from "../../src/state/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import {
  ListedBefore,
  MAX_LISTED_BEFORE_DEVICES,
  mismatch,
  unlistedLadderDevices,
  unresolvedExpectations,
  unverifiedDevices,
  type Verification,
  verifySafeState,
} from "../../src/safety/mod.ts";
import { expectation } from "./_fixture.ts";
import { type DeviceScript, readbackProvider, startReadback } from "./_readback.ts";
import { ManualClock, runToSettle, withRealTimers } from "../helpers/clock.ts";
import { deviceCapabilities } from "../helpers/capabilities.ts";

const dbl = (v: number): TypedValue => ({ type: "double", double: v });
const i64 = (v: number | bigint): TypedValue => ({ type: "int64", int64: v });
const u64 = (v: number | bigint): TypedValue => ({ type: "uint64", uint64: v });
const bool = (v: boolean): TypedValue => ({ type: "bool", bool: v });
const str = (v: string): TypedValue => ({ type: "string", string: v });
const bytes: TypedValue = { type: "bytes", base64: "AA==" };

const eq = (want: boolean | number | string) => expectation("p/d/s", { equals: want });
const range = (r: { min?: number; max?: number }) => expectation("p/d/s", r);

/** 2^60 and its neighbours: exact only as bigints. */
const BIG = 2n ** 60n;
const BIG_N = 2 ** 60;

Deno.test("mismatch: equals a bool needs a bool signal with that value", () => {
  assert.equal(mismatch(eq(false), bool(false)), null);
  assert.equal(mismatch(eq(true), bool(true)), null);
  assert.equal(mismatch(eq(false), bool(true)), "reads true");
  assert.equal(mismatch(eq(true), bool(false)), "reads false");
  assert.equal(mismatch(eq(false), dbl(0)), "expected a bool, the signal is double");
  assert.equal(mismatch(eq(false), str("false")), "expected a bool, the signal is string");
});

Deno.test("mismatch: equals a string needs a string signal with exactly that text", () => {
  assert.equal(mismatch(eq("armed"), str("armed")), null);
  assert.equal(mismatch(eq("armed"), str("Armed")), 'reads "Armed"');
  assert.equal(mismatch(eq(""), str(" ")), 'reads " "');
  assert.equal(mismatch(eq("1"), i64(1)), "expected a string, the signal is int64");
  assert.equal(mismatch(eq("true"), bool(true)), "expected a string, the signal is bool");
});

Deno.test("mismatch: equals a number compares doubles and exact 64-bit integers", () => {
  assert.equal(mismatch(eq(0), dbl(0)), null);
  assert.equal(mismatch(eq(0), dbl(-0)), null, "-0 equals 0");
  assert.equal(mismatch(eq(0), dbl(0.5)), "reads 0.5");
  assert.equal(mismatch(eq(0), dbl(NaN)), "reads NaN");
  assert.equal(mismatch(eq(3), i64(3)), null);
  assert.equal(mismatch(eq(3), i64(-3)), "reads -3");
  assert.equal(mismatch(eq(7), u64(7)), null);
  assert.equal(mismatch(eq(7), u64(8)), "reads 8");
  // Beyond 2^53 the value is a bigint and compared exactly.
  assert.equal(mismatch(eq(BIG_N), i64(BIG)), null);
  assert.equal(mismatch(eq(BIG_N), u64(BIG + 1n)), "reads 1152921504606846977");
  // A fractional expectation never equals an integer (and does not throw on the bigint).
  assert.equal(mismatch(eq(0.5), i64(BIG)), "reads 1152921504606846976");
  assert.equal(mismatch(eq(0), bool(false)), "expected a number, the signal is bool");
  assert.equal(mismatch(eq(0), str("0")), "expected a number, the signal is string");
  assert.equal(mismatch(eq(0), bytes), "expected a number, the signal is bytes");
});

Deno.test("mismatch: min and max are inclusive bounds on a finite number", () => {
  const r = range({ min: -1, max: 1 });
  assert.equal(mismatch(r, dbl(-1)), null);
  assert.equal(mismatch(r, dbl(1)), null);
  assert.equal(mismatch(r, dbl(0)), null);
  assert.equal(mismatch(r, dbl(-1.25)), "reads -1.25, below -1");
  assert.equal(mismatch(r, dbl(1.25)), "reads 1.25, above 1");
  assert.equal(mismatch(r, i64(-2)), "reads -2, below -1");
  assert.equal(mismatch(r, u64(2)), "reads 2, above 1");
  assert.equal(mismatch(r, i64(1)), null);
  // A non-finite reading never meets a range, whichever bound it would pass.
  assert.equal(mismatch(r, dbl(NaN)), "reads NaN");
  assert.equal(mismatch(range({ max: 5 }), dbl(-Infinity)), "reads -Infinity");
  assert.equal(mismatch(range({ min: 5 }), dbl(Infinity)), "reads Infinity");
  // One bound only.
  assert.equal(mismatch(range({ min: 2 }), dbl(1e300)), null);
  assert.equal(mismatch(range({ min: 2 }), dbl(1.5)), "reads 1.5, below 2");
  assert.equal(mismatch(range({ max: 3 }), dbl(-1e300)), null);
  assert.equal(mismatch(range({ max: 3 }), dbl(3.5)), "reads 3.5, above 3");
  assert.equal(mismatch(range({}), dbl(12)), null, "no bound: any finite number");
  assert.equal(mismatch(r, bool(false)), "expected a number, the signal is bool");
  assert.equal(mismatch(r, str("0")), "expected a number, the signal is string");
});

Deno.test("mismatch: bounds against integers beyond 2^53 are exact", () => {
  const atBig = range({ min: BIG_N, max: BIG_N });
  assert.equal(mismatch(atBig, i64(BIG)), null);
  assert.equal(
    mismatch(atBig, u64(BIG + 1n)),
    "reads 1152921504606846977, above 1152921504606847000",
  );
  assert.equal(
    mismatch(atBig, i64(BIG - 1n)),
    "reads 1152921504606846975, below 1152921504606847000",
  );
  assert.equal(
    mismatch(range({ min: -0.5, max: 0.5 }), i64(-BIG)),
    "reads -1152921504606846976, below -0.5",
  );
  assert.equal(
    mismatch(range({ min: -0.5, max: 0.5 }), u64(BIG)),
    "reads 1152921504606846976, above 0.5",
  );
  assert.equal(mismatch(range({ min: -1e300, max: 1e300 }), i64(-BIG)), null);
  // One bound only.
  assert.equal(mismatch(range({ max: 5 }), i64(-BIG)), null);
  assert.equal(mismatch(range({ min: 0 }), u64(BIG)), null);
  assert.equal(mismatch(range({ max: 5 }), u64(BIG)), "reads 1152921504606846976, above 5");
  assert.equal(mismatch(range({ min: 0 }), i64(-BIG)), "reads -1152921504606846976, below 0");
});

/** Device p/d with a function of each category (actuating unless READ) and these signals. */
function device(
  providerId: string,
  deviceId: string,
  o: { categories?: FunctionCategory[]; signals?: Record<string, ValueType | null> } = {},
): DeviceCapabilities {
  return deviceCapabilities(providerId, deviceId, {
    functions: (o.categories ?? []).map((category, k) => ({
      functionId: k + 1,
      name: `f${k + 1}`,
      description: "",
      category,
      actuating: category !== "READ",
      args: [],
    })),
    signals: Object.entries(o.signals ?? {}).map(([signalId, valueType]) => ({
      signalId,
      name: signalId,
      description: "",
      valueType,
      unit: "",
      pollHintHz: 1,
      staleAfterMs: 0,
    })),
  });
}

Deno.test("unverifiedDevices lists actuating devices with no expectation, keyed by provider and device", () => {
  const devices = [
    device("p", "a", { categories: ["ACTUATE"] }),
    device("p", "b", { categories: ["READ", "ACTUATE"] }),
    device("p", "c", { categories: ["READ"] }), // not actuating
    device("p", "e"), // no functions at all
    device("q", "a", { categories: ["CONFIG"] }), // CONFIG counts as actuating
    device("q", "b", { categories: ["ACTUATE"] }),
  ];
  const expect = [expectation("p/a/x", { equals: 0 }, 0), expectation("q/b/y", { max: 1 }, 1)];
  assert.deepEqual(unverifiedDevices(expect, devices), ["p/b", "q/a"]);
  assert.deepEqual(unverifiedDevices([], devices), ["p/a", "p/b", "q/a", "q/b"]);
  assert.deepEqual(unverifiedDevices(expect, []), []);
});

Deno.test("unlistedLadderDevices: ladder devices no provider lists, nor expected, with why", () => {
  const devices = [device("p", "a", { categories: ["ACTUATE"] })];
  const provider = (
    id: string,
    available: boolean,
    host: "ok" | "unmet" | null,
  ): ProviderSummary =>
    ({
      id,
      available,
      lifecycle: available ? "RUNNING" : "CIRCUIT_OPEN",
      hostCheck: () => host === null ? null : { status: host, summary: "", unmet: [] },
    }) as unknown as ProviderSummary;
  const providers = new Map([
    ["p", provider("p", true, null)],
    ["h", provider("h", true, "unmet")],
    ["d", provider("d", false, "ok")],
  ]);
  const expect = [expectation("p/x/s", { equals: 0 }, 0)];
  assert.deepEqual(
    unlistedLadderDevices(
      expect,
      devices,
      // p/a is listed, p/x expected, h/b twice, "bad" no handle.
      ["p/a", "p/x", "p/b", "h/b", "h/b", "d/c", "ghost/g", "bad"],
      (id) => providers.get(id),
    ),
    [
      { device_handle: "p/b", reason: "not listed by its provider" },
      { device_handle: "h/b", reason: "not listed by its provider (its host check is unmet)" },
      {
        device_handle: "d/c",
        reason: "not listed by its provider, which is unavailable (CIRCUIT_OPEN)",
      },
      { device_handle: "ghost/g", reason: "no provider ghost is configured" },
    ],
  );
});

Deno.test("unlistedLadderDevices names a provider not configured with its id cut to QUOTED_PROVIDER_ID_CHARS; the handle stays whole", () => {
  const ghost = `g${"h".repeat(10_000)}`;
  const [unlisted, ...rest] = unlistedLadderDevices(
    [],
    [],
    [`${ghost}/g`],
    () => undefined,
  );
  assert.deepEqual(rest, []);
  assert.equal(unlisted!.device_handle, `${ghost}/g`, "the handle (a key) is kept whole");
  assert.equal(
    unlisted!.reason,
    `no provider ${ghost.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026 is configured`,
  );
});

Deno.test("unlistedLadderDevices says 'no longer listed' of a device listed before", () => {
  const up = (host: "unmet" | null) =>
    ({
      id: "p",
      available: true,
      lifecycle: "RUNNING",
      hostCheck: () => host === null ? null : { status: host, summary: "", unmet: [] },
    }) as unknown as ProviderSummary;
  const down = { id: "p", available: false, lifecycle: "RESTARTING" } as ProviderSummary;
  const before = new Set(["p/gone"]);
  const why = (p: ProviderSummary) =>
    unlistedLadderDevices([], [], ["p/gone", "p/never"], () => p, { listedBefore: before })
      .map((u) => u.reason);
  assert.deepEqual(why(up("unmet")), [
    "no longer listed by its provider (its host check is unmet)",
    "not listed by its provider (its host check is unmet)",
  ]);
  assert.deepEqual(why(up(null)), [
    "no longer listed by its provider",
    "not listed by its provider",
  ]);
  assert.deepEqual(why(down), [
    "no longer listed by its provider, which is unavailable (RESTARTING)",
    "not listed by its provider, which is unavailable (RESTARTING)",
  ]);
});

Deno.test("unlistedLadderDevices says a provider a reload starts or restarts, registered and not up, is being started or restarted, in the device conditions' words", () => {
  const down = { id: "p", available: false, lifecycle: "DOWN" } as ProviderSummary;
  const why = (reloadStart: "starting" | "restarting" | null, failed: string | null = null) =>
    unlistedLadderDevices([], [], ["p/gone", "p/never"], () => down, {
      listedBefore: new Set(["p/gone"]),
      reloadStart: () => reloadStart,
      startFailure: () => failed,
    }).map((u) => u.reason);
  // Before: "… which is unavailable (DOWN)" while the device conditions said "provider p is being
  // started by a configuration reload".
  assert.deepEqual(why("starting"), [
    "no longer listed by its provider, which is being started by a configuration reload",
    "not listed by its provider, which is being started by a configuration reload",
  ]);
  assert.deepEqual(why("restarting"), [
    "no longer listed by its provider, which is being restarted by a configuration reload",
    "not listed by its provider, which is being restarted by a configuration reload",
  ]);
  assert.deepEqual(why(null), [
    "no longer listed by its provider, which is unavailable (DOWN)",
    "not listed by its provider, which is unavailable (DOWN)",
  ]);
  assert.deepEqual(why(null, "spawn failed"), [
    "no longer listed by its provider, which failed to start at a configuration reload (spawn failed)",
    "not listed by its provider, which failed to start at a configuration reload (spawn failed)",
  ]);
});

Deno.test("ListedBefore keeps actuating devices, the most recently listed within its bound", () => {
  const listed = new ListedBefore();
  listed.note("p", [device("p", "act", { categories: ["ACTUATE"] }), device("p", "ro")]);
  listed.note("p", [device("p", "ro", { categories: ["READ"] })]);
  listed.note("q", [device("q", "a", { categories: ["CONFIG"] })]);
  assert.deepEqual(listed.handles(), ["p/act", "q/a"], "read-only devices are not kept");
  listed.forget("q");
  assert.deepEqual(listed.handles(), ["p/act"]);
  // A device renamed at each start: the oldest names go past the bound, the current one stays.
  for (let i = 0; i < MAX_LISTED_BEFORE_DEVICES + 5; i++) {
    listed.note("r", [device("r", `d${i}`, { categories: ["ACTUATE"] })]);
  }
  const r = listed.handles().filter((h) => h.startsWith("r/"));
  assert.equal(r.length, MAX_LISTED_BEFORE_DEVICES);
  assert.equal(r[0], "r/d5");
  assert.equal(r.at(-1), `r/d${MAX_LISTED_BEFORE_DEVICES + 4}`);
});

Deno.test("unresolvedExpectations names each expectation that cannot resolve, with its path", () => {
  const devices = [
    device("p", "d", {
      signals: {
        flag: "bool",
        level: "double",
        count: "int64",
        total: "uint64",
        name: "string",
        any: null,
      },
    }),
  ];
  const ok: SafeStateExpectation[] = [
    expectation("p/d/flag", { equals: false }),
    expectation("p/d/level", { equals: 0 }),
    expectation("p/d/level", { min: 0, max: 1 }),
    expectation("p/d/count", { max: 1 }),
    expectation("p/d/total", { equals: 3 }),
    expectation("p/d/name", { equals: "idle" }),
    expectation("p/d/any", { equals: true }),
    expectation("p/d/any", { min: 0 }),
  ];
  assert.deepEqual(unresolvedExpectations(ok, devices), []);

  const bad = [
    expectation("p/x/level", { equals: 0 }, 0),
    expectation("q/d/level", { equals: 0 }, 1),
    expectation("p/d/nope", { equals: 0 }, 2),
    expectation("p/d/flag", { equals: 0 }, 3),
    expectation("p/d/flag", { max: 1 }, 4),
    expectation("p/d/flag", { equals: "on" }, 5),
    expectation("p/d/level", { equals: "0" }, 6),
    expectation("p/d/level", { equals: false }, 7),
    expectation("p/d/name", { equals: 0 }, 8),
    expectation("p/d/name", { equals: true }, 9),
    expectation("p/d/count", { equals: true }, 10),
  ];
  assert.deepEqual(unresolvedExpectations(bad, devices), [
    "safety.safe_state.expect[0]: device not found: p/x",
    "safety.safe_state.expect[1]: device not found: q/d",
    "safety.safe_state.expect[2]: signal not found: p/d/nope",
    "safety.safe_state.expect[3]: p/d/flag is declared bool, the expectation wants a number",
    "safety.safe_state.expect[4]: p/d/flag is declared bool, the expectation wants a number",
    "safety.safe_state.expect[5]: p/d/flag is declared bool, the expectation wants a string",
    "safety.safe_state.expect[6]: p/d/level is declared double, the expectation wants a string",
    "safety.safe_state.expect[7]: p/d/level is declared double, the expectation wants a boolean",
    "safety.safe_state.expect[8]: p/d/name is declared string, the expectation wants a number",
    "safety.safe_state.expect[9]: p/d/name is declared string, the expectation wants a boolean",
    "safety.safe_state.expect[10]: p/d/count is declared int64, the expectation wants a boolean",
  ]);
});

Deno.test("verifySafeState with nothing expected is unverifiable and reads nothing", async () => {
  const fx = await startReadback((log) => [
    readbackProvider("rb", { dev0: { signals: { x: "double" }, reads: [{ x: { v: 0 } }] } }, {
      logFile: log,
    }),
  ]);
  try {
    const v = await verifySafeState({
      reads: fx.cache,
      clock: systemClock,
      expect: [],
      timeoutMs: 1000,
    });
    assert.deepEqual(v, { outcome: "unverifiable", elapsed_ms: 0, checks: [] });
    assert.deepEqual(fx.reads(), []);
  } finally {
    await fx.close();
  }
});

/** A clock whose monotonic time has a fractional part, as performance.now() usually does. */
const fractionalClock = withRealTimers({
  nowMs: () => Date.now(),
  monoMs: () => performance.now() + 0.25,
});

Deno.test("verifySafeState reads each device once when its checks hold, all its signals in one request", async () => {
  const script: Record<string, DeviceScript> = {
    dev0: {
      signals: { flag: "bool", level: "double", name: "string", other: "double" },
      reads: [{ flag: { v: false }, level: { v: 0.25 }, name: { v: "idle" }, other: { v: 9 } }],
    },
    dev1: { signals: { count: "int64" }, reads: [{ count: { v: "1152921504606846976" } }] },
  };
  const fx = await startReadback((log) => [readbackProvider("rb", script, { logFile: log })]);
  try {
    const expect = [
      expectation("rb/dev0/level", { min: 0, max: 0.5 }, 0),
      expectation("rb/dev1/count", { equals: 2 ** 60 }, 1),
      expectation("rb/dev0/flag", { equals: false }, 2),
      expectation("rb/dev0/level", { equals: 0.25 }, 3), // the same signal twice: read once
      expectation("rb/dev0/name", { equals: "idle" }, 4),
      expectation("rb/dev0/other", { min: 5 }, 5),
    ];
    const before = performance.now();
    const v = await verifySafeState({
      reads: fx.cache,
      clock: fractionalClock,
      expect,
      timeoutMs: 5000,
    });
    const took = performance.now() - before;
    assert.equal(v.outcome, "verified");
    assert.deepEqual(v.checks, [
      {
        signal: "rb/dev0/level",
        expected: { min: 0, max: 0.5 },
        observed: dbl(0.25),
        quality: "OK",
        outcome: "verified",
      },
      {
        signal: "rb/dev1/count",
        expected: { equals: 2 ** 60 },
        observed: i64(BIG),
        quality: "OK",
        outcome: "verified",
      },
      {
        signal: "rb/dev0/flag",
        expected: { equals: false },
        observed: bool(false),
        quality: "OK",
        outcome: "verified",
      },
      {
        signal: "rb/dev0/level",
        expected: { equals: 0.25 },
        observed: dbl(0.25),
        quality: "OK",
        outcome: "verified",
      },
      {
        signal: "rb/dev0/name",
        expected: { equals: "idle" },
        observed: str("idle"),
        quality: "OK",
        outcome: "verified",
      },
      {
        signal: "rb/dev0/other",
        expected: { min: 5 },
        observed: dbl(9),
        quality: "OK",
        outcome: "verified",
      },
    ]);
    // One round-trip per device, every expected signal of it once (and nothing else).
    assert.deepEqual(fx.reads().sort(), ["dev0 level,flag,name,other", "dev1 count"]);
    // Whole milliseconds, measured on the injected clock.
    assert.ok(Number.isInteger(v.elapsed_ms), `elapsed_ms ${v.elapsed_ms}`);
    assert.ok(v.elapsed_ms >= 0 && v.elapsed_ms <= Math.ceil(took), `${v.elapsed_ms} <= ${took}`);
  } finally {
    await fx.close();
  }
});

Deno.test("verifySafeState reads back again until the value settles, then stops", async () => {
  // A fan spinning down: 40, then 12, then 0. Virtual time (verifyOnce): the pauses are measured
  // exactly, not against a loaded machine's scheduling.
  const { v, reads } = await verifyOnce(
    {
      fan: {
        signals: { rpm: "double" },
        reads: [{ rpm: { v: 40 } }, { rpm: { v: 12 } }, { rpm: { v: 0 } }],
      },
    },
    [expectation("rb/fan/rpm", { min: -1, max: 1 })],
    5000,
  );
  assert.equal(v.outcome, "verified");
  assert.deepEqual(v.checks[0]!.observed, dbl(0));
  assert.deepEqual(reads, ["fan rpm", "fan rpm", "fan rpm"]);
  // Two pauses of VERIFY_RETRY_INTERVAL_MS (50 ms), far below the timeout.
  assert.ok(v.elapsed_ms >= 100, `elapsed ${v.elapsed_ms} ms`);
  assert.ok(v.elapsed_ms < 2500, `elapsed ${v.elapsed_ms} ms`);
});

/**
 * One verification against the read-back provider, in virtual time: the runtime, the provider's
 * delays and the verification's deadline and pauses run on one ManualClock (runToSettle).
 */
async function verifyOnce(
  script: Record<string, DeviceScript>,
  expect: SafeStateExpectation[],
  timeoutMs = 300,
): Promise<{ v: Verification; reads: string[] }> {
  const clock = new ManualClock();
  const fx = await startReadback(
    (log) => [readbackProvider("rb", script, { logFile: log })],
    { clock },
  );
  try {
    const v = await runToSettle(
      clock,
      verifySafeState({ reads: fx.cache, clock, expect, timeoutMs }),
      "the verification",
    );
    return { v, reads: fx.reads() };
  } finally {
    await fx.close();
  }
}

Deno.test("verifySafeState: a value that never meets its expectation is a mismatch at the deadline", async () => {
  const { v, reads } = await verifyOnce(
    { dev0: { signals: { duty: "double" }, reads: [{ duty: { v: 0.6 } }] } },
    [expectation("rb/dev0/duty", { equals: 0 })],
  );
  assert.equal(v.outcome, "mismatch");
  assert.deepEqual(v.checks, [{
    signal: "rb/dev0/duty",
    expected: { equals: 0 },
    observed: dbl(0.6),
    quality: "OK",
    outcome: "mismatch",
    reason: "reads 0.6",
  }]);
  // It kept reading every ~50 ms until the 300 ms timeout, and no longer.
  assert.ok(v.elapsed_ms >= 300 && v.elapsed_ms < 1300, `elapsed ${v.elapsed_ms} ms`);
  assert.ok(reads.length >= 3 && reads.length <= 8, `${reads.length} reads`);
});

Deno.test("verifySafeState: a matching value with a non-OK quality is a mismatch", async () => {
  const { v } = await verifyOnce(
    {
      dev0: {
        signals: { duty: "double", relay: "bool" },
        reads: [{ duty: { v: 0, q: "FAULT" }, relay: { v: false, q: "STALE" } }],
      },
    },
    [
      expectation("rb/dev0/duty", { equals: 0 }, 0),
      expectation("rb/dev0/relay", { equals: false }, 1),
    ],
  );
  assert.equal(v.outcome, "mismatch");
  assert.deepEqual(v.checks, [
    {
      signal: "rb/dev0/duty",
      expected: { equals: 0 },
      observed: dbl(0),
      quality: "FAULT",
      outcome: "mismatch",
      reason: "quality FAULT",
    },
    {
      signal: "rb/dev0/relay",
      expected: { equals: false },
      observed: bool(false),
      quality: "STALE",
      outcome: "mismatch",
      reason: "quality STALE",
    },
  ]);
});

Deno.test("verifySafeState: a signal returned without a value, or not returned, is unreachable", async () => {
  const { v } = await verifyOnce(
    {
      dev0: {
        signals: { gone: "double", absent: "double", ok: "double" },
        reads: [{ gone: { q: "UNKNOWN" }, ok: { v: 0 } }],
        // Every read takes 10 ms: the last one, cut short by the deadline, gets no answer.
        delayMs: 10,
      },
    },
    [
      expectation("rb/dev0/gone", { equals: 0 }, 0),
      expectation("rb/dev0/absent", { max: 0 }, 1),
      expectation("rb/dev0/ok", { equals: 0 }, 2),
    ],
  );
  assert.equal(v.outcome, "unreachable");
  assert.deepEqual(v.checks, [
    {
      signal: "rb/dev0/gone",
      expected: { equals: 0 },
      observed: null,
      quality: "UNAVAILABLE",
      outcome: "unreachable",
      reason: "the provider returned no value",
    },
    {
      signal: "rb/dev0/absent",
      expected: { max: 0 },
      observed: null,
      quality: null,
      outcome: "unreachable",
      reason: "the provider did not return the signal",
    },
    {
      signal: "rb/dev0/ok",
      expected: { equals: 0 },
      observed: dbl(0),
      quality: "OK",
      outcome: "verified",
    },
  ]);
});

Deno.test("verifySafeState: a mismatch anywhere outweighs an unreachable check", async () => {
  const { v } = await verifyOnce(
    {
      dev0: { signals: { a: "double" }, reads: [{}] },
      dev1: { signals: { b: "bool" }, reads: [{ b: { v: true } }] },
    },
    [expectation("rb/dev0/a", { equals: 0 }, 0), expectation("rb/dev1/b", { equals: false }, 1)],
  );
  assert.equal(v.outcome, "mismatch");
  assert.deepEqual(v.checks.map((c) => [c.outcome, c.reason]), [
    ["unreachable", "the provider did not return the signal"], // an answer without any value
    ["mismatch", "reads true"],
  ]);
});

Deno.test("verifySafeState: a failed read keeps the last fresh value, else says why it failed", async () => {
  // dev0 answers one read (a mismatch), then fails; dev1 answers one read without the signal,
  // then fails (10 ms after each request: the last read, cut short by the deadline, gets no
  // answer); dev2 fails from the start.
  const { v } = await verifyOnce(
    {
      dev0: { signals: { a: "double" }, reads: [{ a: { v: 3 } }], then: "fail" },
      dev1: { signals: { b: "double" }, reads: [{}], then: "fail", delayMs: 10 },
      dev2: { signals: { c: "double" }, reads: [], then: "fail" },
    },
    [
      expectation("rb/dev0/a", { equals: 0 }, 0),
      expectation("rb/dev1/b", { equals: 0 }, 1),
      expectation("rb/dev2/c", { equals: 0 }, 2),
    ],
  );
  assert.equal(v.outcome, "mismatch");
  assert.deepEqual(v.checks.map((c) => [c.outcome, c.observed, c.reason]), [
    ["mismatch", dbl(3), "reads 3"],
    [
      "unreachable",
      null,
      "read failed: UNAVAILABLE: provider answered UNAVAILABLE: scripted read failure",
    ],
    [
      "unreachable",
      null,
      "read failed: UNAVAILABLE: provider answered UNAVAILABLE: scripted read failure",
    ],
  ]);
});

Deno.test("verifySafeState: a hung provider's read is cut off at the verification deadline", async () => {
  // The first read-back shows the value; the provider never answers another.
  const { v } = await verifyOnce(
    { dev0: { signals: { a: "double" }, reads: [{ a: { v: 1 } }], then: "hang" } },
    [expectation("rb/dev0/a", { max: 0 })],
  );
  assert.equal(v.outcome, "mismatch");
  assert.deepEqual(v.checks[0]!.observed, dbl(1));
  assert.equal(v.checks[0]!.reason, "reads 1, above 0");
  // The provider's timeout_ms is 5000: the read waited for what was left of the 300 ms only.
  // elapsed_ms is read off verifyOnce's manual clock: virtual time, exactly the deadline.
  assert.equal(v.elapsed_ms, 300);
});

Deno.test("verifySafeState names an unknown provider, an unknown device and a provider that is down", async () => {
  const fx = await startReadback(() => [
    readbackProvider("rb", { dev0: { signals: { a: "double" }, reads: [{ a: { v: 0 } }] } }),
    readbackProvider("down", { dev0: { signals: { a: "double" }, reads: [{ a: { v: 0 } }] } }),
  ]);
  try {
    await fx.registry.host("down")!.stop(2000);
    const v = await verifySafeState({
      reads: fx.cache,
      clock: systemClock,
      expect: [
        expectation("nope/dev0/a", { equals: 0 }, 0),
        expectation("rb/dev9/a", { equals: 0 }, 1),
        expectation("down/dev0/a", { equals: 0 }, 2),
        expectation("rb/dev0/a", { equals: 0 }, 3),
      ],
      timeoutMs: 200,
    });
    assert.equal(v.outcome, "unreachable");
    assert.deepEqual(v.checks.map((c) => [c.outcome, c.reason]), [
      ["unreachable", "provider not found: nope"],
      ["unreachable", "device not found: rb/dev9"],
      ["unreachable", "provider unavailable: down"],
      ["verified", undefined],
    ]);
  } finally {
    await fx.close();
  }
});

Deno.test("verifySafeState: a provider that hangs during the read-back is reported down", async () => {
  // The first read-back does not return the signal; the provider never answers again. A
  // read-back's timeout alone does not mark a provider down: the poll loop's liveness checks
  // (every 100 ms, queued behind the hung read) time out LIVENESS_FAILURE_LIMIT times in a row at
  // its timeout_ms (100), well inside the verification's 1000 ms: the provider is killed and down.
  // Virtual time (runToSettle).
  const clock = new ManualClock();
  const fx = await startReadback(() => [
    readbackProvider("rb", { dev0: { signals: { a: "double" }, reads: [{}], then: "hang" } }, {
      timeoutMs: 100,
    }),
  ], { pollingIntervalMs: 100, clock });
  try {
    const v = await runToSettle(
      clock,
      verifySafeState({
        reads: fx.cache,
        clock,
        expect: [expectation("rb/dev0/a", { equals: 0 })],
        timeoutMs: 1000,
      }),
      "the verification",
    );
    assert.equal(v.outcome, "unreachable");
    assert.deepEqual(v.checks.map((c) => [c.observed, c.reason]), [
      [null, "provider unavailable: rb"],
    ]);
  } finally {
    await fx.close();
  }
});

Deno.test("verifySafeState: a read that ends exactly at the deadline is the last one", async () => {
  // Monotonic time stands still while the first read is made, then reads exactly the deadline.
  let calls = 0;
  let after = 1300;
  const clock = withRealTimers({
    nowMs: () => Date.now(),
    monoMs: () => (++calls <= 2 ? 1000 : after),
  });
  const fx = await startReadback((log) => [
    readbackProvider(
      "rb",
      { dev0: { signals: { duty: "double" }, reads: [{ duty: { v: 0.6 } }] } },
      {
        logFile: log,
      },
    ),
  ]);
  let timer: ReturnType<typeof setTimeout> | undefined;
  try {
    const verifying = verifySafeState({
      reads: fx.cache,
      clock,
      expect: [expectation("rb/dev0/duty", { equals: 0 })],
      timeoutMs: 300,
    });
    // Bound on a loop that would never end (time does not pass at the deadline).
    const bound = new Promise<"unbounded">((r) => (timer = setTimeout(() => r("unbounded"), 5000)));
    const v = await Promise.race([verifying, bound]);
    after = 1e12; // ends a loop still running, so the test cleans up either way
    await verifying;
    assert.notEqual(v, "unbounded", "verification did not stop at its deadline");
    assert.equal(v === "unbounded" ? null : v.outcome, "mismatch");
    assert.equal(fx.reads().length, 1, fx.reads().join("\n"));
  } finally {
    clearTimeout(timer);
    await fx.close();
  }
});

Deno.test("unlistedLadderDevices says why a configured provider with no host is not running in the inventory's words, framed 'its provider'", () => {
  const why = (id: string) =>
    id === "r" ? "provider r is being restarted by a configuration reload" : null;
  assert.deepEqual(
    unlistedLadderDevices([], [], ["r/a", "ghost/g"], () => undefined, { whyNotRunning: why }),
    [
      {
        device_handle: "r/a",
        reason: "its provider r is being restarted by a configuration reload",
      },
      { device_handle: "ghost/g", reason: "no provider ghost is configured" },
    ],
  );
});
