/**
 * The disk tier against the real runtime and the programmable provider (exact values): buckets
 * written across a rotation of its files answer GET /v0/history after a restart; a torn last row
 * (a power cut mid-write) is dropped and the rows after it read; a full disk (a size-capped file
 * through the injected file port) stops the tier with a WARN and a metric, and the runtime, its
 * ring and its stop go on.
 */
import assert from "node:assert/strict";
import { raceTimeout } from "../../src/common/mod.ts";
import { HISTORY_QUERY_DISK_WAIT_MS, MAX_HISTORY_POINTS } from "../../src/history/mod.ts";
import type { JournalAppendHandle } from "../../src/journal/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { untilTurns } from "../helpers/turns.ts";
import { tempDir } from "../helpers/kernel.ts";
import { diskFullError, InterceptedAppends } from "../helpers/journal_files.ts";
import { probeFile, probeValues, startRig, T0 } from "./_history_helpers.ts";
import { T, TestClock } from "../helpers/programmable_provider.ts";

const HISTORY = { stepMs: 1000, diskMaxBytes: 1024 * 1024, memorySeconds: 10 };
/** Buckets written in the first run: enough rows to fill one 64 KiB file and begin the next. */
const BUCKETS = 600;

/** Bucket i: two samples, temp i then i + 0.5 (exact in binary), count i. */
const expected = (i: number) => ({
  t_ms: T0 + i * 1000,
  min: i,
  max: i + 0.5,
  last: i + 0.5,
  count: 2,
  quality: "OK",
});

async function historyFiles(dataDir: string): Promise<string[]> {
  const names: string[] = [];
  for await (const e of Deno.readDir(`${dataDir}/history`)) {
    if (/^history-\d{8}\.jsonl$/.test(e.name)) names.push(e.name);
  }
  return names.sort();
}

Deno.test("The disk tier answers GET /v0/history exactly across a rotation and two restarts, and drops a torn last row", async () => {
  const dataDir = tempDir("history-disk-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  let rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    for (let i = 1; i <= BUCKETS; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.poll(T0 + i * 1000 + 500, probeValues(i + 0.5, i));
    }
    // Within the ring's 10 s the ring answers; before it, the disk tier.
    const both = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0 + 580_000}&step_ms=1000`,
    );
    assert.equal(both.source, "memory+disk");
    assert.ok(both.memory_from_ms > T0 + 580_000);
    assert.deepEqual(
      both.signals[0].points,
      Array.from({ length: 21 }, (_, k) => expected(580 + k)),
    );
  } finally {
    await rig.rt.stop(); // the open bucket (600) is written at stop
  }
  const files = await historyFiles(dataDir);
  assert.ok(files.length >= 2, `rotated: ${files.join(", ")}`);

  // A power cut tore the last row: its end never reached the disk.
  const last = `${dataDir}/history/${files.at(-1)}`;
  const text = await Deno.readTextFile(last);
  assert.match(text, new RegExp(`"t":${T0 + BUCKETS * 1000},.*\\n$`));
  await Deno.writeTextFile(last, text.slice(0, text.length - 25));

  clock.wallMs = T0 + 700_000;
  rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    const answer = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 699_999}`,
    );
    assert.equal(answer.source, "disk");
    assert.equal(answer.disk_step_ms, 1000);
    assert.equal(answer.signals[0].value_type, "double", "declared: no value in the ring yet");
    assert.deepEqual(
      answer.signals[0].points,
      Array.from({ length: BUCKETS - 1 }, (_, k) => expected(k + 1)),
      "every bucket but the torn one, exact, across the files",
    );
    // Torn, but still the last line without its newline: no row yet, not counted.
    const before = await (await rig.get("/metrics")).text();
    assert.match(before, /^runtime_history_disk_rows_unreadable_total 0$/m);
    // Coarser steps fold the disk buckets: 1..9 in the first 10 s bucket.
    const coarse = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 19_999}&step_ms=10000`,
    );
    assert.deepEqual(coarse.signals[0].points, [
      { t_ms: T0, min: 1, max: 9.5, last: 9.5, count: 18, quality: "OK" },
      { t_ms: T0 + 10_000, min: 10, max: 19.5, last: 19.5, count: 20, quality: "OK" },
    ]);
    for (const i of [700, 701, 702]) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.poll(T0 + i * 1000 + 500, probeValues(i + 0.5, i));
    }
  } finally {
    await rig.rt.stop();
  }

  clock.wallMs = T0 + 800_000;
  rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    const answer = await rig.json(
      `/v0/history/p0/probe?signal_id=temp&since_ms=${T0 + 598_000}&until_ms=${T0 + 799_999}`,
    );
    assert.equal(answer.source, "disk");
    assert.deepEqual(answer.signals[0].points, [
      expected(598),
      expected(599),
      expected(700),
      expected(701),
      expected(702),
    ], "the rows written after the torn one are read");
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(metrics, /^runtime_history_disk_up 1$/m);
    // The second run's first write began on a new line: the torn row is one unreadable line.
    assert.match(metrics, /^runtime_history_disk_rows_unreadable_total 1$/m);
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("The disk tier gives back an integer beyond 2^53 exactly after a restart, as the ring does", async () => {
  const dataDir = tempDir("history-disk-big-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  const big = (n: string) => [
    { id: "temp", type: T.DOUBLE, double: 1e19, quality: 1 }, // a double written as digits
    { id: "count", type: T.INT64, int64: n, quality: 1 },
    { id: "label", type: T.STRING, string: "run", quality: 1 },
  ];
  let rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    await rig.poll(T0 + 1000, big("9007199254740993")); // 2^53 + 1: no double holds it
    await rig.poll(T0 + 2000, big("-9223372036854775807"));
    const memory = await (await rig.get(
      `/v0/history/p0/probe?signal_id=count&signal_id=temp&since_ms=${T0 + 1000}&step_ms=1000`,
    )).text();
    assert.match(memory, /"last":9007199254740993,/);
    assert.match(memory, /"last":-9223372036854775807,/);
  } finally {
    await rig.rt.stop(); // the open bucket is written at stop
  }
  clock.wallMs = T0 + 100_000;
  rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    const res = await rig.get(
      `/v0/history/p0/probe?signal_id=count&signal_id=temp&since_ms=${T0 + 1000}&until_ms=${
        T0 + 2999
      }`,
    );
    const text = await res.text();
    const answer = JSON.parse(text);
    assert.equal(answer.source, "disk");
    assert.equal(answer.signals[0].points.length, 2);
    // The bucket's `last` is the sample, digit for digit, as the ring gave it before the restart.
    assert.match(text, /"last":9007199254740993,/);
    assert.match(text, /"last":-9223372036854775807,/);
    // A double of the same size stays a double of the same value.
    assert.deepEqual(
      answer.signals[1].points.map((p: { min: number; last: number }) => [p.min, p.last]),
      [[1e19, 1e19], [1e19, 1e19]],
    );
    // Folded into a coarser step, the last of the two buckets, exact.
    const folded = await (await rig.get(
      `/v0/history/p0/probe?signal_id=count&since_ms=${T0}&until_ms=${T0 + 9999}&step_ms=10000`,
    )).text();
    assert.match(folded, /"last":-9223372036854775807,"count":2,/);
  } finally {
    await rig.rt.stop();
  }
});

/** The real files, but what is appended under `/history/` stops fitting past `capBytes`. */
function cappedFiles(capBytes: number): InterceptedAppends {
  let written = 0;
  return new InterceptedAppends("/history/", async (text, append) => {
    if (written + text.length > capBytes) throw diskFullError();
    written += text.length;
    await append(text);
  });
}

Deno.test("A full disk stops the disk tier with a WARN and a metric; the runtime and its ring go on", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const files = cappedFiles(400);
  const rig = await startRig({ history: { stepMs: 1000 }, host: { files, log } });
  try {
    for (let i = 1; i <= 12; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    await rig.rt.history!.flushDisk();
    const metrics = await (await rig.get("/metrics")).text();
    assert.match(metrics, /^runtime_history_disk_up 0$/m);
    assert.match(metrics, /^runtime_history_disk_write_errors_total [1-9]\d*$/m);
    const dropped = Number(/^runtime_history_disk_rows_dropped_total (\d+)$/m.exec(metrics)![1]);
    const written = Number(/^runtime_history_disk_rows_written_total (\d+)$/m.exec(metrics)![1]);
    // The rows after the failed write are kept for the disk (DISK_OUTAGE_ROWS), not dropped.
    const held = rig.rt.history!.status().disk.rowsHeld;
    assert.equal(dropped, 0);
    assert.ok(written >= 1 && held >= 1 && written + held === 11, `${written} + ${held}`);
    const stopped = lines.filter((l) => l.includes("history disk tier stopped"));
    assert.equal(stopped.length, 1, lines.join("\n"));
    assert.match(stopped[0]!, /^WARN .*No space left on device/);
    assert.deepEqual(lines.filter((l) => l.startsWith("ERROR")), [], "never an ERROR");
    // The ring still answers, and polling goes on.
    await rig.poll(T0 + 13_000, probeValues(13, 13));
    const answer = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0 + 11_000}`);
    assert.equal(answer.source, "memory");
    assert.deepEqual(answer.signals[0].points.map((p: { last: number }) => p.last), [11, 12, 13]);
  } finally {
    await rig.rt.stop();
  }
  assert.ok(lines.some((l) => l.includes("runtime stopped")));
});

/** The real files, but appends under `/history/` wait while `held` (a disk slow to write). */
class HeldFiles extends InterceptedAppends {
  held = false;
  #release: (() => void)[] = [];
  constructor() {
    super("/history/", async (text, append) => {
      if (this.held) await new Promise<void>((r) => this.#release.push(r));
      await append(text);
    });
  }
  /** Lets every held append go on (and later ones through). */
  release(): void {
    this.held = false;
    for (const r of this.#release.splice(0)) r();
  }
}

Deno.test("A history question waits for the buckets still queued for the disk: they are in neither tier until written", async () => {
  const files = new HeldFiles();
  const rig = await startRig({ history: { stepMs: 1000, memorySeconds: 10 }, host: { files } });
  try {
    files.held = true;
    for (let i = 1; i <= 20; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.poll(T0 + i * 1000 + 500, probeValues(i + 0.5, i));
    }
    // The disk is slow: the buckets 1..~10 the ring no longer holds are queued, not written.
    const released = setTimeout(() => files.release(), 200);
    try {
      const answer = await rig.json(
        `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&step_ms=1000`,
      );
      assert.equal(answer.source, "memory+disk");
      assert.deepEqual(
        answer.signals[0].points.map((p: { t_ms: number }) => (p.t_ms - T0) / 1000),
        Array.from({ length: 20 }, (_, k) => k + 1),
        "every bucket once: the queued ones from the disk, the rest from the ring",
      );
    } finally {
      clearTimeout(released);
    }
    // A disk that does not write at all holds a question HISTORY_QUERY_DISK_WAIT_MS at most.
    files.held = true;
    for (let i = 21; i <= 23; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    const stalled = await raceTimeout(
      systemClock,
      rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`),
      5 * HISTORY_QUERY_DISK_WAIT_MS,
      null,
    );
    assert.ok(stalled !== null, "answered while the disk never writes");
    assert.equal(stalled.source, "memory+disk");
  } finally {
    files.release();
    await rig.rt.stop();
  }
});

/** Memory files whose appends wait while `held` (a disk that does not write). */
class HeldAppends extends MemoryFiles {
  held = false;
  #release: (() => void)[] = [];
  override async openAppend(path: string): Promise<JournalAppendHandle> {
    const handle = await super.openAppend(path);
    return {
      ...handle,
      append: async (text: string) => {
        if (this.held) await new Promise<void>((r) => this.#release.push(r));
        await handle.append(text);
      },
    };
  }
  release(): void {
    this.held = false;
    for (const r of this.#release.splice(0)) r();
  }
}

Deno.test("A history question too fine for MAX_HISTORY_POINTS is refused at once, not after waiting for the disk", async () => {
  const files = new HeldAppends();
  const { clock, history, poll } = handFedHistory({ stepMs: 1000, memorySeconds: 10 }, files);
  clock.wall = T0;
  await history.start();
  try {
    files.held = true;
    for (let s = 0; s < 30; s++) {
      poll("p", "a", s);
      clock.advance(1000);
    }
    // The buckets before the ring's reach are queued for a disk that does not write, and the
    // clock (whose timer ends the wait, HISTORY_QUERY_DISK_WAIT_MS) does not move.
    let outcome = "pending";
    history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 86_400_000,
      stepMs: 1,
    }).then(() => outcome = "answered", (err) => outcome = String(err));
    await untilTurns(() => outcome !== "pending", "the question settled without the disk");
    assert.match(outcome, new RegExp(`more than ${MAX_HISTORY_POINTS} points`));
  } finally {
    files.release();
    clock.advance(HISTORY_QUERY_DISK_WAIT_MS);
    await history.stop();
  }
});

Deno.test("The disk tier counts an unreadable row once however often it is read: runtime_history_disk_rows_unreadable_total", async () => {
  const dataDir = tempDir("history-unreadable-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  let rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    for (let i = 1; i <= 5; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.poll(T0 + i * 1000 + 500, probeValues(i + 0.5, i));
    }
  } finally {
    await rig.rt.stop();
  }
  // The row of bucket 3 damaged (an edited file): its start and the device's marker are intact.
  const [file] = await historyFiles(dataDir);
  const path = `${dataDir}/history/${file}`;
  const lines = (await Deno.readTextFile(path)).split("\n");
  const k = lines.findIndex((l) => l.startsWith(`{"t":${T0 + 3000},`));
  assert.ok(k >= 0, "bucket 3 was written");
  lines[k] = lines[k]!.slice(0, -7);
  await Deno.writeTextFile(path, lines.join("\n"));

  clock.wallMs = T0 + 100_000;
  rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    const unreadable = async () => {
      const metrics = await (await rig.get("/metrics")).text();
      const health = await rig.json("/v0/providers/health");
      return [
        /^runtime_history_disk_rows_unreadable_total (\d+)$/m.exec(metrics)?.[1],
        health.history_disk.rows_unreadable_total,
      ];
    };
    assert.deepEqual(await unreadable(), ["0", 0], "not read yet");
    for (let q = 1; q <= 3; q++) {
      const answer = await rig.json(
        `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 99_999}`,
      );
      assert.deepEqual(answer.signals[0].points.map((p: { t_ms: number }) => p.t_ms), [
        T0 + 1000,
        T0 + 2000,
        T0 + 4000,
        T0 + 5000,
      ]);
      assert.deepEqual(await unreadable(), ["1", 1], `question ${q}: one row, counted once`);
    }
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("The disk tier neither gives nor counts a last row without its newline (a write under way), and gives it once it is whole", async () => {
  const dataDir = tempDir("history-partial-");
  const inventoryFile = await probeFile(dataDir);
  const clock = new TestClock();
  clock.wallMs = T0;
  let rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    for (let i = 1; i <= 5; i++) {
      await rig.poll(T0 + i * 1000, probeValues(i, i));
      await rig.poll(T0 + i * 1000 + 500, probeValues(i + 0.5, i));
    }
  } finally {
    await rig.rt.stop();
  }
  const [file] = await historyFiles(dataDir);
  const path = `${dataDir}/history/${file}`;
  const row5 = (await Deno.readTextFile(path)).split("\n")
    .find((l) => l.startsWith(`{"t":${T0 + 5000},`));
  assert.ok(row5 !== undefined, "bucket 5 was written");
  // Bucket 6, as the writer would write it: its first part reaches the file before the rest.
  const row6 = row5.replace(`{"t":${T0 + 5000},`, `{"t":${T0 + 6000},`);
  const cut = row6.indexOf(`"temp":`) + 12;
  assert.ok(row6.slice(0, cut).includes(`"p":"p0","d":"probe",`), "cut after the device");

  clock.wallMs = T0 + 100_000;
  rig = await startRig({ history: HISTORY, dataDir, clock, inventoryFile });
  try {
    const ask = async () => {
      const answer = await rig.json(
        `/v0/history/p0/probe?signal_id=temp&since_ms=${T0}&until_ms=${T0 + 99_999}`,
      );
      const metrics = await (await rig.get("/metrics")).text();
      const health = await rig.json("/v0/providers/health");
      return {
        seconds: answer.signals[0].points.map((p: { t_ms: number }) => (p.t_ms - T0) / 1000),
        incomplete: answer.incomplete ?? null,
        unreadable: [
          /^runtime_history_disk_rows_unreadable_total (\d+)$/m.exec(metrics)?.[1],
          health.history_disk.rows_unreadable_total,
        ],
      };
    };
    await Deno.writeTextFile(path, row6.slice(0, cut), { append: true });
    for (let q = 1; q <= 2; q++) {
      assert.deepEqual(await ask(), {
        seconds: [1, 2, 3, 4, 5],
        incomplete: null,
        unreadable: ["0", 0],
      }, `question ${q}: the row being written is not a row yet`);
    }
    await Deno.writeTextFile(path, `${row6.slice(cut)}\n`, { append: true });
    assert.deepEqual(await ask(), {
      seconds: [1, 2, 3, 4, 5, 6],
      incomplete: null,
      unreadable: ["0", 0],
    }, "whole now: given, never counted");
  } finally {
    await rig.rt.stop();
  }
});
