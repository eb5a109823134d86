/**
 * A signal only on disk (its declaration not known) is answered in its newest rows' type alone
 * (History.query): the rows of an older type are left out of the answer, so they do not count
 * against MAX_HISTORY_POINTS either; the newest type's and the untyped rows' do. A real History
 * fed by hand; the disk tier on in-memory files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { MAX_HISTORY_POINTS, MAX_HISTORY_TYPED_HELD } from "../../src/history/history.ts";
import { RuntimeError } from "../../src/common/mod.ts";

const T0 = 1_700_000_000_000;

/**
 * A first run writes a file for p0/d0 (signal x); `entries` of signal y (one a second from 10 s
 * on) are appended by hand; a second run, where no provider lists d0 (y's type is its rows'), asks
 * for y at full rate over them all.
 */
async function askY(entries: unknown[][], stepMs = 0) {
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
      stepMs,
    });
  } finally {
    await second.history.stop();
  }
}

const DOUBLE = [1.5, 1.5, 1.5, 1, 0, 0]; // type 0: double
const INT64 = [7, 7, 7, 1, 0, 1]; // type 1: int64
const NO_VALUE = [null, null, null, 1, 3]; // no value in its bucket: no type
const STRING = [null, null, "on", 1, 0, 4]; // type 4: string

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

Deno.test("History.query of a disk-only signal holding more than MAX_HISTORY_TYPED_HELD buckets of its types is refused INVALID_ARGUMENT naming that bound; a larger step_ms answers it", async () => {
  // Held apart until the newest type is known: a double's 20,000 buckets and an int64's, then
  // the newest type, a string's, whose one bucket would be the whole answer.
  assert.equal(MAX_HISTORY_TYPED_HELD, 2 * MAX_HISTORY_POINTS);
  const rows = (int64s: number) => [
    ...Array.from({ length: MAX_HISTORY_POINTS }, () => DOUBLE),
    ...Array.from({ length: int64s }, () => INT64),
    STRING,
  ];
  // At the bound exactly: answered.
  const atBound = await askY(rows(MAX_HISTORY_POINTS - 1));
  assert.deepEqual(
    [atBound.signals[0]!.value_type, atBound.signals[0]!.points.map((p) => p.last)],
    ["string", ["on"]],
  );
  // One past it: the client's to narrow (a 400), told which bound and how -- not that the answer
  // would pass MAX_HISTORY_POINTS (it holds one point).
  const past = rows(MAX_HISTORY_POINTS);
  await assert.rejects(askY(past), (err: unknown) => {
    assert.ok(err instanceof RuntimeError, String(err));
    assert.equal(err.code, "INVALID_ARGUMENT");
    assert.match(
      err.message,
      /^the disk holds more than 40000 buckets \(MAX_HISTORY_TYPED_HELD\) of this answer's signals in the types they had before their newest .*; ask for a larger step_ms, a shorter range or fewer signal_id$/,
    );
    return true;
  });
  // Narrowed as it says (buckets of 4 s: a quarter as many held), the same rows are answered.
  const wider = await askY(past, 4000);
  assert.deepEqual(
    [wider.signals[0]!.value_type, wider.signals[0]!.points.map((p) => p.last)],
    ["string", ["on"]],
  );
});
