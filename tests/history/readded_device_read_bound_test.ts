/**
 * A device swept and picked up again in the same run behind the files (the wall clock stepped back
 * while it was away), then stepped back again within its ring's reach or not, while another device
 * went on writing rows for minutes: a question over the first device reads the disk only as far as
 * its own earlier ring's rows reach (History's ringsBeforeMs and priorBucketMs are the device's,
 * not the newest row of any device), not the other device's minutes of rows it would drop -- and
 * its answer counts every poll of it once. With a manual clock; the rows read counted by the files.
 */
import assert from "node:assert/strict";
import type { JournalLine } from "../../src/journal/mod.ts";
import { HISTORY_SWEEP_EVERY_MS, type HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { T0 } from "./_history_helpers.ts";
import { fold } from "./_rig.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };
/** Seconds the device is away while the other goes on: the sweep has let its ring go by then. */
const AWAY = 300;

/** MemoryFiles keeping the bucket start of every row a reader was given (readLinesAt). */
class CountingFiles extends MemoryFiles {
  readonly readTimes: number[] = [];
  override async *readLinesAt(
    path: string,
    options: { readonly maxLineBytes: number; readonly startByte: number },
  ): AsyncGenerator<JournalLine> {
    for await (const line of super.readLinesAt(path, options)) {
      const m = /^\{"t":(\d+),/.exec(line.text);
      if (m) this.readTimes.push(Number(m[1]));
      yield line;
    }
  }
}

for (
  const [stepMs, backAgain] of [[0, true], [10_000, true], [0, false], [10_000, false]] as const
) {
  Deno.test(
    `History.query of a device swept and picked up again behind the files` +
      `${backAgain ? ", then stepped back within its ring's reach," : ""} while another device ` +
      `wrote ${AWAY} s of rows (step_ms ${stepMs}): reads the disk only as far as its earlier ` +
      `ring's rows, every poll counted once`,
    async () => {
      assert.ok(AWAY > HISTORY.memorySeconds + HISTORY_SWEEP_EVERY_MS / 1000, "swept by then");
      const files = new CountingFiles();
      const polled: number[] = []; // the second of each poll of p/a
      const h = handFedHistory(HISTORY, files);
      h.clock.wall = T0;
      h.clock.mono = 1_000_000;
      await h.history.start();
      try {
        const tick = (withA: boolean, v: number) => {
          h.poll("p", "k", v);
          if (withA) {
            polled.push(Math.floor((h.clock.wall - T0) / 1000));
            h.poll("p", "a", v);
          }
          h.clock.wall += 1000;
          h.clock.mono += 1000;
        };
        for (let s = 0; s < 20; s++) tick(true, s); // p/a's rows: 0..18 s
        h.known.delete("p/a"); // dropped: a reload removed it
        for (let s = 0; s < AWAY; s++) tick(false, 100 + s); // p/k's rows up to 318 s
        assert.equal(h.history.knows("p", "a"), false, "the sweep let it go");
        h.clock.wall = T0 + 10_000; // stepped back while it was away: picked up again at 10 s
        for (let k = 0; k < 6; k++) tick(true, 1000 + k);
        if (backAgain) {
          h.clock.wall -= 3000; // stepped back 3 s, within the ring's reach
          for (let k = 0; k < 3; k++) tick(true, 2000 + k);
        }
        await h.history.flushDisk();
        const ask = () =>
          h.history.query({
            providerId: "p",
            deviceId: "a",
            signalIds: ["x"],
            sinceMs: T0,
            untilMs: T0 + 99_999,
            stepMs,
          });
        // (The first question learns each file's first and last row, once: the second reads rows.)
        const first = await ask();
        files.readTimes.length = 0;
        const answer = await ask();
        assert.deepEqual(answer, first, "the same answer");
        const points: readonly HistoryPoint[] = answer.signals[0]!.points;
        const shown = points.map((p) => `${(p.t_ms - T0) / 1000}:${p.count}`).join(" ");
        assert.equal(answer.incomplete, null, shown);
        const total = points.reduce((n, p) => n + p.count, 0);
        assert.equal(total, polled.length, `${total} samples for ${polled.length} polls: ${shown}`);
        const wide = Math.max(stepMs, HISTORY.stepMs) / 1000;
        assert.deepEqual(
          fold(points.map((p) => [Math.floor((p.t_ms - T0) / 1000), p.count]), wide),
          fold(polled.map((s) => [s, 1]), wide),
          `each bucket's polls once: ${shown}`,
        );
        // p/a's earlier ring's last row is at 18 s: the read goes no further than the two rows
        // after it in each file (20 s, and 22 s in order with it, where it stops: DiskTier.read),
        // not into p/k's rows up to 318 s.
        const stop = 20_000 + HISTORY.stepMs;
        const past = files.readTimes.filter((t) => t > T0 + stop);
        assert.equal(
          past.length,
          0,
          `${files.readTimes.length} rows read, ${past.length} past ${stop / 1000} s (up to ` +
            `${(Math.max(...past) - T0) / 1000} s)`,
        );
      } finally {
        await h.history.stop();
      }
    },
  );
}
