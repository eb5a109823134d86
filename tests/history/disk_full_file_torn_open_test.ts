/**
 * A power cut tore the row being written at the end of the newest disk tier file, and that file
 * is full when the next run opens the tier: past its share of history.disk_max_bytes at open (the
 * operator lowered disk_max_bytes), or filled by the next run's first row. The writer begins a new
 * file; still the next run learns the last row of the files from that full one (a restart within
 * a bucket answers the bucket with both runs' samples: docs/history.md "Survives restarts"), and
 * the torn fragment is ended with a newline, with the one INFO naming the file, and counted once
 * as unreadable ("A power cut is not fatal"). Before, a file past its share at open left the tier
 * without a last row (`lastRowAtOpen` -Infinity: the stopped run's last seconds left out of the
 * bucket), and in both cases the fragment stayed without its newline and without the INFO. A real
 * History fed by hand on in-memory files.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";

const T0 = 1_700_000_000_000;
const PATH = "/data/history/history-00000001.jsonl";
/** The smallest share of a disk tier file (disk_tier.ts: max(65536, disk_max_bytes / 16)). */
const MIN_SHARE = 65536;

for (const when of ["past its share at open", "filled by the next run's first row"] as const) {
  Deno.test(`A newest disk file ${when} and ending in a torn row: its last row is learnt, the fragment ended and counted`, async () => {
    const first = handFedHistory({ stepMs: 10_000, memorySeconds: 120 });
    // Rows of another device from before, more than the smallest share.
    let padding = "";
    for (let i = 0; padding.length <= MIN_SHARE; i++) {
      padding += `{"t":${T0 - 2_000_000 + i * 1000},"p":"p9","d":"d9","s":{"x":[0,0,0,1,0,0]}}\n`;
    }
    const pad = await first.files.openAppend(PATH);
    await pad.append(padding);
    pad.close();
    first.clock.wall = T0;
    await first.history.start();
    for (let s = 0; s < 15; s++) {
      first.poll("p0", "d0", s);
      first.clock.wall += 1000;
    }
    await first.history.stop(); // the open bucket (10..14 s) is written at stop
    // The power cut: the row of the next device of that bucket torn part-way.
    const fragment = `{"t":${T0 + 10_000},"p":"p0","d":"d1","s":{"x":[1,`;
    const cut = await first.files.openAppend(PATH);
    await cut.append(fragment);
    cut.close();
    const size = first.files.text(PATH).length;
    assert.ok(size > MIN_SHARE);

    // Past its share: the smallest share; filled by the next row: a share it just fits in.
    const diskMaxBytes = when === "past its share at open" ? 16 * MIN_SHARE : 16 * (size + 10);
    const { log, lines } = capturingLogger({ level: "info" });
    const second = handFedHistory(
      { stepMs: 10_000, memorySeconds: 120, diskMaxBytes },
      first.files,
      log,
    );
    second.clock.wall = T0 + 17_000;
    await second.history.start();
    const ask = async (untilS: number) =>
      (await second.history.query({
        providerId: "p0",
        deviceId: "d0",
        signalIds: ["x"],
        sinceMs: T0,
        untilMs: T0 + untilS * 1000 - 1,
        stepMs: 10_000,
      })).signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.min, p.max, p.count]);
    try {
      for (let s = 17; s < 22; s++) {
        second.poll("p0", "d0", s);
        second.clock.wall += 1000;
      }
      // The polls crossed into the 20 s bucket: the new run's part of the 10 s one is written.
      const expected = [[0, 0, 9, 10], [10, 10, 19, 8], [20, 20, 21, 2]];
      assert.deepEqual(await ask(22), expected, "the 10 s bucket holds both runs' samples");
      assert.deepEqual(await ask(22), expected);
      assert.equal(second.history.status().disk.rowsUnreadable, 1, "the torn row, once");
    } finally {
      await second.history.stop();
    }
    assert.ok(
      first.files.text(PATH).endsWith(`${fragment}\n`),
      `the fragment ended with a newline: ...${first.files.text(PATH).slice(-120)}`,
    );
    const torn = lines.filter((l) => l.includes("ended in a torn last line"));
    assert.equal(torn.length, 1, lines.join("\n"));
    assert.match(torn[0]!, /^INFO .*history-00000001\.jsonl ended in a torn last line/);
    assert.notEqual(first.files.text("/data/history/history-00000002.jsonl"), "");
  });
}
