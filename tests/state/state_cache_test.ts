/**
 * StateCache over the programmable provider (served in-process: tests/helpers/
 * programmable_provider.ts programmableProgram; its ReadSignals answers the test sets): what a poll answer stores (values, timestamps, per-signal quality, declared-only
 * signals, type checks), the events it publishes, device availability, and what a failed or
 * timed-out poll does. Nothing polls unless the test asks (pollDevice), except where a test
 * starts the poll loop.
 */
import assert from "node:assert/strict";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { ADPP_DEADLINE_TIMER, ManualClock, runDueUntil, settleOn } from "../helpers/clock.ts";
import { rigNotStarted } from "../helpers/rig.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { QUOTED_DEVICE_ID_CHARS } from "../../src/common/mod.ts";
import {
  DATA_FAULT_LOG_LINES,
  DATA_FAULT_LOG_WINDOW_MS,
  QUOTED_SIGNAL_ID_CHARS,
  type SignalState,
  StateCache,
  TIMESTAMP_SKEW_LIMIT_MS,
} from "../../src/state/mod.ts";
import { StatusCode } from "../../src/adpp/mod.ts";
import type { ProviderHost } from "../../src/providers/mod.ts";
import { FakeProvider } from "../helpers/fake_provider.ts";
import {
  dbl,
  type Program,
  programFake,
  type ProgrammableFixture,
  programmableProvider,
  Q,
  type Sample,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";

const D0 = {
  devices: {
    d0: {
      signals: [
        { id: "x", type: T.DOUBLE },
        { id: "n", type: T.INT64 },
        { id: "s", type: T.STRING },
      ],
    },
  },
};

/** A cached sample without its receipt time (the monotonic clock's; asserted on its own). */
function stored(s: SignalState | undefined): Omit<SignalState, "receivedMono"> | undefined {
  if (s === undefined) return undefined;
  const { receivedMono: _, ...rest } = s;
  return rest;
}

/** The events about signals and devices (provider health changes left out), then cleared. */
function take(fx: ProgrammableFixture): RuntimeEvent[] {
  const out = fx.events.filter((e) => e.kind !== "provider_health_change");
  fx.events.length = 0;
  return out;
}

/**
 * The poll loop's next cycle on a manual clock: fires its timer and waits until the loop has armed
 * the next one, one interval later on the grid (the cycle, GetHealth included, has ended).
 */
async function cycle(clock: ManualClock, intervalMs: number, cache: StateCache): Promise<void> {
  const due = clock.pendingDueTimes()[0];
  assert.ok(clock.fireNext(), "a cycle is due");
  await waitFor(
    "the cycle's end",
    () => cache.pollsInFlight().length === 0 && clock.pendingDueTimes().includes(due! + intervalMs),
    10_000,
    0, // a synchronous look at the clock: every turn of the event loop
  );
}

async function withFixture(
  inventory: Parameters<typeof startProgrammable>[0],
  body: (fx: ProgrammableFixture) => Promise<void>,
  o: Parameters<typeof startProgrammable>[1] = {},
): Promise<void> {
  const fx = await startProgrammable(inventory, { inProcess: true, ...o });
  try {
    await body(fx);
  } finally {
    await fx.close();
  }
}

Deno.test("StateCache stores each sample with the provider's time, else the time the answer arrived", async () => {
  await withFixture(D0, async (fx) => {
    fx.clock.wallMs = 1_700_000_123_000;
    await fx.program("d0", {
      read: {
        values: [
          dbl("x", 1.5, { ts: 1_650_000_000_250 }),
          { id: "n", type: T.INT64, int64: "42", quality: Q.OK },
          { id: "s", type: T.STRING, string: "hi", quality: Q.OK, ts: 1_650_000_001_999 },
        ],
      },
    });
    assert.equal(fx.cache.device("p0", "d0")!.lastPollMs, 0, "never polled yet");
    assert.equal(fx.cache.device("p0", "d0")!.available, false);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: { type: "double", double: 1.5 },
      quality: "OK",
      timestampMs: 1_650_000_000_250,
    });
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "n")), {
      value: { type: "int64", int64: 42 },
      quality: "OK",
      timestampMs: 1_700_000_123_000,
    });
    assert.equal(fx.cache.signal("p0", "d0", "s")?.timestampMs, 1_650_000_001_999);
    const dev = fx.cache.device("p0", "d0")!;
    assert.equal(dev.lastPollMs, 1_700_000_123_000);
    assert.equal(dev.available, true);
    assert.deepEqual(dev.pollable, ["x", "n", "s"]);
    assert.deepEqual((await fx.stats("d0")).lastRead, ["x", "n", "s"]);
  });
});

Deno.test("StateCache keeps each signal's quality as the provider reported it; the device shows the worst", async () => {
  const inventory = {
    devices: {
      d0: {
        signals: ["ok", "stale", "fault", "unknown", "unspecified"].map((id) => ({
          id,
          type: T.DOUBLE,
        })),
      },
    },
  };
  await withFixture(inventory, async (fx) => {
    const all = (q: Record<string, number>) =>
      fx.program("d0", {
        read: { values: Object.entries(q).map(([id, quality]) => dbl(id, 1, { quality })) },
      });
    await all({ ok: Q.OK });
    await fx.cache.pollDevice("p0", "d0");
    const dev = () => fx.cache.device("p0", "d0")!;
    assert.equal(fx.cache.deviceQuality(dev()), "OK");
    await all({
      ok: Q.OK,
      stale: Q.STALE,
      fault: Q.FAULT,
      unknown: Q.UNKNOWN,
      unspecified: Q.UNSPECIFIED,
    });
    await fx.cache.pollDevice("p0", "d0");
    const quality = (id: string) => fx.cache.signal("p0", "d0", id)?.quality;
    assert.deepEqual(
      ["ok", "stale", "fault", "unknown", "unspecified"].map(quality),
      ["OK", "STALE", "FAULT", "UNAVAILABLE", "UNAVAILABLE"],
    );
    assert.equal(fx.cache.deviceQuality(dev()), "UNAVAILABLE");
    await all({ ok: Q.OK, stale: Q.STALE, fault: Q.OK, unknown: Q.OK, unspecified: Q.OK });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.deviceQuality(dev()), "STALE");
  });
});

Deno.test("StateCache publishes state_update on a first value, a changed value or quality, and nothing for a repeat", async () => {
  await withFixture(D0, async (fx) => {
    fx.clock.wallMs = 1_700_000_000_500;
    const read = (values: ReturnType<typeof dbl>[]) => fx.program("d0", { read: { values } });
    await read([dbl("x", 1.5, { ts: 1_000 })]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(take(fx), [
      {
        kind: "state_update",
        provider_id: "p0",
        device_id: "d0",
        signal_id: "x",
        value: { type: "double", double: 1.5 },
        quality: "OK",
        timestamp_ms: 1_700_000_000_500,
      },
      {
        kind: "device_availability",
        provider_id: "p0",
        device_id: "d0",
        available: true,
        timestamp_ms: 1_700_000_000_500,
      },
    ]);

    // The same value and quality again (a newer sample time): nothing to say.
    await read([dbl("x", 1.5, { ts: 2_000 })]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(take(fx), []);
    assert.equal(fx.cache.signal("p0", "d0", "x")?.timestampMs, 2_000, "the sample is stored");

    // A changed value: state_update only.
    fx.clock.wallMs += 100;
    await read([dbl("x", 2.5)]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(take(fx).map((e) => e.kind === "state_update" && [e.value, e.quality]), [
      [{ type: "double", double: 2.5 }, "OK"],
    ]);

    // The same value with another quality: state_update (value with its new quality) and
    // quality_change.
    fx.clock.wallMs += 100;
    await read([dbl("x", 2.5, { quality: Q.STALE })]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(take(fx), [
      {
        kind: "state_update",
        provider_id: "p0",
        device_id: "d0",
        signal_id: "x",
        value: { type: "double", double: 2.5 },
        quality: "STALE",
        timestamp_ms: 1_700_000_000_700,
      },
      {
        kind: "quality_change",
        provider_id: "p0",
        device_id: "d0",
        signal_id: "x",
        old_quality: "OK",
        new_quality: "STALE",
        timestamp_ms: 1_700_000_000_700,
      },
    ]);
  });
});

Deno.test("StateCache refreshes a repeated sample in place: no new object per unchanged signal, its times move (issue 39)", async () => {
  await withFixture(D0, async (fx) => {
    fx.clock.wallMs = 1_700_000_000_500;
    fx.clock.mono = 10_000;
    const read = (values: ReturnType<typeof dbl>[]) => fx.program("d0", { read: { values } });
    await read([dbl("x", 1.5, { ts: 1_000 })]);
    await fx.cache.pollDevice("p0", "d0");
    const first = fx.cache.signal("p0", "d0", "x")!;
    take(fx);

    await read([dbl("x", 1.5, { ts: 2_000 })]);
    fx.clock.mono = 10_100;
    await fx.cache.pollDevice("p0", "d0");
    const again = fx.cache.signal("p0", "d0", "x")!;
    assert.equal(again, first, "the same sample object: nothing allocated for a repeat");
    assert.deepEqual(stored(again), {
      value: { type: "double", double: 1.5 },
      quality: "OK",
      timestampMs: 2_000,
    });
    assert.equal(again.receivedMono, 10_100, "ages are measured from this receipt");
    assert.deepEqual(take(fx), []);

    // A new value, or the same value at another quality: a new sample (readers may compare).
    await read([dbl("x", 2.5, { ts: 3_000 })]);
    await fx.cache.pollDevice("p0", "d0");
    const changed = fx.cache.signal("p0", "d0", "x")!;
    assert.notEqual(changed, first);
    await read([dbl("x", 2.5, { ts: 4_000, quality: Q.STALE })]);
    await fx.cache.pollDevice("p0", "d0");
    assert.notEqual(fx.cache.signal("p0", "d0", "x"), changed);
    assert.equal(fx.cache.signal("p0", "d0", "x")!.quality, "STALE");
  });
});

Deno.test("StateCache compares values exactly: -0 differs from 0, NaN repeats are no change", async () => {
  await withFixture(D0, async (fx) => {
    const poll = async (v: number | string) => {
      await fx.program("d0", { read: { values: [dbl("x", v)] } });
      await fx.cache.pollDevice("p0", "d0");
      return take(fx).filter((e) => e.kind === "state_update").length;
    };
    assert.equal(await poll(0), 1);
    assert.equal(await poll(0), 0);
    assert.equal(await poll("-0"), 1);
    assert.equal(await poll(1), 1);
    assert.equal(await poll("NaN"), 1);
    assert.equal(await poll("NaN"), 0);
  });
});

Deno.test("StateCache: a signal answered without a value keeps its last value and time and takes the sample's quality", async () => {
  await withFixture(D0, async (fx) => {
    // Never had a value: stored without one, with the sample's quality and time; no state_update.
    fx.clock.wallMs = 1_700_000_000_000;
    await fx.program("d0", { read: { values: [{ id: "x", quality: Q.UNKNOWN, ts: 5_000 }] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: null,
      quality: "UNAVAILABLE",
      timestampMs: 5_000,
    });
    assert.deepEqual(take(fx).map((e) => e.kind), ["device_availability"]);

    // Its quality changes, still without a value: quality_change only.
    await fx.program("d0", { read: { values: [{ id: "x", quality: Q.FAULT }] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: null,
      quality: "FAULT",
      timestampMs: 1_700_000_000_000,
    });
    assert.deepEqual(take(fx).map((e) => e.kind === "quality_change" && e.new_quality), [
      "FAULT",
    ]);

    // A first value: state_update (and quality_change, FAULT -> OK).
    await fx.program("d0", { read: { values: [dbl("x", 7.25, { ts: 6_000 })] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(take(fx).map((e) => e.kind), ["state_update", "quality_change"]);

    // The value goes away: the last value and its time stay, with the new quality.
    await fx.program("d0", { read: { values: [{ id: "x", quality: Q.STALE, ts: 9_000 }] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: { type: "double", double: 7.25 },
      quality: "STALE",
      timestampMs: 6_000,
    });
    assert.deepEqual(
      take(fx).map((e) =>
        e.kind === "quality_change" ? [e.kind, e.old_quality, e.new_quality] : [e.kind]
      ),
      [["state_update"], ["quality_change", "OK", "STALE"]],
    );
  });
});

Deno.test("StateCache: a sample without a value at quality OK does not make a faulted or lost value good again", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 7.25)] } });
    await fx.cache.pollDevice("p0", "d0");
    // A kept OK value stays OK (it ages from its own receipt): nothing changes, nothing is said.
    take(fx);
    await fx.program("d0", { read: { values: [{ id: "x", quality: Q.OK }] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.signal("p0", "d0", "x")!.quality, "OK");
    assert.deepEqual(take(fx), []);
    for (const lost of [Q.FAULT, Q.UNKNOWN, Q.STALE]) {
      // The provider reports the value lost (no value), then answers OK, still without one.
      await fx.program("d0", { read: { values: [{ id: "x", quality: lost }] } });
      await fx.cache.pollDevice("p0", "d0");
      const bad = fx.cache.signal("p0", "d0", "x")!.quality;
      assert.notEqual(bad, "OK");
      take(fx);
      await fx.program("d0", { read: { values: [{ id: "x", quality: Q.OK }] } });
      await fx.cache.pollDevice("p0", "d0");
      const s = fx.cache.signal("p0", "d0", "x")!;
      assert.deepEqual(s.value, { type: "double", double: 7.25 }, "the last value is kept");
      assert.equal(
        fx.cache.qualityNow("p0", "d0", "x", s),
        "STALE",
        `the value from before the ${bad} sample is not vouched for by a sample without a value`,
      );
      assert.deepEqual(
        take(fx).map((e) => e.kind === "quality_change" && [e.old_quality, e.new_quality]),
        bad === "STALE" ? [] : [false, [bad, "STALE"]],
        "the change is published once (state_update, then quality_change)",
      );
      // A value brings it back.
      await fx.program("d0", { read: { values: [dbl("x", 7.25)] } });
      await fx.cache.pollDevice("p0", "d0");
      assert.equal(fx.cache.signal("p0", "d0", "x")!.quality, "OK");
    }
  });
});

Deno.test("StateCache: a sample without a value at quality OK, with no value to keep, is not OK", async () => {
  await withFixture(D0, async (fx) => {
    // The provider answers x at OK but never with a value: nothing is vouched for.
    await fx.program("d0", { read: { values: [{ id: "x", quality: Q.OK }] } });
    await fx.cache.pollDevice("p0", "d0");
    const s = fx.cache.signal("p0", "d0", "x")!;
    assert.equal(s.value, null);
    assert.equal(s.quality, "UNAVAILABLE", "no value to call OK");
    assert.equal(fx.cache.qualityNow("p0", "d0", "x", s), "UNAVAILABLE");
    assert.equal(fx.cache.deviceQuality(fx.cache.device("p0", "d0")!), "UNAVAILABLE");
    // A value makes it OK.
    await fx.program("d0", { read: { values: [dbl("x", 2)] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.signal("p0", "d0", "x")!.quality, "OK");
  });
});

Deno.test("StateCache refuses a value whose member disagrees with the declared type or its own Value.type", async () => {
  const inventory = {
    devices: {
      d0: {
        signals: [
          { id: "x", type: T.DOUBLE },
          { id: "any", type: 0 },
          { id: "n", type: T.INT64 },
        ],
      },
    },
  };
  await withFixture(inventory, async (fx) => {
    const poll = async (values: object[]) => {
      await fx.program("d0", { read: { values: values as never } });
      await fx.cache.pollDevice("p0", "d0");
    };
    // Good values first.
    await poll([
      dbl("x", 1.5, { ts: 1_000 }),
      { id: "any", type: T.STRING, string: "free", quality: Q.OK },
      // A Value without its own type agrees with any member.
      { id: "n", int64: "3", quality: Q.OK },
    ]);
    assert.deepEqual(fx.cache.signal("p0", "d0", "n")?.value, { type: "int64", int64: 3 });
    // A signal declared without a type takes any member, but not one its Value.type denies.
    await poll([{ id: "any", type: T.BOOL, bool: true, quality: Q.OK }]);
    assert.deepEqual(fx.cache.signal("p0", "d0", "any")?.value, { type: "bool", bool: true });
    assert.equal(fx.cache.signal("p0", "d0", "any")?.quality, "OK");
    assert.deepEqual(fx.cache.dataFaults("p0").type_mismatch, 0);
    take(fx);

    fx.clock.wallMs += 1000;
    await poll([
      // An int64 on a double signal.
      { id: "x", type: T.INT64, int64: "2", quality: Q.OK, ts: 2_000 },
      // Value.type says STRING, the member is a bool.
      { id: "any", type: T.STRING, bool: false, quality: Q.OK },
    ]);
    // Refused: the last good value (and its time) kept, quality FAULT.
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: { type: "double", double: 1.5 },
      quality: "FAULT",
      timestampMs: 1_000,
    });
    assert.deepEqual(fx.cache.signal("p0", "d0", "any")?.value, { type: "bool", bool: true });
    assert.equal(fx.cache.signal("p0", "d0", "any")?.quality, "FAULT");
    assert.deepEqual(fx.cache.dataFaults("p0"), {
      type_mismatch: 2,
      non_finite: 0,
      undeclared_signal: 0,
    });
    const warned = fx.lines.filter((l) => l.includes("stored as FAULT"));
    assert.equal(warned.length, 2);
    assert.match(
      warned[0]!,
      /^WARN .*"p0\/d0" signal "x": a int64 value on a signal declared double;/,
    );
    assert.match(warned[1]!, /"p0\/d0" signal "any": a bool value in a Value of type 5;/);
    assert.match(warned[1]!, /\(2 so far\)$/);

    // A typed signal whose sample's Value.type disagrees with its (declared) member.
    await poll([{ id: "x", type: T.INT64, double: 5, quality: Q.OK }]);
    assert.match(
      (fx.lines.filter((l) => l.includes("stored as FAULT"))[2])!,
      /"p0\/d0" signal "x": a double value in a Value of type 2;/,
    );
    // A refused value on a signal that never had one: stored without a value.
    await poll([{ id: "n", type: T.DOUBLE, double: 1, quality: Q.OK, ts: 3_000 }]);
    await poll([{ id: "n", type: T.STRING, string: "3", quality: Q.OK, ts: 4_000 }]);
    assert.deepEqual(fx.cache.signal("p0", "d0", "n")?.value, { type: "int64", int64: 3 });
    assert.equal(fx.cache.dataFaults("p0").type_mismatch, 5);
  });
});

Deno.test("StateCache stores NaN and infinities with quality FAULT and counts them", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", "NaN", { ts: 1_000 })] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: { type: "double", double: NaN, non_finite: "NaN" },
      quality: "FAULT",
      timestampMs: 1_000,
    });
    assert.ok(
      fx.lines.some((l) =>
        /^WARN .*"p0\/d0" signal "x": non-finite double NaN; stored as FAULT \(1 so far\)$/.test(l)
      ),
    );
    await fx.program("d0", { read: { values: [dbl("x", "-Infinity")] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.dataFaults("p0").non_finite, 2);
    assert.equal(fx.cache.dataFaults("p0").type_mismatch, 0);
    // A finite value again: OK.
    await fx.program("d0", { read: { values: [dbl("x", 3)] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.signal("p0", "d0", "x")?.quality, "OK");
    assert.equal(fx.cache.dataFaults("p0").non_finite, 2);
  });
});

Deno.test("StateCache drops samples of undeclared signals and ignores declared signals without a poll hint", async () => {
  const inventory = {
    devices: {
      d0: {
        signals: [
          { id: "x", type: T.DOUBLE },
          { id: "quiet", type: T.DOUBLE, hint: 0 },
          // Declared twice: discovery keeps the first declaration (not polled).
          { id: "twice", type: T.DOUBLE, hint: 0 },
          { id: "twice", type: T.DOUBLE, hint: 5 },
          // Declared twice: the first declaration holds (polled).
          { id: "again", type: T.DOUBLE, hint: 5 },
          { id: "again", type: T.DOUBLE, hint: 0 },
        ],
      },
    },
  };
  await withFixture(inventory, async (fx) => {
    await fx.program("d0", {
      read: {
        values: [dbl("x", 1), dbl("quiet", 2), dbl("twice", 3), dbl("again", 4), dbl("ghost", 5)],
      },
    });
    // Discovery dropped each later declaration before the cache saw it: one slot per id, the
    // first declaration's (the cache has no branch for a second one).
    assert.deepEqual(
      fx.registry.capabilities("p0", "d0")!.signals.map((x) => [x.signalId, x.pollHintHz > 0]),
      [["x", true], ["quiet", false], ["twice", false], ["again", true]],
    );
    assert.deepEqual(fx.cache.device("p0", "d0")!.pollable, ["x", "again"]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual((await fx.stats("d0")).lastRead, ["x", "again"]);
    assert.deepEqual(
      [...fx.cache.device("p0", "d0")!.signals.keys()].sort(),
      ["again", "x"],
    );
    assert.equal(fx.cache.signal("p0", "d0", "quiet"), undefined);
    assert.equal(fx.cache.signal("p0", "d0", "twice"), undefined);
    assert.equal(fx.cache.signal("p0", "d0", "ghost"), undefined);
    assert.deepEqual(fx.cache.dataFaults("p0"), {
      type_mismatch: 0,
      non_finite: 0,
      undeclared_signal: 1,
    });
    const signals = take(fx).filter((e) => e.kind === "state_update").map((e) =>
      e.kind === "state_update" && e.signal_id
    );
    assert.deepEqual(signals, ["x", "again"]);
    assert.match(
      fx.lines.find((l) => l.includes("undeclared"))!,
      /^WARN .*"p0\/d0": dropped a sample of undeclared signal "ghost" \(1 so far\)$/,
    );
  });
});

Deno.test("StateCache keeps the first sample of a signal an answer repeats: the value does not flap from poll to poll", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1), dbl("x", 2), dbl("x", 3)] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(fx.cache.signal("p0", "d0", "x")?.value, { type: "double", double: 1 });
    const updates = () =>
      take(fx).flatMap((e) => e.kind === "state_update" ? [[e.signal_id, e.value]] : []);
    assert.deepEqual(updates(), [["x", { type: "double", double: 1 }]]);
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(updates(), [], "the same answer again: nothing changed, nothing published");
    assert.deepEqual(fx.cache.signal("p0", "d0", "x")?.value, { type: "double", double: 1 });
    assert.match(
      fx.lines.find((l) => l.includes("second sample"))!,
      /^WARN .*"p0\/d0": dropped a second sample of signal "x" in one answer; the first is kept$/,
    );
  });
});

Deno.test("StateCache.readFresh takes the first sample of a signal an answer repeats, as the cache does", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1), dbl("x", 0)] } });
    await fx.cache.pollDevice("p0", "d0");
    const read = await fx.cache.readFresh("p0", "d0", ["x"], 5000);
    assert.ok(read.ok);
    // The e-stop's read-back (safety/verify.ts) sees what GET /v0/state shows, not another sample.
    assert.deepEqual(read.samples.get("x")?.value, fx.cache.signal("p0", "d0", "x")?.value);
    assert.deepEqual(read.samples.get("x")?.value, { type: "double", double: 1 });
  });
});

Deno.test("StateCache.readFresh gives quality FAULT to a sample a poll stores as FAULT: a type its Value or the signal's declaration denies, a non-finite double", async () => {
  await withFixture(D0, async (fx) => {
    const fresh = async (values: Sample[]) => {
      await fx.program("d0", { read: { values } });
      const read = await fx.cache.readFresh("p0", "d0", ["x", "n"], 5000);
      assert.ok(read.ok);
      return [read.samples.get("x")?.quality, read.samples.get("n")?.quality];
    };
    // Good samples: OK (a Value without its own type agrees with any member).
    assert.deepEqual(await fresh([dbl("x", 0), { id: "n", int64: "0", quality: Q.OK }]), [
      "OK",
      "OK",
    ]);
    // The e-stop's read-back (safety/verify.ts) must not take for a verified 0 what GET /v0/state
    // shows as FAULT: an int64 0 on the double signal x, a double 0 in a Value of type BOOL.
    assert.deepEqual(
      await fresh([
        { id: "x", type: T.INT64, int64: "0", quality: Q.OK },
        { id: "n", type: T.BOOL, double: 0, quality: Q.OK },
      ]),
      ["FAULT", "FAULT"],
    );
    assert.deepEqual(
      await fresh([dbl("x", "NaN"), { id: "n", type: T.DOUBLE, double: 0, quality: Q.OK }]),
      [
        "FAULT",
        "FAULT",
      ],
    );
  });
});

Deno.test("StateCache.dataFaults is a copy, and zero for a provider it does not know", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("ghost", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    const faults = fx.cache.dataFaults("p0");
    faults.undeclared_signal = 99;
    assert.equal(fx.cache.dataFaults("p0").undeclared_signal, 1);
    assert.deepEqual(fx.cache.dataFaults("nope"), {
      type_mismatch: 0,
      non_finite: 0,
      undeclared_signal: 0,
    });
  });
});

Deno.test("StateCache: a poll answered with an error status marks the device unavailable, keeping its values", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1.5, { ts: 1_000 })] } });
    await fx.cache.pollDevice("p0", "d0");
    take(fx);
    fx.clock.wallMs += 500;
    await fx.program("d0", { read: { error: { code: StatusCode.UNAVAILABLE } } });
    await fx.cache.pollDevice("p0", "d0");
    const dev = fx.cache.device("p0", "d0")!;
    assert.equal(dev.available, false);
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: { type: "double", double: 1.5 },
      quality: "UNAVAILABLE",
      timestampMs: 1_000,
    });
    assert.equal(fx.cache.deviceQuality(dev), "UNAVAILABLE");
    const t = fx.clock.wallMs;
    assert.deepEqual(take(fx), [
      {
        kind: "state_update",
        provider_id: "p0",
        device_id: "d0",
        signal_id: "x",
        value: { type: "double", double: 1.5 },
        quality: "UNAVAILABLE",
        timestamp_ms: t,
      },
      {
        kind: "quality_change",
        provider_id: "p0",
        device_id: "d0",
        signal_id: "x",
        old_quality: "OK",
        new_quality: "UNAVAILABLE",
        timestamp_ms: t,
      },
      {
        kind: "device_availability",
        provider_id: "p0",
        device_id: "d0",
        available: false,
        timestamp_ms: t,
      },
    ]);
    // Failing again says nothing new.
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(take(fx), []);
    // The provider is still up: the error was an answer.
    assert.equal(fx.host.available, true);
    // Answering again makes the device available again.
    await fx.program("d0", { read: { values: [dbl("x", 1.5)] } });
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.device("p0", "d0")!.available, true);
    assert.deepEqual(take(fx).map((e) => e.kind), [
      "state_update",
      "quality_change",
      "device_availability",
    ]);
  });
});

Deno.test("StateCache.pollDevice does nothing for unknown devices, devices without polled signals and a down provider", async () => {
  const inventory = {
    devices: {
      d0: { signals: [{ id: "x", type: T.DOUBLE }] },
      quiet: { signals: [{ id: "q", type: T.DOUBLE, hint: 0 }] },
    },
  };
  await withFixture(inventory, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "nope");
    await fx.cache.pollDevice("nope", "d0");
    await fx.cache.pollDevice("p0", "quiet");
    assert.equal((await fx.stats("quiet")).reads, 0);
    assert.equal((await fx.stats("d0")).reads, 0);
    assert.deepEqual(fx.cache.device("p0", "quiet")?.pollable, []);
    await fx.cache.pollDevice("p0", "d0");
    assert.equal((await fx.stats("d0")).reads, 1);
    await fx.registry.stopAll(1000);
    await fx.cache.pollDevice("p0", "d0"); // provider down: resolves without asking
    assert.equal(fx.host.available, false);
  });
});

Deno.test("StateCache.fetchReportedHealth stores the answer; after UNIMPLEMENTED it stops asking this session", async () => {
  await withFixture(D0, async (fx) => {
    fx.clock.wallMs = 1_700_000_000_042;
    fx.clock.mono = 7_000;
    assert.equal(fx.cache.reportedHealth("p0"), undefined);
    const entry = await fx.cache.fetchReportedHealth(fx.host);
    assert.deepEqual(entry, { atMs: 1_700_000_000_042, atMono: 7_000, response: {} });
    assert.deepEqual(fx.cache.reportedHealth("p0"), entry);
    assert.equal(fx.host.session!.supportsGetHealth, true);

    // Another error: no answer to keep (the last one stays), asked again next time.
    await fx.program("d0", { health: { error: { code: StatusCode.INTERNAL } } });
    assert.equal(await fx.cache.fetchReportedHealth(fx.host), null);
    assert.equal(await fx.cache.fetchReportedHealth(fx.host), null);
    assert.equal((await fx.stats("d0")).health, 3);
    assert.deepEqual(fx.cache.reportedHealth("p0"), entry);
    assert.equal(fx.host.session!.supportsGetHealth, true);

    // UNIMPLEMENTED: remembered for the session, never asked again.
    await fx.program("d0", { health: { error: { code: StatusCode.UNIMPLEMENTED } } });
    assert.equal(await fx.cache.fetchReportedHealth(fx.host), null);
    assert.equal(fx.host.session!.supportsGetHealth, false);
    await fx.program("d0", { health: {} });
    assert.equal(await fx.cache.fetchReportedHealth(fx.host), null);
    assert.equal((await fx.stats("d0")).health, 4);

    // Down: null without asking.
    fx.host.session!.supportsGetHealth = null;
    await fx.registry.stopAll(1000);
    assert.equal(await fx.cache.fetchReportedHealth(fx.host), null);
  });
});

Deno.test("StateCache's poll loop refreshes the provider's own health every reportedHealthIntervalMs", async () => {
  const clock = new ManualClock();
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    const stats = () => fx.stats("d0");
    assert.equal((await stats()).health, 0, "the priming pass asks for none");
    // The first cycle asks (nothing reported yet) ...
    await cycle(clock, 100, fx.cache);
    assert.equal((await stats()).health, 1);
    const askedAt = fx.cache.reportedHealth("p0")!.atMono;
    const reads = (await stats()).reads;
    // ... the cycles less than reportedHealthIntervalMs after that answer only poll ...
    let cycles = 0;
    while (clock.pendingDueTimes()[0]! - askedAt < 1000) {
      await cycle(clock, 100, fx.cache);
      cycles++;
      assert.equal((await stats()).health, 1, `${clock.monoMs() - askedAt} ms after the answer`);
    }
    assert.equal(cycles, 9);
    assert.equal((await stats()).reads, reads + 9);
    // ... and the cycle 1000 ms after it asks again.
    await cycle(clock, 100, fx.cache);
    assert.equal((await stats()).health, 2);
    assert.equal(fx.cache.reportedHealth("p0")!.atMono, askedAt + 1000);
  }, { intervalMs: 100, reportedHealthIntervalMs: 1000, manual: clock });
});

Deno.test("StateCache asks for the provider's own health every 5 s by default", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    const health = async () => (await fx.stats("d0")).health;
    await cycle(clock, 100, fx.cache);
    assert.equal(await health(), 1, "the first cycle asks");
    const askedAt = fx.cache.reportedHealth("p0")!.atMono;
    while (clock.pendingDueTimes()[0]! - askedAt < 5000) {
      await cycle(clock, 100, fx.cache);
      assert.equal(await health(), 1, `${clock.monoMs() - askedAt} ms after the answer`);
    }
    assert.equal(clock.monoMs() - askedAt, 4900);
    await cycle(clock, 100, fx.cache);
    assert.equal(await health(), 2, "5 s after the answer");
  }, { intervalMs: 100, manual: clock });
});

Deno.test("StateCache polls every interval and stops polling on stop()", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    // The priming pass polled once, before start() resolved.
    assert.equal((await fx.stats("d0")).reads, 1);
    assert.equal(fx.cache.device("p0", "d0")!.available, true);
    const origin = clock.monoMs();
    assert.deepEqual(clock.pendingDueTimes(), [origin + 50], "the loop waits one interval");
    await cycle(clock, 50, fx.cache);
    await cycle(clock, 50, fx.cache);
    assert.equal((await fx.stats("d0")).reads, 3);
    await fx.cache.start(); // already running: no second loop, no second priming pass
    assert.equal((await fx.stats("d0")).reads, 3);
    assert.deepEqual(clock.pendingDueTimes(), [origin + 150], "one loop");
    await fx.cache.stop();
    assert.equal(clock.pendingTimers, 0, "no cycle after stop()");
    await clock.advanceAsync(1000);
    await fx.host.request("list_devices", {}); // answered after anything sent before it
    assert.equal((await fx.stats("d0")).reads, 3, "no poll after stop()");
  }, { intervalMs: 50, manual: clock });
});

Deno.test("StateCache after rediscovery keeps samples whose declared type still holds and polls the new plan", async () => {
  const before = {
    devices: {
      d0: {
        signals: [
          { id: "same", type: T.DOUBLE },
          { id: "retyped", type: T.DOUBLE },
          { id: "untyped", type: T.DOUBLE },
          { id: "valueless", type: T.DOUBLE },
          { id: "unpolled", type: T.DOUBLE },
          { id: "dropped", type: T.DOUBLE },
        ],
      },
      gone: { signals: [{ id: "x", type: T.DOUBLE }] },
    },
  };
  await withFixture(before, async (fx) => {
    fx.clock.wallMs = 1_700_000_000_000;
    await fx.program("d0", {
      read: {
        values: [
          dbl("same", 1, { ts: 1_000 }),
          dbl("retyped", 2),
          dbl("untyped", 3),
          { id: "valueless", quality: Q.UNKNOWN },
          dbl("unpolled", 4),
          dbl("dropped", 5),
        ],
      },
    });
    await fx.program("gone", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    await fx.cache.pollDevice("p0", "gone");
    await fx.setInventory({
      devices: {
        fresh: { signals: [{ id: "x", type: T.DOUBLE }] },
        d0: {
          signals: [
            { id: "same", type: T.DOUBLE },
            { id: "retyped", type: T.INT64 },
            { id: "untyped", type: 0 },
            { id: "valueless", type: T.STRING },
            { id: "unpolled", type: T.DOUBLE, hint: 0 },
            { id: "added", type: T.DOUBLE },
          ],
        },
      },
    });
    fx.clock.wallMs += 10_000;
    const pid = fx.kill();
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    assert.deepEqual(fx.cache.devices().map((d) => d.deviceId), ["fresh", "d0"]);
    assert.equal(fx.cache.device("p0", "gone"), undefined);
    const d0 = fx.cache.device("p0", "d0")!;
    assert.deepEqual(d0.pollable, ["same", "retyped", "untyped", "valueless", "added"]);
    // Kept: the value and time (its quality is still the one the outage left).
    assert.deepEqual(stored(d0.signals.get("same")), {
      value: { type: "double", double: 1 },
      quality: "UNAVAILABLE",
      timestampMs: 1_000,
    });
    assert.equal(d0.signals.get("retyped"), undefined, "a double is no value of an int64 signal");
    assert.deepEqual(d0.signals.get("untyped")?.value, { type: "double", double: 3 });
    assert.equal(d0.signals.get("valueless")?.value, null);
    assert.equal(d0.signals.has("unpolled"), false);
    assert.equal(d0.signals.has("dropped"), false);
    assert.deepEqual([...d0.signals.keys()], ["same", "untyped", "valueless"]);
    assert.equal(d0.lastPollMs, 1_700_000_000_000, "the last poll is remembered");
    assert.equal(d0.available, false, "not polled since the outage");
    assert.equal(fx.cache.device("p0", "fresh")!.lastPollMs, 0);
    assert.equal(fx.cache.device("p0", "fresh")!.available, false);

    // The next poll: a stored value with the old type compared afresh, events for changes.
    fx.events.length = 0;
    await fx.program("d0", {
      read: {
        values: [
          dbl("same", 1, { ts: 2_000 }),
          { id: "retyped", type: T.INT64, int64: "7", quality: Q.OK },
          { id: "untyped", type: T.STRING, string: "now a string", quality: Q.OK },
        ],
      },
    });
    await fx.cache.pollDevice("p0", "d0");
    const updates = take(fx).filter((e) => e.kind === "state_update").map((e) =>
      e.kind === "state_update" && e.signal_id
    );
    assert.deepEqual(updates, ["same", "retyped", "untyped"]);
    assert.deepEqual(fx.cache.signal("p0", "d0", "retyped")?.value, { type: "int64", int64: 7 });
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("StateCache marks a down provider's devices unavailable and polls again as soon as it is back", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    // A long interval: only the wake-up on the provider's return can poll within the test.
    await fx.cache.start();
    assert.equal(fx.cache.device("p0", "d0")!.available, true);
    fx.events.length = 0;
    // The restarted process answers x = 2 from the start.
    await fx.setInventory({ devices: { d0: { ...D0.devices.d0, values: [dbl("x", 2)] } } });
    const pid = fx.kill();
    // In-process the restart may come back at once: the outage is seen in the events.
    await waitFor(
      "down",
      () => fx.events.some((e) => e.kind === "device_availability" && !e.available),
    );
    await waitFor("polled after the restart", () => fx.cache.device("p0", "d0")!.available);
    assert.notEqual(fx.host.session!.pid, pid);
    assert.deepEqual(stored(fx.cache.signal("p0", "d0", "x")), {
      value: { type: "double", double: 2 },
      quality: "OK",
      timestampMs: fx.clock.wallMs,
    });
    const seen = fx.events.map((e) =>
      e.kind === "device_availability"
        ? [e.kind, e.available]
        : e.kind === "provider_health_change"
        ? [e.kind, e.state]
        : e.kind === "quality_change"
        ? [e.kind, e.new_quality]
        : [e.kind]
    );
    assert.deepEqual(seen, [
      ["provider_health_change", "UNAVAILABLE"],
      ["state_update"],
      ["quality_change", "UNAVAILABLE"],
      ["device_availability", false],
      ["provider_health_change", "AVAILABLE"],
      ["state_update"],
      ["quality_change", "OK"],
      ["device_availability", true],
    ]);
  }, { intervalMs: 60_000, restart: { backoffMs: [0, 0, 0] } });
});

/** Each device_availability of `fx` as [device, available, timestamp_ms, reason], then cleared. */
function flips(fx: ProgrammableFixture): [string, boolean, number, string | undefined][] {
  const out = fx.events.flatMap((e) =>
    e.kind === "device_availability"
      ? [[e.device_id, e.available, e.timestamp_ms, e.reason] as [
        string,
        boolean,
        number,
        string | undefined,
      ]]
      : []
  );
  fx.events.length = 0;
  return out;
}

Deno.test("StateCache dates a device's availability flip no earlier than its flip before it when the wall clock steps back (NTP)", async () => {
  await withFixture({ devices: { d0: D0.devices.d0, d1: D0.devices.d0 } }, async (fx) => {
    const t = 1_700_000_000_000;
    const ok = (device: string) => fx.program(device, { read: { values: [dbl("x", 1)] } });
    const fail = (device: string) =>
      fx.program(device, { read: { error: { code: StatusCode.UNAVAILABLE } } });
    fx.clock.wallMs = t;
    await ok("d0");
    await fx.cache.pollDevice("p0", "d0");
    fx.clock.wallMs = t - 10_000; // NTP steps the wall clock back 10 s
    await ok("d1");
    await fx.cache.pollDevice("p0", "d1"); // d1 never flipped: the clock's time
    await fail("d0");
    await fx.cache.pollDevice("p0", "d0");
    fx.clock.wallMs = t - 5_000;
    await ok("d0");
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(flips(fx), [
      ["d0", true, t, undefined],
      ["d1", true, t - 10_000, undefined],
      ["d0", false, t, undefined],
      ["d0", true, t, undefined],
    ], "never earlier than the device's flip before it; another device's is its own");

    // Its provider goes down and comes back (rediscovery makes the device anew): still no earlier.
    const pid = fx.kill();
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    await ok("d0");
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(flips(fx), [
      ["d0", false, t, undefined],
      ["d1", false, t - 5_000, undefined],
      ["d0", true, t, undefined],
    ]);

    // Once the clock passes it again, the clock's time.
    fx.clock.wallMs = t + 1_000;
    await fail("d0");
    await fx.cache.pollDevice("p0", "d0");
    assert.deepEqual(flips(fx), [["d0", false, t + 1_000, undefined]]);
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("StateCache dates a removed device no earlier than its flip before it, and its provider's successor's devices no earlier than the removal (NTP)", async () => {
  await withFixture({ devices: { d0: D0.devices.d0, d1: D0.devices.d0 } }, async (fx) => {
    const t = 1_700_000_000_000;
    const old = fx.host;
    fx.clock.wallMs = t;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    fx.clock.wallMs = t - 10_000; // NTP steps the wall clock back 10 s
    assert.equal(fx.registry.remove("p0"), old);
    await old.stop(1000);
    assert.deepEqual(flips(fx), [["d0", true, t, undefined], ["d0", false, t, "removed"]]);

    // A reload configures it again (a changed provider): its devices come back no earlier.
    fx.clock.wallMs = t - 5_000;
    const again = fx.registry.add(old.config);
    await again.start();
    await fx.cache.pollDevice("p0", "d1");
    assert.deepEqual(flips(fx), [["d1", true, t, undefined]]);
    await again.stop(1000);
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("StateCache.stop waits for the poll in flight; start() after stop() polls again", async () => {
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    await fx.program("d0", { read: { values: [dbl("x", 2)], delayMs: 300 } });
    const before = (await fx.stats("d0")).reads;
    assert.ok(clock.fireNext(), "a cycle");
    await waitFor("a slow poll in flight", async () => (await fx.stats("d0")).reads > before);
    await fx.cache.stop();
    assert.deepEqual(fx.cache.signal("p0", "d0", "x")?.value, { type: "double", double: 2 });
    const stoppedAt = (await fx.stats("d0")).reads;
    assert.equal(clock.pendingTimers, 0, "no cycle after stop()");
    await clock.advanceAsync(1000);
    await fx.host.request("list_devices", {}); // answered after anything sent before it
    assert.equal((await fx.stats("d0")).reads, stoppedAt, "no poll after stop()");
    await fx.program("d0", { read: { values: [dbl("x", 3)] } });
    await fx.cache.start();
    assert.deepEqual(fx.cache.signal("p0", "d0", "x")?.value, { type: "double", double: 3 });
    const reads = (await fx.stats("d0")).reads;
    await cycle(clock, 50, fx.cache);
    await cycle(clock, 50, fx.cache);
    assert.equal((await fx.stats("d0")).reads, reads + 2, "the loop polls again");
  }, { intervalMs: 50, manual: clock });
});

Deno.test("StateCache built after its providers started knows their devices at once", async () => {
  await withFixture(D0, async (fx) => {
    const late = new StateCache({
      registry: fx.registry,
      bus: new EventBus(),
      clock: fx.clock,
      log: testLogger(),
      intervalMs: 60_000,
    });
    assert.deepEqual(late.devices().map((d) => [d.providerId, d.deviceId, d.pollable]), [
      ["p0", "d0", ["x", "n", "s"]],
    ]);
    assert.deepEqual(late.providerDevices("p0").map((d) => d.deviceId), ["d0"]);
    assert.deepEqual(late.providerDevices("nope"), []);
    assert.deepEqual(late.discoveryWarnings("p0"), []);
    assert.deepEqual(late.discoveryWarnings("nope"), []);
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await late.pollDevice("p0", "d0");
    assert.deepEqual(late.signal("p0", "d0", "x")?.value, { type: "double", double: 1 });
  });
});

Deno.test("StateCache quotes a provider-supplied signal id in its warnings cut to 64 characters", async () => {
  await withFixture(D0, async (fx) => {
    const id = "g".repeat(100);
    const id64 = "h".repeat(64);
    await fx.program("d0", {
      read: { values: [dbl(id, 1), dbl(id64, 1), { id: undefined as never, double: 1 }] },
    });
    await fx.cache.pollDevice("p0", "d0");
    const dropped = fx.lines.filter((l) => l.includes("dropped a sample")).map((l) =>
      l.split(": dropped a sample of undeclared signal ")[1]
    );
    assert.deepEqual(dropped, [
      `"${"g".repeat(64)}…" (1 so far)`,
      `"${id64}" (2 so far)`,
      `"" (3 so far)`,
    ]);
  });
});

Deno.test("StateCache quotes a provider-supplied device id in its log lines cut to 64 characters, and a poll error's text", async () => {
  const forged = 'd"0 ERROR forged'; // (a line break in an id is refused at discovery)
  const long = "L".repeat(10_000);
  const inventory = {
    devices: {
      [forged]: { signals: [{ id: "x", type: T.DOUBLE }] },
      [long]: { signals: [{ id: "x", type: T.DOUBLE }] },
    },
  };
  await withFixture(inventory, async (fx) => {
    await fx.program(forged, { read: { values: [dbl("x", 1), dbl("ghost", 2)] } });
    await fx.program(long, {
      read: { error: { code: StatusCode.UNAVAILABLE, message: 'bus "down"\nERROR forged' } },
    });
    await fx.cache.pollDevice("p0", forged);
    await fx.cache.pollDevice("p0", long);
    assert.deepEqual(fx.lines.filter((l) => !l.startsWith("DEBUG") && !l.startsWith("INFO")), [
      fx.lines.find((l) => l.includes("undeclared"))!,
    ]);
    assert.match(
      fx.lines.find((l) => l.includes("undeclared"))!,
      /^WARN .*"p0\/d\\"0 ERROR forged": dropped a sample of undeclared signal "ghost" \(1 so far\)$/,
    );
    const failed = fx.lines.find((l) => l.includes(" failed: "))!;
    assert.equal(
      failed.split("] ")[1],
      `poll "p0/${
        "L".repeat(64)
      }…" failed: "provider answered UNAVAILABLE: bus \\"down\\"\\nERROR forged"`,
    );
    // Every line of the cache (DEBUG too) names the forged device escaped only, the long one cut
    // only. (A line break cannot reach a line whatever the cache does: the logger escapes it. The
    // provider's own `up:` line cuts ids to its own bound.)
    const cache = fx.lines.filter((l) => l.includes(" [state] "));
    assert.equal(cache.length, 2, cache.join("\n"));
    assert.deepEqual(cache.filter((l) => l.includes('p0/d"0')), [], "the forged id unescaped");
    const uncut = cache.filter((l) => l.includes("L".repeat(QUOTED_DEVICE_ID_CHARS + 1)));
    assert.deepEqual(uncut.map((l) => l.slice(0, 120)), [], "the long id uncut");
  });
});

Deno.test("StateCache's poll loop waits interval_ms from a cycle's start, and starts at once after an overrun", async () => {
  // The interval is 60 s: only the wake-up after a restart and an overrun can start a cycle
  // without the test moving the clock. The provider's timeout_ms outlasts the 60 s the test
  // lets pass during a read.
  const clock = new ManualClock(10_000).background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.cache.start();
    await fx.setInventory({
      devices: { d0: { ...D0.devices.d0, values: [dbl("x", 1)], readDelayMs: 300 } },
    });
    const pid = fx.kill();
    await runDueUntil(clock, "restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    // The wake-up cycle's poll is in flight: 60 s pass on the monotonic clock meanwhile.
    await runDueUntil(clock, "the wake-up poll", async () => (await fx.stats("d0")).reads === 1);
    assert.equal(clock.monoMs(), 10_000);
    clock.advance(60_000);
    // That cycle overran the interval: the next one starts at once ...
    await runDueUntil(clock, "the next cycle", async () => (await fx.stats("d0")).reads === 2);
    // ... and took no time on the clock: the one after waits its 60 s, to the next grid instant.
    await waitFor(
      "the cycle's end",
      () => fx.cache.pollsInFlight().length === 0 && clock.pendingDueTimes().includes(130_000),
    );
    assert.equal(clock.monoMs(), 70_000);
    clock.advance(59_999);
    await fx.host.request("list_devices", {}); // answered after anything sent before it
    assert.equal((await fx.stats("d0")).reads, 2);
    clock.advance(1);
    await waitFor("the cycle at 130 s", async () => (await fx.stats("d0")).reads === 3);
  }, { manual: clock, intervalMs: 60_000, timeoutMs: 120_000, restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("StateCache logs refused samples at most DATA_FAULT_LOG_LINES per kind and window, then says how many it held back", async () => {
  await withFixture(D0, async (fx) => {
    const ghosts = Array.from({ length: DATA_FAULT_LOG_LINES + 2 }, (_, i) => dbl(`ghost${i}`, 1));
    await fx.program("d0", { read: { values: [...ghosts, dbl("n", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    const undeclared = () => fx.lines.filter((l) => l.includes("undeclared signal"));
    const mismatched = () => fx.lines.filter((l) => l.includes("stored as FAULT"));
    assert.equal(undeclared().length, DATA_FAULT_LOG_LINES);
    assert.equal(mismatched().length, 1, "another kind has its own bound");
    // The same window (the monotonic clock stands still): nothing more.
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(undeclared().length, DATA_FAULT_LOG_LINES);
    // The next window: the first line says what was held back.
    fx.clock.mono = 10_000 + DATA_FAULT_LOG_WINDOW_MS;
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(undeclared().length, 2 * DATA_FAULT_LOG_LINES);
    assert.match(
      undeclared()[DATA_FAULT_LOG_LINES]!,
      new RegExp(`\\(${2 + DATA_FAULT_LOG_LINES + 2} similar lines suppressed before this one\\)$`),
    );
    assert.equal(fx.cache.dataFaults("p0").undeclared_signal, 3 * ghosts.length);
  }, { mono: 10_000 });
});

Deno.test("StateCache answers for unknown providers and devices, and for a device never polled", async () => {
  await withFixture(D0, async (fx) => {
    assert.equal(fx.cache.device("nope", "d0"), undefined);
    assert.equal(fx.cache.device("p0", "nope"), undefined);
    assert.equal(fx.cache.signal("nope", "d0", "x"), undefined);
    assert.equal(fx.cache.signal("p0", "d0", "x"), undefined);
    assert.equal(fx.cache.reportedHealth("nope"), undefined);
    // Never polled: no signals, and unavailable (not the OK of an empty list).
    assert.equal(fx.cache.deviceQuality(fx.cache.device("p0", "d0")!), "UNAVAILABLE");
    // An answer without values: available, nothing stored, nothing counted.
    await fx.cache.pollDevice("p0", "d0");
    assert.equal(fx.cache.device("p0", "d0")!.available, true);
    assert.equal(fx.cache.device("p0", "d0")!.signals.size, 0);
    assert.equal(fx.cache.deviceQuality(fx.cache.device("p0", "d0")!), "OK");
    assert.deepEqual(fx.cache.dataFaults("p0"), {
      type_mismatch: 0,
      non_finite: 0,
      undeclared_signal: 0,
    });
  });
});

Deno.test("StateCache over providers that never started: devices unknown, no warnings, polls do nothing", async () => {
  const { kernel: { cache, registry } } = rigNotStarted({
    providers: [programmableProvider("p0", "/nonexistent.json")],
  });
  assert.deepEqual(cache.devices(), []);
  assert.deepEqual(cache.providerDevices("p0"), []);
  assert.deepEqual(cache.discoveryWarnings("p0"), []);
  assert.equal(await cache.fetchReportedHealth(registry.host("p0")!), null);
  await cache.pollDevice("p0", "d0");
});

Deno.test("StateCache keeps devices in provider order, whichever provider finishes discovery first", async () => {
  const files: string[] = [];
  for (const inv of [{ ...D0, describeDelayMs: 300 }, { devices: { e0: D0.devices.d0 } }]) {
    const f = await Deno.makeTempFile({ suffix: ".json" });
    await Deno.writeTextFile(f, JSON.stringify(inv));
    files.push(f);
  }
  await using r = rigNotStarted({
    providers: files.map((f, i) => programmableProvider(`p${i}`, f)),
    pollingIntervalMs: 60_000,
  });
  const { registry, cache } = r.kernel;
  const order: string[] = [];
  for (const h of registry.hosts) h.onInventory(() => order.push(h.id));
  try {
    await r.start();
    assert.deepEqual(order, ["p1", "p0"], "p0's discovery is the slower one");
    assert.deepEqual(cache.devices().map((d) => `${d.providerId}/${d.deviceId}`), [
      "p0/d0",
      "p1/e0",
    ]);
  } finally {
    for (const f of files) await Deno.remove(f);
  }
});

Deno.test("StateCache.fetchReportedHealth resolves null when GetHealth goes unanswered", async () => {
  const clock = new ManualClock();
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { health: { hang: true } });
    let settled = false;
    const fetched = fx.cache.fetchReportedHealth(fx.host).finally(() => (settled = true));
    await waitFor("GetHealth at the provider", async () => (await fx.stats("d0")).health === 1);
    await clock.advanceAsync(199);
    assert.equal(settled, false, "within timeout_ms");
    await clock.advanceAsync(1);
    assert.equal(await fetched, null);
    assert.equal(fx.host.session!.supportsGetHealth, null, "still unknown");
  }, { timeoutMs: 200, manual: clock });
});

Deno.test("StateCache stopped: a provider coming back is not polled", async () => {
  const clock = new ManualClock();
  await withFixture(D0, async (fx) => {
    await fx.cache.start();
    await fx.cache.stop();
    const pid = fx.kill();
    await runDueUntil(clock, "restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    await clock.advanceAsync(1000);
    await fx.host.request("list_devices", {}); // answered after anything sent before it
    assert.equal((await fx.stats("d0")).reads, 0);
  }, { intervalMs: 100, restart: { backoffMs: [0, 0, 0] }, manual: clock });
});

Deno.test("StateCache: the poll after a provider's return replaces the pending cycle, it adds no second cadence", async () => {
  // Every cycle takes 0 ms on the clock, so cycles start 500 ms apart on the grid from 10 000.
  const clock = new ManualClock(10_000).background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.cache.start();
    const pid = fx.kill();
    await runDueUntil(clock, "restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    await runDueUntil(clock, "the wake-up poll", async () => (await fx.stats("d0")).reads === 1);
    // The wake-up replaced the cycle that was pending: one loop timer, at the next grid instant
    // (the supervisor arms none for success_reset_ms: a liveness answer ends the streak).
    await waitFor(
      "the wake-up cycle's end",
      () => fx.cache.pollsInFlight().length === 0 && clock.pendingDueTimes().includes(10_500),
    );
    assert.deepEqual(clock.pendingDueTimes(), [10_500]);
    for (let k = 1; k <= 4; k++) await cycle(clock, 500, fx.cache);
    assert.equal((await fx.stats("d0")).reads, 5, "the wake-up poll, then one every 500 ms");
  }, { intervalMs: 500, restart: { backoffMs: [0, 0, 0] }, manual: clock });
});

Deno.test("StateCache.setIntervalMs: a waiting cycle is rescheduled to the shorter interval at once", async () => {
  const clock = new ManualClock(10_000).background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.cache.start(); // the priming poll
    const primed = (await fx.stats("d0")).reads;
    assert.equal(fx.cache.intervalMs, 60_000);
    assert.deepEqual(clock.pendingDueTimes(), [70_000]);
    fx.cache.setIntervalMs(100);
    assert.equal(fx.cache.intervalMs, 100);
    // At 60 s nothing would be polled again before 70 000; at 100 ms the next grid instant is due.
    assert.deepEqual(clock.pendingDueTimes(), [10_100]);
    for (let k = 1; k <= 3; k++) await cycle(clock, 100, fx.cache);
    assert.equal((await fx.stats("d0")).reads, primed + 3);
  }, { intervalMs: 60_000, manual: clock });
});

Deno.test("StateCache sends the ReadSignals of a provider's due devices together: a device waits for no other's answer to be asked", async () => {
  // One write per pass wakes the provider once for all its devices (issue 39). Before, d1 was
  // asked only once d0 had answered, and after a d0 that timed out not at all that pass.
  const clock = new ManualClock().background(ADPP_DEADLINE_TIMER);
  const inventory = {
    devices: {
      d0: { signals: [{ id: "x", type: T.DOUBLE }] },
      d1: { signals: [{ id: "y", type: T.DOUBLE }] },
    },
  };
  await withFixture(inventory, async (fx) => {
    await fx.program("d1", { read: { values: [dbl("y", 2)] } });
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.start();
    assert.equal(fx.cache.device("p0", "d1")?.available, true);
    // d0 stops answering (this provider serves one request at a time: d1's waits behind it).
    await fx.program("d0", { read: { hang: true } });
    assert.ok(clock.fireNext(), "a pass is due");
    await waitFor("both in flight at once", () => fx.host.session?.inFlight === 2);
    // Neither answered within timeout_ms: both devices down, one liveness miss for the pass.
    await clock.advanceAsync(200);
    await waitFor("d0 and d1 marked down", () =>
      fx.cache.device("p0", "d0")?.available === false &&
      fx.cache.device("p0", "d1")?.available === false);
    assert.equal(fx.host.available, true, "one pass without answers is one liveness miss");
    // The pass's GetHealth (due every 5 s) waits behind the hung read too: let it expire.
    await clock.advanceAsync(200);
  }, { timeoutMs: 200, manual: clock });
});

Deno.test("StateCache: a provider a reload removes is no longer polled nor kept; one added again under its id starts from nothing but its signals not OK", async () => {
  const clock = new ManualClock();
  // A device listed twice: one discovery warning.
  await withFixture({ ...D0, list: ["d0", "d0"] }, async (fx) => {
    const old = fx.host;
    // Something of every kind the cache keeps per provider: samples, a data fault, poll metrics,
    // its own health report.
    await fx.program("d0", {
      read: { values: [{ id: "x", type: T.INT64, int64: "2", quality: Q.OK }] },
    });
    await fx.cache.pollDevice("p0", "d0");
    await fx.cache.fetchReportedHealth(old);
    assert.equal(fx.cache.dataFaults("p0").type_mismatch, 1);
    assert.ok(fx.cache.pollMetrics("p0")!.duration.count > 0);
    assert.notEqual(fx.cache.reportedHealth("p0"), undefined);
    assert.equal(fx.cache.providerDevices("p0").length, 1);
    assert.equal(fx.cache.discoveryWarnings("p0").length, 1);

    // Every request the removed host is asked for from now on.
    const asked: string[] = [];
    const request = old.request.bind(old);
    const send = old.send.bind(old);
    old.request = ((kind, ...rest) => {
      asked.push(kind);
      return request(kind, ...rest);
    }) as typeof old.request;
    old.send = ((kind, ...rest) => {
      asked.push(kind);
      send(kind, ...rest);
    }) as typeof old.send;
    const sendRead = old.sendRead.bind(old);
    old.sendRead = ((...args) => {
      asked.push("read_signals");
      sendRead(...args);
    }) as typeof old.sendRead;
    assert.equal(fx.registry.remove("p0"), old);
    await settleOn(clock, old.stop(1000));
    for (let i = 0; i < 5; i++) clock.advance(100);
    await new Promise((r) => setTimeout(r, 50));
    assert.deepEqual(asked, [], "its poll loop stopped with it");
    assert.deepEqual(fx.cache.providerDevices("p0"), []);
    assert.equal(fx.cache.signal("p0", "d0", "x"), undefined);
    assert.equal(fx.cache.pollMetrics("p0"), undefined);
    assert.equal(fx.cache.reportedHealth("p0"), undefined);
    assert.deepEqual(fx.cache.dataFaults("p0"), {
      type_mismatch: 0,
      non_finite: 0,
      undeclared_signal: 0,
    });
    assert.deepEqual(fx.cache.discoveryWarnings("p0"), []);

    // Added again (a reload): a new host under the same id, polled by a loop of its own.
    await fx.setInventory({
      devices: { d0: { ...D0.devices.d0, values: [dbl("x", 7.5)] } },
    });
    const again = fx.registry.add(old.config);
    await settleOn(clock, again.start());
    assert.deepEqual(fx.cache.providerDevices("p0").map((d) => d.deviceId), ["d0"]);
    assert.equal(fx.cache.reportedHealth("p0"), undefined);
    assert.deepEqual(asked, [], "the old host is never asked again");
    // Its signals not OK carry on (as stream clients were told them): its first answer is told
    // as the quality change it is.
    assert.deepEqual(
      { ...fx.cache.signal("p0", "d0", "x"), timestampMs: 0, receivedMono: 0 },
      { value: null, quality: "FAULT", timestampMs: 0, receivedMono: 0 },
    );
    await waitFor("a poll of the new host", () => {
      clock.advance(100);
      return fx.cache.signal("p0", "d0", "x")?.value != null;
    });
    assert.deepEqual(fx.cache.signal("p0", "d0", "x")?.value, { type: "double", double: 7.5 });
    await settleOn(clock, again.stop(1000));
  }, { poll: true, intervalMs: 100, manual: clock });
});

Deno.test("StateCache.longerStaleBounds names each device a staleness would find stale later, with its longest growth", async () => {
  const inventory = {
    devices: {
      d0: { signals: [{ id: "x", type: T.DOUBLE }] }, // no bound of its own: the device's
      d1: { signals: [{ id: "y", type: T.DOUBLE }, { id: "z", type: T.DOUBLE, staleMs: 400 }] },
    },
  };
  await withFixture(inventory, (fx) => {
    const cache = fx.cache;
    // 100 ms, 2 devices, derived: liveness stale after max(8 x 200, 5000) = 5000; z after 400.
    assert.equal(cache.staleAfterMs("p0", "d1", "z"), 400);
    assert.deepEqual(cache.longerStaleBounds(cache.staleness), [], "the same: nothing later");
    assert.deepEqual(cache.longerStaleBounds({ warnAfterMs: 0, staleAfterMs: 300 }), []);
    // A configured 2000 raises z's floor (400 -> 2000) and shortens the liveness bounds.
    assert.deepEqual(cache.longerStaleBounds({ warnAfterMs: 0, staleAfterMs: 2000 }), [
      '"p0/d1" signal "z": stale after 400 -> 2000 ms',
    ]);
    // 9000: z grows by 8600, more than the device's 4000.
    assert.deepEqual(cache.longerStaleBounds({ warnAfterMs: 0, staleAfterMs: 9000 }), [
      '"p0/d0": stale after 5000 -> 9000 ms',
      '"p0/d1" signal "z": stale after 400 -> 9000 ms',
    ]);
    // Asking applies nothing.
    assert.equal(cache.staleAfterMs("p0", "d1", "z"), 400);
    assert.equal(cache.livenessBounds("p0", "d0")?.staleAfterMs, 5000);
    return Promise.resolve();
  }, { intervalMs: 100 });
});

Deno.test("StateCache.slowerPolls names each device a shorter interval would poll less often, with its stale bound grown", async () => {
  // 1 Hz: polled every most whole intervals within 1000 ms; staleness derived from the cycle.
  const inventory = { devices: { d0: { signals: [{ id: "x", type: T.DOUBLE, hint: 1 }] } } };
  await withFixture(inventory, (fx) => {
    const cache = fx.cache;
    // 501 ms: polled every 501 ms; stale after max(8 x 501, 5000) = 5000.
    assert.equal(cache.pollPeriodMs("p0", "d0"), 501);
    assert.equal(cache.livenessBounds("p0", "d0")?.staleAfterMs, 5000);
    assert.deepEqual(
      cache.slowerPolls(501, cache.staleness),
      [],
      "the same interval: nothing slower",
    );
    // 500 ms: two intervals fit in 1000 ms: polled every 1000 ms, stale after 8 x 1000.
    assert.deepEqual(cache.slowerPolls(500, cache.staleness), [
      '"p0/d0" every 501 -> 1000 ms, stale after 5000 -> 8000 ms',
    ]);
    // Asking applies nothing.
    assert.equal(cache.pollPeriodMs("p0", "d0"), 501);
    assert.equal(cache.livenessBounds("p0", "d0")?.staleAfterMs, 5000);
    return Promise.resolve();
  }, { intervalMs: 501 });
});

Deno.test("StateCache.longerStaleBounds quotes a provider's device and signal ids, cut to QUOTED_DEVICE_ID_CHARS and QUOTED_SIGNAL_ID_CHARS", async () => {
  const forged = 'd"0 ERROR forged'; // (a line break in an id is refused at discovery)
  const long = "L".repeat(10_000);
  const inventory = {
    devices: {
      [forged]: { signals: [{ id: "x", type: T.DOUBLE }] },
      [long]: { signals: [{ id: long, type: T.DOUBLE, staleMs: 400 }] },
    },
  };
  await withFixture(inventory, (fx) => {
    const later = fx.cache.longerStaleBounds({ warnAfterMs: 0, staleAfterMs: 9000 });
    const cut = (n: number) => `${"L".repeat(n)}\u2026`;
    assert.deepEqual(later, [
      '"p0/d\\"0 ERROR forged": stale after 5000 -> 9000 ms',
      `"p0/${cut(QUOTED_DEVICE_ID_CHARS)}" signal "${
        cut(QUOTED_SIGNAL_ID_CHARS)
      }": stale after 400 -> 9000 ms`,
    ]);
    return Promise.resolve();
  }, { intervalMs: 100 });
});

Deno.test("StateCache flags a provider timestamp more than TIMESTAMP_SKEW_LIMIT_MS off its clock, ahead or behind, and stores it as given", async () => {
  await withFixture(D0, async (fx) => {
    const wall = 1_700_000_000_000;
    fx.clock.wallMs = wall;
    const readAt = async (ts: number, x: number) => {
      await fx.program("d0", { read: { values: [dbl("x", x, { ts })] } });
      await fx.cache.pollDevice("p0", "d0");
    };
    const skewLines = () => fx.lines.filter((l) => l.includes("provider timestamp"));
    assert.deepEqual(fx.cache.timestampSkew("p0"), {
      samples_total: 0,
      last_skew_ms: null,
      last_at_epoch_ms: null,
    });
    // At the limit, either way: not flagged.
    await readAt(wall + TIMESTAMP_SKEW_LIMIT_MS, 1);
    await readAt(wall - TIMESTAMP_SKEW_LIMIT_MS, 2);
    assert.equal(fx.cache.timestampSkew("p0").samples_total, 0);
    assert.deepEqual(skewLines(), []);
    await readAt(wall + 60_000, 3);
    assert.deepEqual(fx.cache.timestampSkew("p0"), {
      samples_total: 1,
      last_skew_ms: 60_000,
      last_at_epoch_ms: wall,
    });
    assert.equal(fx.cache.signal("p0", "d0", "x")?.timestampMs, wall + 60_000, "as given");
    fx.clock.wallMs = wall + 5;
    await readAt(wall - 45_000, 4);
    assert.deepEqual(fx.cache.timestampSkew("p0"), {
      samples_total: 2,
      last_skew_ms: -45_005,
      last_at_epoch_ms: wall + 5,
    });
    assert.equal(skewLines().length, 2);
    assert.match(
      skewLines()[0]!,
      /^WARN .*"p0\/d0" signal "x": provider timestamp 60000 ms ahead of the runtime's clock; .* \(1 so far\)$/,
    );
    assert.match(
      skewLines()[1]!,
      /provider timestamp 45005 ms behind the runtime's clock; .* \(2 so far\)$/,
    );
    // A copy: changing it changes nothing in the cache.
    const copy = fx.cache.timestampSkew("p0");
    copy.samples_total = 99;
    assert.equal(fx.cache.timestampSkew("p0").samples_total, 2);
  });
});

Deno.test("StateCache.setStaleness rebounds every cached sample at once: staleAfterMs, qualityNow and boundsVersion follow", async () => {
  await withFixture(D0, async (fx) => {
    fx.clock.mono = 10_000;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await fx.cache.pollDevice("p0", "d0");
    const cache = fx.cache;
    const s = cache.signal("p0", "d0", "x")!;
    assert.deepEqual(cache.staleness, { warnAfterMs: 0, staleAfterMs: 0 });
    const derived = cache.staleAfterMs("p0", "d0", "x");
    assert.equal(derived, 5000, "max(8 x one device's cycle, 5000)");
    const version = cache.boundsVersion;
    cache.setStaleness({ warnAfterMs: 500, staleAfterMs: 1000 });
    assert.deepEqual(cache.staleness, { warnAfterMs: 500, staleAfterMs: 1000 });
    assert.equal(cache.staleAfterMs("p0", "d0", "x"), 1000);
    assert.deepEqual(cache.livenessBounds("p0", "d0"), { warnAfterMs: 500, staleAfterMs: 1000 });
    assert.ok(cache.boundsVersion > version, "readers that keep a bound re-read it");
    // Age exactly at the bound: still OK; past it: STALE.
    fx.clock.mono = 11_000;
    assert.equal(cache.qualityNow("p0", "d0", "x", s), "OK");
    fx.clock.mono = 11_001;
    assert.equal(cache.qualityNow("p0", "d0", "x", s), "STALE");
    cache.setStaleness({ warnAfterMs: 0, staleAfterMs: 0 });
    assert.equal(cache.qualityNow("p0", "d0", "x", s), "OK", "back to the derived 5000 ms");
  }, { intervalMs: 100 });
});

Deno.test("StateCache keeps a signal's record of a tightened stale bound across a rediscovery, and notes one the rediscovery makes", async () => {
  await withFixture(D0, async (fx) => {
    const rediscover = async (staleMs?: number) => {
      await fx.setInventory({
        devices: {
          d0: {
            signals: [
              { id: "x", type: T.DOUBLE, ...(staleMs === undefined ? {} : { staleMs }) },
              { id: "n", type: T.INT64 },
              { id: "added", type: T.DOUBLE },
            ],
          },
        },
      });
      const pid = fx.kill();
      await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    };
    const cache = fx.cache;
    const staleSince = () => cache.staleSinceMono("p0", "d0", "x", 10_000);
    fx.clock.mono = 10_000;
    await fx.program("d0", { read: { values: [dbl("x", 1)] } });
    await cache.pollDevice("p0", "d0");
    assert.equal(cache.staleAfterMs("p0", "d0", "x"), 5000);
    fx.clock.mono = 13_000;
    cache.setStaleness({ warnAfterMs: 500, staleAfterMs: 1000 });
    assert.equal(staleSince(), 13_000, "usable until the reload tightened its bound");
    await rediscover();
    assert.equal(cache.signal("p0", "d0", "x")?.receivedMono, 10_000, "the sample is kept");
    assert.equal(staleSince(), 13_000, "a rediscovery keeps when the bound was tightened");
    // The bound loosened again, then tightened by the declaration of the provider's next process.
    cache.setStaleness({ warnAfterMs: 0, staleAfterMs: 0 });
    assert.equal(staleSince(), 15_000);
    fx.clock.mono = 14_000;
    await rediscover(2000);
    assert.equal(cache.staleAfterMs("p0", "d0", "x"), 2000);
    assert.equal(staleSince(), 14_000, "usable until the rediscovery tightened its bound");
    // The monotonic clock stands still from the start (mono below), never set behind a reading
    // the registry took: its spawn queue paces a restart's spawn after the last spawn's end on
    // that clock, and a clock set back behind it (real time at the start, e.g. 60 s into a shard
    // of the suite, then 10 s) held the restart for the difference.
  }, { intervalMs: 100, restart: { backoffMs: [0, 0, 0] }, mono: 10_000 });
});

Deno.test("StateCache.setIntervalMs: a longer interval keeps the waiting cycle's time; during a cycle in flight it moves the next cycle's timer, after stop() it arms none", async () => {
  const clock = new ManualClock(10_000).background(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    await fx.cache.start(); // the priming poll
    assert.deepEqual(clock.pendingDueTimes(), [10_100]);
    fx.cache.setIntervalMs(1000);
    assert.deepEqual(clock.pendingDueTimes(), [10_100], "the waiting cycle keeps its time");
    // A cycle in flight (its read answered 300 ms later) when the interval shortens: the next
    // cycle's timer, armed as the cycle started, moves onto the new grid; nothing else is armed.
    await fx.program("d0", { read: { values: [dbl("x", 1)], delayMs: 300 } });
    const reads = (await fx.stats("d0")).reads;
    assert.ok(clock.fireNext(), "the cycle at 10 100");
    assert.deepEqual(clock.pendingDueTimes(), [11_000], "the next cycle's, on the 1000 ms grid");
    await waitFor("the read in flight", async () => (await fx.stats("d0")).reads === reads + 1);
    fx.cache.setIntervalMs(50);
    assert.deepEqual(clock.pendingDueTimes(), [10_150], "moved to the next 50 ms instant");
    await waitFor("the cycle's end", () => fx.cache.pollsInFlight().length === 0, 10_000, 0);
    assert.deepEqual(clock.pendingDueTimes(), [10_150], "one timer, the next 50 ms instant");
    await fx.cache.stop();
    fx.cache.setIntervalMs(20); // shorter: a running loop would reschedule
    assert.deepEqual(clock.pendingDueTimes(), [], "after stop(): nothing armed");
  }, { intervalMs: 100, manual: clock });
});

Deno.test("StateCache.setIntervalMs: a longer interval cuts a slow device's skip count to its new period: its next read comes no later", async () => {
  // x hints 1 Hz: at 100 ms the device is read every 10th cycle; at 500 ms every 2nd.
  const clock = new ManualClock(10_000).background(ADPP_DEADLINE_TIMER);
  const inventory = {
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE, hint: 1 }], values: [dbl("x", 1)] } },
  };
  await withFixture(inventory, async (fx) => {
    const next = async () => {
      const due = clock.pendingDueTimes()[0]!;
      assert.ok(clock.fireNext());
      await waitFor(
        "the cycle's end",
        () => fx.cache.pollsInFlight().length === 0 && (clock.pendingDueTimes()[0] ?? 0) > due,
        10_000,
        0,
      );
    };
    const reads = async () => (await fx.stats("d0")).reads;
    await fx.cache.start(); // the priming read; 9 cycles to skip at 100 ms
    assert.equal(fx.cache.pollPeriodMs("p0", "d0"), 1000);
    await next();
    await next();
    assert.equal(await reads(), 1, "7 cycles still to skip");
    fx.cache.setIntervalMs(500);
    assert.equal(fx.cache.pollPeriodMs("p0", "d0"), 1000);
    await next(); // the waiting 100 ms cycle: skipped (1 left at the new period)
    assert.equal(await reads(), 1);
    await next();
    assert.equal(await reads(), 2, "read within its 1000 ms period, not 7 cycles of 500 ms later");
  }, { intervalMs: 100, manual: clock });
});

Deno.test("a host a reload removes tells stream clients its devices are gone, as a removal: device_availability false, reason removed", async () => {
  const clock = new ManualClock();
  const d = D0.devices.d0;
  // d2 declares no polled signal (a device of functions only): never polled, never available.
  const unpolled = { signals: [{ id: "x", type: T.DOUBLE, hint: 0 }] };
  await withFixture({ devices: { d0: d, d1: d, d2: unpolled } }, async (fx) => {
    const old = fx.host;
    const failing = { read: { error: { code: StatusCode.UNAVAILABLE } } };
    await fx.cache.pollDevice("p0", "d0"); // d0 answered: available
    await fx.cache.pollDevice("p0", "d1");
    await fx.program("d1", failing);
    await fx.cache.pollDevice("p0", "d1"); // d1 answered, then failed: said lost already
    assert.deepEqual(
      fx.events.filter((e) => e.kind === "device_availability").map((e) =>
        e.kind === "device_availability" && `${e.device_id}:${e.available}`
      ),
      ["d0:true", "d1:true", "d1:false"],
    );
    fx.events.length = 0;
    assert.equal(fx.registry.remove("p0"), old);
    const gone = fx.events.filter((e) => e.kind === "device_availability");
    assert.deepEqual(
      gone.map((e) => ({ ...e, timestamp_ms: 0 })),
      ["d0", "d1"].map((device_id) => ({
        kind: "device_availability",
        provider_id: "p0",
        device_id,
        available: false,
        reason: "removed",
        timestamp_ms: 0,
      })),
      "the device available and the one told lost are each said gone, once; the one never " +
        "said anything is not",
    );
    await settleOn(clock, old.stop(1000));
  }, { poll: true, intervalMs: 100, manual: clock });
});

Deno.test("StateCache.pollsEnded: set as stop() begins and by detachProviders(); a start() clears it unless detached", async () => {
  await withFixture(D0, async (fx) => {
    assert.equal(fx.cache.pollsEnded, false, "before start(): nothing ended");
    await fx.cache.start();
    assert.equal(fx.cache.pollsEnded, false, "polling");
    const stopping = fx.cache.stop();
    // Said before the polls in flight have ended: the interlock gate reads it from then on.
    assert.equal(fx.cache.pollsEnded, true, "as stop() begins");
    await stopping;
    assert.equal(fx.cache.pollsEnded, true, "stopped");
    await fx.cache.start();
    assert.equal(fx.cache.pollsEnded, false, "polling again");
    fx.cache.detachProviders();
    assert.deepEqual([fx.cache.pollsEnded, fx.cache.providersDetached], [true, true], "detached");
    await fx.cache.stop();
    await fx.cache.start();
    assert.equal(fx.cache.pollsEnded, true, "a start() refreshes nothing of a detached cache");
    await fx.cache.stop();
  });
});

/** A device with one polled signal `x`, answered 1 with `quality`. */
function oneSignal(quality: number) {
  return { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1, { quality })] };
}

/**
 * `host`'s process killed (in-process), its supervisor's next one up listing `devices` (written to
 * the inventory file first): a rediscovery.
 */
async function restartListing(
  fx: ProgrammableFixture,
  host: ProviderHost,
  devices: Record<string, ReturnType<typeof oneSignal>>,
): Promise<void> {
  await fx.setInventory({ devices });
  const pid = host.session!.pid;
  fx.fakes!.process(pid)!.kill("SIGKILL");
  await waitFor(
    `back listing ${Object.keys(devices).join(", ")}`,
    () =>
      host.available && host.session!.pid !== pid &&
      host.devices.length === Object.keys(devices).length,
  );
}

Deno.test("a device of a provider a reload restarted, left out by a rediscovery before its first answer, keeps its told-OK mark: its return's first FAULT is told as the quality_change from OK", async () => {
  await withFixture({ devices: { d0: oneSignal(Q.OK) } }, async (fx) => {
    await fx.cache.pollDevice("p0", "d0"); // told OK
    const old = fx.host;
    assert.equal(fx.registry.remove("p0"), old); // a reload restarting p0 (its entry changed)
    await old.stop(1000);
    const again = fx.registry.add(old.config);
    try {
      await again.start(); // d0 listed, holding its told-OK mark; not polled yet
      await restartListing(fx, again, { d1: oneSignal(Q.OK) }); // d0 left out
      await restartListing(fx, again, { d0: oneSignal(Q.FAULT) }); // d0 back, answering FAULT
      fx.events.length = 0;
      await fx.cache.pollDevice("p0", "d0");
      assert.deepEqual(
        fx.events.flatMap((e) =>
          e.kind === "quality_change" ? [`${e.device_id}:${e.old_quality}>${e.new_quality}`] : []
        ),
        ["d0:OK>FAULT"],
        "told OK before the reload, FAULT now",
      );
    } finally {
      await again.stop(1000);
    }
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("a device told its removal, left out and listed again by its provider's successor without answering, is not told removed again at the next removal", async () => {
  await withFixture({ devices: { d0: oneSignal(Q.FAULT) } }, async (fx) => {
    await fx.cache.pollDevice("p0", "d0"); // told available, FAULT
    const old = fx.host;
    assert.equal(fx.registry.remove("p0"), old); // told removed, its FAULT kept
    await old.stop(1000);
    const again = fx.registry.add(old.config);
    try {
      await again.start(); // d0 listed, carrying its FAULT; never polled
      await restartListing(fx, again, { d1: oneSignal(Q.OK) }); // d0 left out
      await restartListing(fx, again, { d0: oneSignal(Q.OK) }); // d0 listed again, not polled
      assert.equal(fx.registry.remove("p0"), again);
      assert.deepEqual(
        flips(fx).map(([device, available, , reason]) => `${device}:${available}:${reason}`),
        ["d0:true:undefined", "d0:false:removed"],
        "told once, removed once: nothing since to take back",
      );
    } finally {
      await again.stop(1000);
    }
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("a device a restart left out, told lost at the crash, is told its removal when a reload removes its provider, dated no earlier than its loss (NTP)", async () => {
  const t = 1_700_000_000_000;
  // d2's reads answer none of its signals: told available, holding no sample.
  const d2 = { signals: [{ id: "x", type: T.DOUBLE }], values: [] };
  await withFixture({ devices: { d0: oneSignal(Q.OK), d1: oneSignal(Q.OK), d2 } }, async (fx) => {
    fx.clock.wallMs = t;
    await fx.cache.pollDevice("p0", "d0"); // told available
    await fx.cache.pollDevice("p0", "d2");
    assert.equal(fx.cache.signal("p0", "d2", "x"), undefined);
    // Told lost at the crash, d0 and d2 left out.
    await restartListing(fx, fx.host, { d1: oneSignal(Q.OK) });
    fx.clock.wallMs = t - 10_000; // NTP steps the wall clock back 10 s
    const old = fx.host;
    assert.equal(fx.registry.remove("p0"), old);
    await old.stop(1000);
    assert.deepEqual(flips(fx), [
      ["d0", true, t, undefined],
      ["d2", true, t, undefined],
      ["d0", false, t, undefined],
      ["d2", false, t, undefined],
      ["d0", false, t, "removed"],
      ["d2", false, t, "removed"],
    ], "d1, never told anything, is not told its removal");
  }, { restart: { backoffMs: [0, 0, 0] } });
});

/** The quality changes and state updates in `fx.events`, as `device:signal:old>new` / `=value`. */
function signalNews(fx: ProgrammableFixture): string[] {
  return fx.events.flatMap((e) =>
    e.kind === "quality_change"
      ? [`${e.device_id}:${e.signal_id}:${e.old_quality}>${e.new_quality}`]
      : e.kind === "state_update"
      ? [`${e.device_id}:${e.signal_id}:=${JSON.stringify(e.value)}`]
      : []
  );
}

/**
 * p0 taken out and configured again (a reload restarting it: its entry changed), its successor
 * listing `devices`; `body` runs with what programs the successor's device (fx.program programs
 * the first host's), which is stopped after.
 */
async function withSuccessor(
  fx: ProgrammableFixture,
  devices: Record<string, { signals: { id: string; type: number }[]; values: Sample[] }>,
  body: (program: (device: string, p: Program) => void) => Promise<void>,
): Promise<void> {
  const old = fx.host;
  assert.equal(fx.registry.remove("p0"), old);
  await old.stop(1000);
  await fx.setInventory({ devices });
  const again = fx.registry.add(old.config);
  try {
    await again.start();
    await body((device, p) => {
      const handler = fx.fakes!.process(again.session!.pid)!.handler;
      assert.ok(handler instanceof FakeProvider);
      programFake(handler, device, p);
    });
  } finally {
    await again.stop(1000);
  }
}

/** A device with one polled signal `x` whose reads are answered without it. */
const SILENT = { signals: [{ id: "x", type: T.DOUBLE }], values: [] as Sample[] };

Deno.test("a told-OK mark: a successor's answer that leaves its signal out serves no value; told STALE past the bound, UNAVAILABLE at a failed read once answered", async () => {
  await withFixture({ devices: { d0: oneSignal(Q.OK), d1: oneSignal(Q.OK) } }, async (fx) => {
    await fx.cache.pollDevice("p0", "d0"); // told OK
    await fx.cache.pollDevice("p0", "d1");
    await withSuccessor(fx, { d0: SILENT, d1: SILENT }, async (program) => {
      fx.events.length = 0;
      await fx.cache.pollDevice("p0", "d0");
      await fx.cache.pollDevice("p0", "d1");
      assert.deepEqual(signalNews(fx), [], "answered, nothing of x: nothing to tell");
      assert.equal(fx.cache.signal("p0", "d0", "x"), undefined, "no value of the killed process");
      // d1's next read fails: told UNAVAILABLE (no value), as a sample told OK would be.
      program("d1", { read: { error: { code: StatusCode.UNAVAILABLE } } });
      await fx.cache.pollDevice("p0", "d1");
      assert.deepEqual(signalNews(fx), ["d1:x:OK>UNAVAILABLE"]);
      assert.deepEqual(
        { ...fx.cache.signal("p0", "d1", "x"), timestampMs: 0, receivedMono: 0 },
        { value: null, quality: "UNAVAILABLE", timestampMs: 0, receivedMono: 0 },
      );
      // d0's mark past its bound (the monotonic clock an hour on): STALE, still no value.
      fx.events.length = 0;
      fx.clock.mono = performance.now() + 3_600_000;
      await fx.cache.pollDevice("p0", "d0");
      assert.deepEqual(signalNews(fx), ["d0:x:OK>STALE"]);
      assert.equal(fx.cache.signal("p0", "d0", "x")?.value, null);
      fx.clock.mono = null;
    });
  });
});

Deno.test("a device told its removal is told nothing of its carried signals until its successor answers it: a failed read before then changes nothing", async () => {
  await withFixture({ devices: { d0: oneSignal(Q.FAULT), d1: oneSignal(Q.OK) } }, async (fx) => {
    await fx.cache.pollDevice("p0", "d0"); // told FAULT
    await fx.cache.pollDevice("p0", "d1"); // told OK
    await withSuccessor(fx, { d0: oneSignal(Q.OK), d1: oneSignal(Q.OK) }, async (program) => {
      const failing = { read: { error: { code: StatusCode.UNAVAILABLE } } };
      program("d0", failing);
      program("d1", failing);
      fx.events.length = 0;
      await fx.cache.pollDevice("p0", "d0");
      await fx.cache.pollDevice("p0", "d1");
      assert.deepEqual(signalNews(fx), [], "told removed: nothing since");
      assert.deepEqual(flips(fx), []);
      assert.equal(fx.cache.signal("p0", "d0", "x")?.quality, "FAULT", "as last told");
      assert.equal(fx.cache.signal("p0", "d1", "x"), undefined);
      // Answering: back, each told the change from what it was told before its removal.
      program("d0", { read: { values: [dbl("x", 1)] } });
      program("d1", { read: { values: [dbl("x", 1, { quality: Q.FAULT })] } });
      await fx.cache.pollDevice("p0", "d0");
      await fx.cache.pollDevice("p0", "d1");
      assert.deepEqual(signalNews(fx), [
        'd0:x:={"type":"double","double":1}',
        "d0:x:FAULT>OK",
        'd1:x:={"type":"double","double":1}',
        "d1:x:OK>FAULT",
      ]);
    });
  });
});
