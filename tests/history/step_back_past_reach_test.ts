/**
 * A wall clock stepped back further than the ring reaches (memory_seconds; an NTP correction, a
 * clock set by hand, an RTC-less board restarted behind its last row): the earlier period's polls
 * of the repeated times after the ring's part begins are gone from the ring, but the disk tier has
 * their rows, written before the step. A question over the repeated times up to now must answer
 * them from there: before, the disk part ended where the ring's began, and those polls were in
 * neither part (incomplete null), though docs/history.md promises both periods.
 */
import assert from "node:assert/strict";
import type { HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

/** Samples counted per second of the range (full rate or folded), as [second, count]. */
function perSecond(points: readonly HistoryPoint[]): [number, number][] {
  const out = new Map<number, number>();
  for (const p of points) {
    const s = Math.floor((p.t_ms - T0) / 1000);
    out.set(s, (out.get(s) ?? 0) + p.count);
  }
  return [...out].sort((a, b) => a[0] - b[0]);
}

/** [second, count] for seconds from..to, `twice` those both periods polled. */
function expected(from: number, to: number, twice: (s: number) => boolean): [number, number][] {
  return Array.from({ length: to - from + 1 }, (_, k) => [from + k, twice(from + k) ? 2 : 1]);
}

for (const after of [5, 20]) {
  for (const stepMs of [0, 1000]) {
    Deno.test(`a wall clock stepped back 50 s (memory_seconds 10), ${after} s after (step_ms ${stepMs}): a question over the repeated times has the earlier period's polls the ring let go, from the disk tier`, async () => {
      const { clock, history, poll } = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
      clock.wall = T0;
      await history.start();
      try {
        const tick = (v: number) => {
          poll("p", "a", v);
          clock.wall += 1000;
          clock.mono += 1000;
        };
        for (let s = 0; s < 100; s++) tick(s);
        clock.wall = T0 + 50_000; // stepped back 50 s
        for (let s = 50; s < 50 + after; s++) tick(1000 + s);
        await history.flushDisk();
        const answer = await history.query({
          providerId: "p",
          deviceId: "a",
          signalIds: ["x"],
          sinceMs: T0 + 40_000,
          untilMs: T0 + 99_999,
          stepMs,
        });
        assert.equal(answer.incomplete, null);
        assert.deepEqual(
          perSecond(answer.signals[0]!.points),
          expected(40, 99, (s) => s >= 50 && s < 50 + after),
          `every poll of the range once (memory_from_ms ${(answer.memory_from_ms! - T0) / 1000})`,
        );
        const times = answer.signals[0]!.points.map((p) => p.t_ms);
        assert.deepEqual(times, [...times].sort((a, b) => a - b), "in time order");
      } finally {
        await history.stop();
      }
    });
  }
}

Deno.test("a restart behind the disk tier's last row: a question over the repeated times up to now has the earlier run's rows after the ring's part begins", async () => {
  const first = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < 100; s++) {
    first.poll("p", "a", s);
    first.clock.wall += 1000;
  }
  await first.history.stop();
  // The next start: 50 s behind the last row (an RTC-less board before NTP).
  const next = handFedHistory({ stepMs: 1000, memorySeconds: 10 }, first.files);
  next.clock.wall = T0 + 50_000;
  await next.history.start();
  try {
    for (let s = 50; s <= 55; s++) {
      next.poll("p", "a", 1000 + s);
      next.clock.wall += 1000;
      next.clock.mono += 1000;
    }
    await next.history.flushDisk();
    const answer = await next.history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0 + 45_000,
      untilMs: T0 + 99_999,
      stepMs: 1000,
    });
    assert.deepEqual(
      perSecond(answer.signals[0]!.points),
      expected(45, 99, (s) => s >= 50 && s <= 55),
      "both runs' polls of the repeated times, each once",
    );
  } finally {
    await next.history.stop();
  }
});
