/**
 * A run whose disk tier failed its first open (a read-only folder at start: the files can be read,
 * not written) and is asked, before its retry (within DISK_RETRY_MS), over an earlier run's rows:
 * those rows are an earlier run's (no row of this run is in the files before an open worked: they
 * are kept until then), so they are answered from the disk, every one, beside this ring's polls --
 * not taken for this run's rows the ring holds (restart_behind_failed_open_test.ts is the same
 * after the retry). With a manual clock: the retry never comes.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS, type HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";
import { fold, RefusingFiles } from "./_rig.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };

const cases = [
  // Restarted 10 s behind the files' last row (a board without a real-time clock), 12 polls.
  { behind: 10, polls: 12, neither: 0 },
  // Restarted 1 s after the earlier run's last poll, within its last bucket (at 40 s), 12 polls:
  // that bucket is the disk's (both runs wrote a row of it), and this run's row of it is kept for
  // the disk -- its one poll (41 s) in neither tier, as in any outage (disk_pending says so).
  { behind: -1, polls: 12, neither: 1 },
];

for (const { behind, polls, neither } of cases) {
  for (const stepMs of [0, 10_000]) {
    Deno.test(
      `History.query before the retry of a disk tier whose first open failed, restarted ` +
        `${behind} s behind the earlier run's last poll (${polls} polls; step_ms ${stepMs}): ` +
        `the earlier run's rows answered from the disk, each poll the tiers hold counted once`,
      async () => {
        const files = new RefusingFiles();
        const polled: number[] = []; // the time of each poll - T0, both runs
        let h = handFedHistory(HISTORY, files);
        h.clock.wall = T0;
        await h.history.start();
        for (let s = 0; s < 41; s++) {
          polled.push(h.clock.wall - T0);
          h.poll("p", "a", s);
          h.clock.wall += 1000;
          h.clock.mono += 1000;
        }
        await h.history.stop();
        const lastPoll = h.clock.wall - 1000;
        files.refuse = true;
        h = handFedHistory(HISTORY, files);
        h.clock.wall = lastPoll - behind * 1000;
        h.clock.mono = 5_000_000;
        await h.history.start();
        try {
          assert.equal(h.history.status().disk.state, "stopped", "its first open failed");
          for (let k = 0; k < polls; k++) {
            polled.push(h.clock.wall - T0);
            h.poll("p", "a", 1000 + k);
            h.clock.wall += 1000;
            h.clock.mono += 1000;
          }
          assert.ok(polls * 1000 < DISK_RETRY_MS, "asked before the retry");
          const answer = await h.history.query({
            providerId: "p",
            deviceId: "a",
            signalIds: ["x"],
            sinceMs: T0,
            untilMs: T0 + 99_999,
            stepMs,
          });
          assert.equal(h.history.status().disk.state, "stopped", "not retried yet");
          const points: readonly HistoryPoint[] = answer.signals[0]!.points;
          const shown = points.map((p) => `${(p.t_ms - T0) / 1000}:${p.count}`).join(" ");
          // (This run's first polls kept for the disk, in its first bucket's row: in neither tier.)
          polled.splice(41, neither);
          const total = points.reduce((n, p) => n + p.count, 0);
          assert.equal(
            total,
            polled.length,
            `${total} samples for ${polled.length} polls: ${shown}`,
          );
          const wide = Math.max(stepMs, HISTORY.stepMs);
          assert.deepEqual(
            fold(points.map((p) => [p.t_ms - T0, p.count]), wide, 1000),
            fold(polled.map((t) => [t, 1]), wide, 1000),
            `each bucket's polls once: ${shown}`,
          );
          // The earlier run's last poll (40 s, value 40) among them: its row, read from the disk.
          const at40 = points.find((p) => p.t_ms === T0 + 40_000);
          assert.equal(at40?.min, 40, `the earlier run's last poll answered: ${shown}`);
          const times = points.map((p) => p.t_ms);
          assert.deepEqual(times, [...times].sort((a, b) => a - b), "in time order");
          // This run's closed buckets are kept for the disk, in neither file: said so.
          assert.equal(answer.incomplete, "disk_pending", shown);
        } finally {
          files.refuse = false;
          await h.history.stop();
        }
      },
    );
  }
}
