/**
 * A wall clock stepped back within the first bucket a device's ring is polled in (an NTP
 * correction of a few hundred ms right after a start, or right after the device's first poll):
 * the polls before the step lie after those since it, in a bucket the ring has written no row of.
 * Before, the ring answered its polls before the step only from the bucket after the oldest of
 * them (the disk tier's rows written before the step answer the rest) -- but no row was written
 * before the step, so those polls were in neither part: 1 of 2 samples. Found by
 * seam_property_test.ts (seed 6); docs/history.md: a question over the repeated times is answered
 * from both periods, each poll once.
 */
import assert from "node:assert/strict";
import { journalFiles } from "../../src/host/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { tempDir, testLogger } from "../helpers/kernel.ts";
import { T0 } from "./_history_helpers.ts";

for (const restarted of [false, true]) {
  for (const stepMs of [0, 1000]) {
    Deno.test(
      `History.query after a wall clock stepped back within the device's first bucket${
        restarted ? " of a run after a restart" : ""
      } has its poll before the step (step_ms ${stepMs})`,
      async () => {
        const dataDir = tempDir("history-first-bucket-");
        const config = { stepMs: 1000, memorySeconds: 10 };
        if (restarted) {
          const first = handFedHistory(config, journalFiles, testLogger(), dataDir);
          first.clock.wall = T0 + 5000;
          await first.history.start();
          first.poll("p", "d", 1);
          await first.history.stop();
        }
        const { clock, history, poll } = handFedHistory(
          config,
          journalFiles,
          testLogger(),
          dataDir,
        );
        clock.wall = T0 + 20_700;
        await history.start();
        try {
          poll("p", "d", 2); // the device's first poll of this run, 700 ms into its bucket
          clock.stepWall(-500); // stepped back 500 ms, within that bucket
          clock.mono += 1000;
          poll("p", "d", 3);
          const answer = await history.query({
            providerId: "p",
            deviceId: "d",
            signalIds: ["x"],
            sinceMs: T0 + 20_000,
            untilMs: T0 + 20_999,
            stepMs,
          });
          const points = answer.signals[0]!.points;
          assert.deepEqual(
            {
              count: points.reduce((n, p) => n + p.count, 0),
              min: Math.min(...points.map((p) => p.min as number)),
              max: Math.max(...points.map((p) => p.max as number)),
            },
            { count: 2, min: 2, max: 3 },
            `both polls (source ${answer.source}, points ${
              points.map((p) => `${p.t_ms - T0}x${p.count}`).join(",")
            })`,
          );
        } finally {
          await history.stop();
        }
      },
    );
  }
}
