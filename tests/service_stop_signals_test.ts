/**
 * StopSignalFilter: what each SIGINT/SIGTERM means to the service. One Ctrl-C reaches the runtime
 * twice under `deno task`; the real-process behaviour is in
 * tests/scenarios/process_signals_test.ts.
 */
import assert from "node:assert/strict";
import {
  STOP_SIGNAL_REPEAT_WINDOW_MS,
  StopSignalFilter,
  type StopSignalMeaning,
} from "../src/app/process.ts";

const W = STOP_SIGNAL_REPEAT_WINDOW_MS;

/** Each case: the signals received, at monotonic times, and what each one means. */
const CASES: ReadonlyArray<
  { name: string; signals: ReadonlyArray<[Deno.Signal, number]>; meanings: StopSignalMeaning[] }
> = [
  { name: "the first stops", signals: [["SIGINT", 1000]], meanings: ["stop"] },
  {
    name: "the same signal at once is a duplicate",
    signals: [["SIGINT", 1000], ["SIGINT", 1000]],
    meanings: ["stop", "duplicate"],
  },
  {
    name: "the same signal 1 ms before the window closes is a duplicate",
    signals: [["SIGINT", 1000], ["SIGINT", 1000 + W - 1]],
    meanings: ["stop", "duplicate"],
  },
  {
    name: "the same signal when the window closes hurries",
    signals: [["SIGINT", 1000], ["SIGINT", 1000 + W]],
    meanings: ["stop", "hurry"],
  },
  {
    name: "the other signal within the window hurries (a deliberate second stop)",
    signals: [["SIGINT", 1000], ["SIGTERM", 1001]],
    meanings: ["stop", "hurry"],
  },
  {
    name: "SIGTERM duplicates SIGTERM too",
    signals: [["SIGTERM", 0], ["SIGTERM", 3], ["SIGTERM", W + 3]],
    meanings: ["stop", "duplicate", "hurry"],
  },
  {
    name: "the window counts from the first, not from a duplicate",
    signals: [["SIGINT", 0], ["SIGINT", W - 10], ["SIGINT", W + 5]],
    meanings: ["stop", "duplicate", "hurry"],
  },
  {
    name: "after a hurry, later signals hurry too",
    signals: [["SIGINT", 0], ["SIGINT", W], ["SIGINT", W + 1]],
    meanings: ["stop", "hurry", "hurry"],
  },
];

for (const c of CASES) {
  Deno.test(`StopSignalFilter: ${c.name}`, () => {
    const filter = new StopSignalFilter();
    const got = c.signals.map(([signal, at]) => filter.classify(signal, at).meaning);
    assert.deepEqual(got, c.meanings);
  });
}

Deno.test("StopSignalFilter reports the time since the first signal", () => {
  const filter = new StopSignalFilter(100);
  assert.deepEqual(filter.classify("SIGINT", 50), { meaning: "stop", sinceFirstMs: 0 });
  assert.deepEqual(filter.classify("SIGINT", 80), { meaning: "duplicate", sinceFirstMs: 30 });
  assert.deepEqual(filter.classify("SIGINT", 150), { meaning: "hurry", sinceFirstMs: 100 });
});
