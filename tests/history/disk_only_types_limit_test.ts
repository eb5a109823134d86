/**
 * A signal only on disk (its declaration not known) is answered in its newest rows' type alone
 * (History.query): the rows of an older type are left out of the answer, so they do not count
 * against MAX_HISTORY_POINTS either; the newest type's and the untyped rows' do. A real History
 * fed by hand; the disk tier on in-memory files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { MAX_HISTORY_POINTS } from "../../src/history/history.ts";

const T0 = 1_700_000_000_000;

/**
 * A first run writes a file for p0/d0 (signal x); `entries` of signal y (one a second from 10 s
 * on) are appended by hand; a second run, where no provider lists d0 (y's type is its rows'), asks
 * for y at full rate over them all.
 */
async function askY(entries: unknown[][]) {
  const first = handFedHistory({ stepMs: 1000 });
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < 2; s++) {
    first.poll("p0", "d0", s);
    first.clock.wall += 1000;
  }
  await first.history.stop();
  const rows = entries.map((y, i) =>
    JSON.stringify({ t: T0 + (10 + i) * 1000, p: "p0", d: "d0", s: { y } }) + "\n"
  ).join("");
  const [name] = await first.files.listNames("/data/history");
  const file = await first.files.openAppend(`/data/history/${name}`);
  await file.append(rows);
  file.close();
  const second = handFedHistory({ stepMs: 1000 }, first.files);
  second.undeclared.add("p0/d0/y");
  await second.history.start();
  try {
    return await second.history.query({
      providerId: "p0",
      deviceId: "d0",
      signalIds: ["y"],
      sinceMs: T0,
      untilMs: T0 + (20 + entries.length) * 1000,
      stepMs: 0,
    });
  } finally {
    await second.history.stop();
  }
}

const DOUBLE = [1.5, 1.5, 1.5, 1, 0, 0]; // type 0: double
const INT64 = [7, 7, 7, 1, 0, 1]; // type 1: int64
const NO_VALUE = [null, null, null, 1, 3]; // no value in its bucket: no type

Deno.test("History.query of a disk-only signal retyped after more than MAX_HISTORY_POINTS buckets answers its newest type's points, not 400", async () => {
  const answer = await askY([
    ...Array.from({ length: MAX_HISTORY_POINTS + 1 }, () => DOUBLE),
    INT64,
    INT64,
    INT64,
  ]);
  assert.deepEqual(
    [answer.signals[0]!.value_type, answer.signals[0]!.points.map((p) => p.last)],
    ["int64", [7, 7, 7]],
  );
});

Deno.test("History.query of a disk-only signal counts its untyped rows' buckets and its newest type's together against MAX_HISTORY_POINTS", async () => {
  // Each alone fits; together they are one more than an answer may hold.
  const untyped = 5_000;
  await assert.rejects(
    askY([
      ...Array.from({ length: untyped }, () => NO_VALUE),
      ...Array.from({ length: MAX_HISTORY_POINTS - untyped + 1 }, () => INT64),
    ]),
    /more than 20000 points \(MAX_HISTORY_POINTS\)/,
  );
});
