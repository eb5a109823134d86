/**
 * A power cut tore the last row of the newest disk tier file (no newline). The next run opens the
 * files and appends: its first row begins on a new line (never glued to the fragment, the rows
 * after it read), the fragment is not answered, and it is counted once as unreadable
 * (`rowsUnreadable`) however often it is read: wherever the cut fell, before or after the row's
 * `"p"/"d"` (docs/history.md, "A power cut is not fatal"). A real History fed by hand on in-memory
 * files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import type { MemoryFiles } from "../helpers/memory_files.ts";

const T0 = 1_700_000_000_000;

async function fileText(files: MemoryFiles, path: string): Promise<string> {
  const lines: string[] = [];
  for await (const l of files.readLinesAt(path, { maxLineBytes: 1 << 20, startByte: 0 })) {
    lines.push(l.text + (l.terminated ? "\n" : ""));
  }
  return lines.join("");
}

/** `keep`: the bytes of the last row that reached the disk. */
for (const [where, keep] of [["before its device", 24], ["after its device", 44]] as const) {
  Deno.test(`A torn last row cut ${where} is not answered, not glued to the next run's first row, and counted once`, async () => {
    const first = handFedHistory({ stepMs: 1000 });
    first.clock.wall = T0;
    await first.history.start();
    for (let s = 0; s < 5; s++) {
      first.poll("p0", "d0", s);
      first.clock.wall += 1000;
    }
    await first.history.stop(); // buckets 0..4 written
    const [name] = await first.files.listNames("/data/history");
    const path = `/data/history/${name}`;
    const text = await fileText(first.files, path);
    const lastStart = text.lastIndexOf("\n", text.length - 2) + 1;
    assert.match(text.slice(lastStart), new RegExp(`^\\{"t":${T0 + 4000},"p":"p0","d":"d0",`));
    const torn = text.slice(0, lastStart + keep);
    assert.equal(torn.includes(`"d":"d0",`, lastStart), where === "after its device");
    await first.files.remove(path);
    const h = await first.files.openAppend(path);
    await h.append(torn);
    h.close();

    const second = handFedHistory({ stepMs: 1000 }, first.files);
    second.clock.wall = T0 + 10_000;
    await second.history.start();
    const ask = async () =>
      (await second.history.query({
        providerId: "p0",
        deviceId: "d0",
        signalIds: ["x"],
        sinceMs: T0,
        untilMs: T0 + 20_000,
        stepMs: 1000,
      })).signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.last]);
    try {
      // Still the last line without its newline: no row yet, not counted.
      assert.deepEqual(await ask(), [[0, 0], [1, 1], [2, 2], [3, 3]]);
      assert.equal(second.history.status().disk.rowsUnreadable, 0);
      for (let s = 10; s < 14; s++) {
        second.poll("p0", "d0", s);
        second.clock.wall += 1000;
      }
      const expected = [[0, 0], [1, 1], [2, 2], [3, 3], [10, 10], [11, 11], [12, 12], [13, 13]];
      assert.deepEqual(await ask(), expected);
      assert.deepEqual(await ask(), expected);
      assert.equal(second.history.status().disk.rowsUnreadable, 1, "the torn row, once");
    } finally {
      await second.history.stop();
    }
    const after = await fileText(first.files, path);
    assert.ok(
      after.startsWith(`${torn}\n{"t":${T0 + 10_000},"p":"p0","d":"d0",`),
      `the next run's first row on a line of its own:\n${after}`,
    );
  });
}
