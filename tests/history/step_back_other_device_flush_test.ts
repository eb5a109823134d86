/**
 * The wall clock steps back twice, and the second step is first seen by ANOTHER device's poll: that
 * poll crosses into an earlier bucket, so every device's open bucket is written (#crossBucket) --
 * the asked device's too, early, while its ring still holds the polls of it. Before, a question of
 * the asked device took that row from the disk AND the ring's polls of it: the 4.9 s poll counted
 * twice (4 samples of 3). Found by seam_property_test.ts (seeds 1, 3, 6, 10, 11); docs/history.md:
 * a question over the repeated times is answered from both periods, each poll once.
 */
import assert from "node:assert/strict";
import { journalFiles } from "../../src/host/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { tempDir, testLogger } from "../helpers/kernel.ts";
import { T0 } from "./_history_helpers.ts";

// `later`: d0 polled again after the step, at a time after its newest poll (its ring sees no step
// back; in the bucket of that poll, or the next): its rows from before the step stay read as of
// the period before it, so its ring answers only the polls since.
for (const later of [null, 4_950, 5_200]) {
  for (const stepMs of [0, 1000]) {
    Deno.test(
      `History.query after a step back first seen by another device's poll counts the asked ` +
        `device's open bucket once (step_ms ${stepMs}${
          later === null ? "" : `, polled again at ${later} ms`
        })`,
      async () => {
        const dataDir = tempDir("history-other-device-flush-");
        const { clock, history, poll } = handFedHistory(
          { stepMs: 1000, memorySeconds: 10 },
          journalFiles,
          testLogger(),
          dataDir,
        );
        clock.wall = T0 + 7_400;
        await history.start();
        try {
          poll("p", "d0", 74);
          clock.stepWall(-4_300); // back to 3.1 s
          clock.mono += 1000;
          poll("p", "d0", 31);
          clock.wall = T0 + 4_900;
          clock.mono += 1800;
          poll("p", "d0", 49);
          clock.stepWall(-2_300); // back again, to 2.6 s: first seen by d1's poll
          clock.mono += 1000;
          poll("p", "d1", 26);
          if (later !== null) {
            clock.wall = T0 + later;
            clock.mono += later - 2_600;
            poll("p", "d0", later / 100);
          }
          const answer = await history.query({
            providerId: "p",
            deviceId: "d0",
            signalIds: ["x"],
            sinceMs: T0,
            untilMs: T0 + 9_999,
            stepMs,
          });
          const points = answer.signals[0]!.points;
          assert.deepEqual(
            {
              count: points.reduce((n, p) => n + p.count, 0),
              min: Math.min(...points.map((p) => p.min as number)),
              max: Math.max(...points.map((p) => p.max as number)),
            },
            { count: later === null ? 3 : 4, min: 31, max: 74 },
            `each of d0's polls once (source ${answer.source}, memory_from_ms ${
              answer.memory_from_ms === null ? null : answer.memory_from_ms - T0
            }, points ${points.map((p) => `${p.t_ms - T0}x${p.count}`).join(",")})`,
          );
        } finally {
          await history.stop();
        }
      },
    );
  }
}
