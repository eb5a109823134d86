/**
 * While a step back of the wall clock is still pending on disk (the first row after it not yet
 * written: the open bucket's row begins the new file), the disk tier is told the open bucket of
 * every device, not only the asked one's (History #nextRowBucketMs): also a device the ring holds
 * nothing of in this run (polled by the earlier run only) and one not polled since the step. For
 * those the judgement changes no answer -- the first's disk part takes every row of the range,
 * the second keeps no poll after the step -- and these cases pin that: every poll of the range
 * once, incomplete null, with the clock past the earlier period's last bucket (the clock alone no
 * longer says the step is pending).
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

const HISTORY = { stepMs: 2000, memorySeconds: 30 };

/** The counted samples of device `d`'s x over the whole range, and a picture of its points. */
async function counted(h: ReturnType<typeof handFedHistory>, d: string, stepMs: number) {
  const a = await h.history.query({
    providerId: "p",
    deviceId: d,
    signalIds: ["x"],
    sinceMs: T0,
    untilMs: T0 + 99_999,
    stepMs,
  });
  const points = a.signals[0]?.points ?? [];
  return {
    total: points.reduce((n, p) => n + p.count, 0),
    incomplete: a.incomplete,
    shown: points.map((p) => `${(p.t_ms - T0) / 1000}:${p.count}`).join(" "),
  };
}

for (const afterMs of [1000, 6000]) {
  for (const stepMs of [0, 10_000]) {
    Deno.test(
      `History.query of a device the ring holds nothing of, after a restart 3 s behind the files ` +
        `(another device polled once, its bucket open; asked ${afterMs / 1000} s after, step_ms ` +
        `${stepMs}): every row of the earlier run once`,
      async () => {
        let h = handFedHistory(HISTORY);
        h.clock.wall = T0;
        await h.history.start();
        for (let s = 0; s < 20; s++) {
          h.poll("p", "a", s);
          h.poll("p", "b", s);
          h.clock.wall += 1000;
          h.clock.mono += 1000;
        }
        await h.history.stop();
        const wall = h.clock.wall - 3000;
        h = handFedHistory(HISTORY, h.files);
        h.clock.wall = wall;
        h.clock.mono = 5_000_000;
        await h.history.start();
        try {
          h.poll("p", "a", 1000); // b is not polled in this run: the ring holds nothing of it
          h.clock.wall += afterMs;
          h.clock.mono += afterMs;
          await h.history.flushDisk();
          assert.equal(h.history.knows("p", "b"), false);
          const b = await counted(h, "b", stepMs);
          assert.equal(b.total, 20, b.shown);
          assert.equal(b.incomplete, null, b.shown);
          const a = await counted(h, "a", stepMs);
          assert.equal(a.total, 21, a.shown);
          assert.equal(a.incomplete, null, a.shown);
        } finally {
          await h.history.stop();
        }
      },
    );

    Deno.test(
      `History.query of a device not polled since a step back of 3 s (another device polled once ` +
        `after it, its bucket open; asked ${afterMs / 1000} s after, step_ms ${stepMs}): every ` +
        `poll of it once`,
      async () => {
        const h = handFedHistory(HISTORY);
        h.clock.wall = T0;
        await h.history.start();
        try {
          for (let s = 0; s < 20; s++) {
            h.poll("p", "a", s);
            h.poll("p", "b", s);
            h.clock.wall += 1000;
            h.clock.mono += 1000;
          }
          h.clock.wall -= 3000; // stepped back; b's provider answers no more
          h.poll("p", "a", 1000);
          h.clock.wall += afterMs;
          h.clock.mono += afterMs;
          await h.history.flushDisk();
          const b = await counted(h, "b", stepMs);
          assert.equal(b.total, 20, b.shown);
          assert.equal(b.incomplete, null, b.shown);
          const a = await counted(h, "a", stepMs);
          assert.equal(a.total, 21, a.shown);
          assert.equal(a.incomplete, null, a.shown);
        } finally {
          await h.history.stop();
        }
      },
    );
  }
}
