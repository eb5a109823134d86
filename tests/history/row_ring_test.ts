/**
 * The disk tier's rows name the device's ring that wrote them when it is not the run's first
 * (rowText's ring, `r`; rowRing): a device let go by the sweep and picked up again writes rows a
 * reader tells from its old ring's of the same times (readded_behind_step_back_test.ts). A run's
 * first rings' rows are as before, without it.
 */
import assert from "node:assert/strict";
import { HISTORY_SWEEP_EVERY_MS, parseRow, rowRing, rowText } from "../../src/history/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { T0 } from "./_history_helpers.ts";

const POINT = { t_ms: T0, min: 1, max: 2, last: 2, count: 2, quality: 0 } as const;

Deno.test("rowText writes r only for a ring above 0, and rowRing reads it back (0 without)", () => {
  const first = rowText(T0, "p", "a", [["x", POINT, "double"]]);
  assert.equal(first, `{"t":${T0},"p":"p","d":"a","s":{"x":[1,2,2,2,0,0]}}`);
  assert.equal(rowText(T0, "p", "a", [["x", POINT, "double"]], 0), first);
  assert.equal(rowRing(parseRow(first)!), 0);
  const again = rowText(T0, "p", "a", [["x", POINT, "double"]], 37);
  assert.equal(again, `{"t":${T0},"p":"p","d":"a","s":{"x":[1,2,2,2,0,0]},"r":37}`);
  assert.equal(rowRing(parseRow(again)!), 37);
  // A damaged r is no ring: 0.
  for (const r of ['"37"', "-3", "1.5", "null", "[37]"]) {
    const row = parseRow(`{"t":${T0},"p":"p","d":"a","s":{},"r":${r}}`)!;
    assert.equal(rowRing(row), 0, r);
  }
});

Deno.test("History writes the rows of a device's ring made again in the same run with its r", async () => {
  const HISTORY = { stepMs: 2000, memorySeconds: 30 };
  const h = handFedHistory(HISTORY);
  h.clock.wall = T0;
  h.clock.mono = 1_000_000;
  await h.history.start();
  try {
    const tick = (withA: boolean) => {
      h.poll("p", "k", 0);
      if (withA) h.poll("p", "a", 0);
      h.clock.wall += 1000;
      h.clock.mono += 1000;
    };
    for (let s = 0; s < 4; s++) tick(true);
    h.known.delete("p/a");
    const away = HISTORY.memorySeconds + HISTORY_SWEEP_EVERY_MS / 1000 + 5;
    for (let s = 0; s < away; s++) tick(false);
    assert.equal(h.history.knows("p", "a"), false, "the sweep let it go");
    for (let s = 0; s < 4; s++) tick(true);
    await h.history.flushDisk();
    const rows = h.files.text("/data/history/history-00000001.jsonl").split("\n")
      .filter((l) => l !== "").map((l) => parseRow(l)!);
    const ringsOf = (d: string) => rows.filter((r) => r.d === d).map((r) => rowRing(r));
    const a = ringsOf("a");
    assert.equal(a.length, 4, "two rows of each ring");
    assert.deepEqual(a.slice(0, 2), [0, 0], "its first ring's rows name none");
    assert.ok(a[2]! > 0, `its second ring's rows name it: ${a}`);
    assert.equal(a[3], a[2]);
    assert.ok(ringsOf("k").every((r) => r === 0), "a device never let go names none");
  } finally {
    await h.history.stop();
  }
});
