/**
 * A device let go by the sweep (a reload removed it for longer than memory_seconds) and declared
 * again later gets a ring whose poll numbers go on from its old ring's: a reader that noted where
 * it was in the old ring (Sparkplug's store and forward) is told the polls between were lost, and
 * walks the new polls -- not a walk of nothing that says nothing was lost.
 */
import assert from "node:assert/strict";
import { HISTORY_SWEEP_EVERY_MS } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

const MEMORY_S = 60;

Deno.test("History: a device swept and declared again goes on numbering its polls, so a walk from the old ring's position reports the loss and walks the new polls", async () => {
  const { clock, history, known, poll } = handFedHistory({ memorySeconds: MEMORY_S });
  await history.start();
  try {
    for (let i = 0; i < 10; i++) {
      poll("keep", "d", i);
      poll("back", "d", i);
      clock.wall += 1000;
    }
    // Where a reader was in `back/d` (five polls not yet read), then a reload removes it.
    const start = history.nextPollSeq("back", "d") - 5;
    known.delete("back/d");
    for (let i = 0; i < MEMORY_S + HISTORY_SWEEP_EVERY_MS / 1000 + 5; i++) {
      poll("keep", "d", 100 + i);
      clock.wall += 1000;
    }
    assert.equal(history.knows("back", "d"), false, "the sweep let it go");
    // Declared again (a later reload): three polls.
    for (let i = 0; i < 3; i++) {
      poll("back", "d", 500 + i);
      clock.wall += 1000;
    }
    const walk = history.changes("back", "d", ["x"], start, history.nextPollSeq("back", "d"))!;
    const walked: number[] = [];
    while (walk.next((_id, s) => walked.push(s.num)) !== null) { /* to the end */ }
    assert.ok(
      walk.reachFromSeq > start,
      `the polls of the old ring after ${start} were let go, yet the walk says nothing was lost ` +
        `(reachFromSeq ${walk.reachFromSeq}; walked ${JSON.stringify(walked)})`,
    );
    assert.deepEqual(walked, [500, 501, 502]);
  } finally {
    await history.stop();
  }
});
