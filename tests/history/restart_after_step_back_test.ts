/**
 * A run whose wall clock stepped back (an NTP correction) stops; the next run starts within the
 * times that run recorded before its step. The files' last row (the run's last, after the step) is
 * behind their newest row, yet a question over those times must hold both runs' polls: the earlier
 * run's from the disk tier, this run's from the ring. Before, the disk tier took the files' last
 * row for the newest an earlier run wrote (DiskTier.lastRowAtOpen), so the ring's part was taken
 * for the only one there and the earlier run's polls of those times were left out -- until the
 * ring let go of them (history.memory_seconds later). A real History fed by hand on memory files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";

const T0 = 1_700_000_000_000;

for (const stepMs of [0, 1000]) {
  Deno.test(`a question over times an earlier run recorded before its wall clock stepped back has both runs' polls (step_ms ${stepMs})`, async () => {
    const files = new MemoryFiles();
    const config = { stepMs: 1000, memorySeconds: 10 };
    const first = handFedHistory(config, files);
    first.clock.wall = T0;
    await first.history.start();
    const polls: number[] = [];
    const poll = (h: typeof first, v: number) => {
      polls.push(h.clock.wall);
      h.poll("p", "d", v);
      h.clock.wall += 500;
      h.clock.mono += 500;
    };
    for (let i = 0; i < 36; i++) poll(first, i); // T0 .. T0+17.5 s
    first.clock.wall = T0 + 5000; // stepped back 13 s
    for (let i = 0; i < 8; i++) poll(first, 100 + i); // T0+5 s .. T0+8.5 s: the files' last rows
    await first.history.stop();

    // The next run starts after the files' last row, within the first run's times before its step.
    const second = handFedHistory(config, files);
    second.clock.wall = T0 + 9000;
    second.clock.mono = first.clock.mono + 1000;
    await second.history.start();
    try {
      for (let i = 0; i < 18; i++) poll(second, 200 + i); // T0+9 s .. T0+17.5 s, all in the ring
      const since = T0 + 9000;
      const until = T0 + 17_999;
      const a = await second.history.query({
        providerId: "p",
        deviceId: "d",
        signalIds: ["x"],
        sinceMs: since,
        untilMs: until,
        stepMs,
      });
      const points = a.signals[0]!.points;
      const counted = points.reduce((n, p) => n + p.count, 0);
      const inRange = polls.filter((t) => t >= since && t <= until).length;
      assert.equal(inRange, 36, "18 polls of each run");
      assert.equal(
        counted,
        inRange,
        `both runs' polls (source ${a.source}, memory_from_ms ${a.memory_from_ms! - T0}; ` +
          `points ${points.map((p) => `${p.t_ms - T0}x${p.count}`).join(",")})`,
      );
    } finally {
      await second.history.stop();
    }
  });
}
