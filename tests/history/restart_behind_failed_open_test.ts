/**
 * A run begun behind the files' last row (a board without a real-time clock) whose disk tier
 * failed its first open (a read-only or full disk at start) and opened at its retry
 * (DISK_RETRY_MS later): the devices polled before that open began behind the earlier run's rows
 * too. A question over the whole range counts every poll of both runs once, as after an open
 * that worked (restart_behind_step_back_test.ts), with a manual clock.
 */
import assert from "node:assert/strict";
import { DISK_RETRY_MS } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";
import { RefusingFiles } from "./_rig.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };

const cases = [
  // Restarted 10 s behind (at 30 s of 0..39), 12 polls; no step back since.
  { behind: 10, before: 12, back: 0, after: 0 },
  // Restarted 10 s behind, 6 polls, stepped back 4 s within the ring's reach, 6 polls.
  { behind: 10, before: 6, back: 4, after: 6 },
];

for (const { behind, before, back, after } of cases) {
  for (const stepMs of [0, 10_000]) {
    Deno.test(
      `History.query after a restart ${behind} s behind the files whose disk tier opened only at ` +
        `its retry (${before} polls, stepped back ${back} s, ${after} polls; step_ms ${stepMs}): ` +
        `every poll of both runs counted once`,
      async () => {
        const files = new RefusingFiles();
        const polled: number[] = []; // the second of each poll, both runs
        let h = handFedHistory(HISTORY, files);
        h.clock.wall = T0;
        await h.history.start();
        for (let s = 0; s < 40; s++) {
          polled.push(s);
          h.poll("p", "a", s);
          h.clock.wall += 1000;
          h.clock.mono += 1000;
        }
        await h.history.stop();
        const wall = h.clock.wall - behind * 1000;
        files.refuse = true;
        h = handFedHistory(HISTORY, files);
        h.clock.wall = wall;
        h.clock.mono = 5_000_000;
        await h.history.start();
        try {
          assert.equal(h.history.status().disk.state, "stopped");
          files.refuse = false;
          h.clock.mono += DISK_RETRY_MS; // the retry is due at the first row written
          const tick = (v: number) => {
            polled.push(Math.floor((h.clock.wall - T0) / 1000));
            h.poll("p", "a", v);
            h.clock.wall += 1000;
            h.clock.mono += 1000;
          };
          for (let k = 0; k < before; k++) tick(1000 + k);
          h.clock.wall -= back * 1000;
          for (let k = 0; k < after; k++) tick(2000 + k);
          await h.history.flushDisk();
          assert.equal(h.history.status().disk.state, "ok", "opened at its retry");
          const answer = await h.history.query({
            providerId: "p",
            deviceId: "a",
            signalIds: ["x"],
            sinceMs: T0,
            untilMs: T0 + 99_999,
            stepMs,
          });
          const points = answer.signals[0]!.points;
          const shown = points.map((p) => `${(p.t_ms - T0) / 1000}:${p.count}`).join(" ");
          assert.equal(answer.incomplete, null, shown);
          const total = points.reduce((n, p) => n + p.count, 0);
          assert.equal(
            total,
            polled.length,
            `${total} samples for ${polled.length} polls: ${shown}`,
          );
          const times = points.map((p) => p.t_ms);
          assert.deepEqual(times, [...times].sort((a, b) => a - b), "in time order");
        } finally {
          await h.history.stop();
        }
      },
    );
  }
}
