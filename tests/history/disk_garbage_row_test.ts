/**
 * A disk tier row that parses as JSON but whose signal entry is not `[min, max, last, count,
 * quality, type]` (a hand edit, a damaged file) is left out of answers: it never fails the history
 * question of every range that holds it. A real History fed by hand; the disk tier on in-memory
 * files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

const T0 = 1_700_000_000_000;

/**
 * A first run polls `seconds` buckets of p0/d0 (signal `x` = the second) and stops (they are
 * written); `rows` is appended to its file by hand; a second run over the same files asks for
 * `x` in 1 s steps over [since, until] seconds (the ring empty: the disk tier answers).
 */
async function askAfterHandRows(seconds: number, rows: string, since: number, until: number) {
  const first = handFedHistory({ stepMs: 1000 });
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < seconds; s++) {
    first.poll("p0", "d0", s);
    first.clock.wall += 1000;
  }
  await first.history.stop();
  const [name] = await first.files.listNames("/data/history");
  const file = await first.files.openAppend(`/data/history/${name}`);
  await file.append(rows);
  file.close();
  const second = handFedHistory({ stepMs: 1000 }, first.files);
  await second.history.start();
  try {
    return await second.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["x"],
      sinceMs: T0 + since * 1000,
      untilMs: T0 + until * 1000 + 999,
      stepMs: 1000,
    });
  } finally {
    await second.history.stop();
  }
}

Deno.test("History.query leaves out a disk row's signal entry that is not an array, and answers the rows around it", async () => {
  const row = (t: number, x: unknown) =>
    JSON.stringify({ t: T0 + t * 1000, p: "p0", d: "d0", s: { x } }) + "\n";
  // Buckets 0..4 written by the first run; a restart: the disk tier answers the whole range.
  const answer = await askAfterHandRows(
    5,
    row(5, null) + row(6, 7) + row(7, [7, 7, 7, 1, 0, 0]),
    0,
    9,
  );
  assert.equal(answer.source, "disk");
  assert.deepEqual(
    answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.last]),
    [[0, 0], [1, 1], [2, 2], [3, 3], [4, 4], [7, 7]],
  );
});

Deno.test("History.query for a signal_id that names an Object property (constructor) answers from the disk tier without failing", async () => {
  const { clock, history, poll } = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  clock.wall = T0;
  await history.start();
  try {
    for (let s = 0; s < 30; s++) {
      poll("p0", "d0", s);
      clock.wall += 1000;
    }
    const answer = await history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["constructor", "x"],
      sinceMs: T0,
      untilMs: T0 + 29_999,
      stepMs: 10_000,
    });
    assert.deepEqual(answer.signals.map((s) => [s.signal_id, s.points.length]), [
      ["constructor", 0],
      ["x", 3],
    ]);
  } finally {
    await history.stop();
  }
});

Deno.test("History.query answers a disk row's quality code that is no integer as UNAVAILABLE (3), as one out of range: never a code the API cannot name", async () => {
  const row = (t: number, quality: number) =>
    JSON.stringify({ t: T0 + t * 1000, p: "p0", d: "d0", s: { x: [t, t, t, 1, quality, 0] } }) +
    "\n";
  const answer = await askAfterHandRows(1, row(1, 1.5) + row(2, 7) + row(3, 1), 1, 3);
  assert.deepEqual(
    answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.quality]),
    // Quality codes (QUALITY_BY_CODE: 1 STALE, 3 UNAVAILABLE); the API names them by that table.
    [[1, 3], [2, 3], [3, 1]],
  );
});
