/**
 * A run whose disk tier failed its first open and could not even list its folder then (its
 * permissions 0o000, or a readDir that fails: the earlier runs' end unknown), asked before the
 * retry (within DISK_RETRY_MS). Once the folder can be listed again (an operator's chmod), the
 * answer takes the earlier run's rows from the disk, every one, beside this ring's polls -- not
 * taken for this run's rows the ring holds and left out (failed_open_earlier_run_test.ts is the
 * same with a folder listed at the failed open). While it still cannot be listed, the answer says
 * the disk was not read (disk_unreadable). Real files in a temp folder; a manual clock: the retry
 * never comes.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS, type HistoryPoint } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { T0 } from "./_history_helpers.ts";
import { LockedFolderFiles } from "./_file_faults.ts";
import { fold } from "./_rig.ts";

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
    for (const listable of [true, false]) {
      Deno.test(
        `History.query before the retry of a disk tier whose first open could not list its ` +
          `folder, restarted ${behind} s behind the earlier run's last poll (${polls} polls; ` +
          `step_ms ${stepMs}), the folder ${listable ? "listed again" : "still not listed"} ` +
          `when asked: ${
            listable
              ? "the earlier run's rows answered from the disk, each poll counted once"
              : "the ring's polls alone, marked disk_unreadable"
          }`,
        async () => {
          const dataDir = await Deno.makeTempDir({ prefix: "history-unlisted-" });
          const files = new LockedFolderFiles(`${dataDir}/history`);
          const polled: number[] = []; // the time of each poll - T0, both runs
          let h = handFedHistory(HISTORY, files, undefined, dataDir);
          try {
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
            files.locked = true;
            const { log, lines } = capturingLogger({ level: "info" });
            h = handFedHistory(HISTORY, files, log, dataDir);
            h.clock.wall = lastPoll - behind * 1000;
            h.clock.mono = 5_000_000;
            await h.history.start();
            assert.equal(h.history.status().disk.state, "stopped", "its first open failed");
            const warns = lines.filter((l) => l.startsWith("WARN"));
            assert.equal(warns.length, 1, `one WARN for the failed open: ${lines.join("\n")}`);
            assert.match(
              warns[0]!,
              /earlier runs/,
              `the WARN says the end is unknown: ${warns[0]}`,
            );
            for (let k = 0; k < polls; k++) {
              polled.push(h.clock.wall - T0);
              h.poll("p", "a", 1000 + k);
              h.clock.wall += 1000;
              h.clock.mono += 1000;
            }
            assert.ok(polls * 1000 < DISK_RETRY_MS, "asked before the retry");
            files.locked = !listable; // an operator's chmod (or none)
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
            const times = points.map((p) => p.t_ms);
            assert.deepEqual(times, [...times].sort((a, b) => a - b), "in time order");
            if (!listable) {
              // Nothing of the disk: this ring's polls, each once, and the answer says so.
              assert.equal(answer.incomplete, "disk_unreadable", shown);
              const total = points.reduce((n, p) => n + p.count, 0);
              assert.equal(total, polls, `this run's polls alone: ${shown}`);
              assert.ok(times.every((t) => t >= lastPoll - behind * 1000 - 2000), shown);
              return;
            }
            // (This run's first polls kept for the disk, in its first bucket's row: in neither.)
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
            // This run's closed buckets are kept for the disk, in neither file: said so.
            assert.equal(answer.incomplete, "disk_pending", shown);
          } finally {
            files.locked = false;
            await h.history.stop();
            await Deno.remove(dataDir, { recursive: true });
          }
        },
      );
    }
  }
}
