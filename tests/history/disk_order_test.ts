/**
 * The disk tier's reader bisects each file by time and stops at a device's first row past the
 * range: it needs rows to ascend within a file. A device polled each minute, or whose provider is
 * down, wrote its bucket at its own next poll -- after later rows of the others; a wall clock
 * stepped back wrote rows back in time. Now every open bucket is written once the polls have
 * crossed into a later bucket, and a step back begins a new file whose rows the reader also reads.
 * A real History fed by hand; the disk tier on in-memory files.
 */
import assert from "node:assert/strict";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import type { MemoryFiles } from "../helpers/memory_files.ts";
import type { DeviceState, SignalState } from "../../src/state/mod.ts";

const T0 = 1_700_000_000_000;

/** Every row's `[file, t, device]`, file by file, in file order. */
async function rows(files: MemoryFiles): Promise<[string, number, string][]> {
  const out: [string, number, string][] = [];
  for (const name of (await files.listNames("/data/history")).sort()) {
    for (const line of files.text(`/data/history/${name}`).split("\n")) {
      if (line === "") continue;
      const row = JSON.parse(line);
      out.push([name, row.t, `${row.p}/${row.d}`]);
    }
  }
  return out;
}

Deno.test("rows ascend along the disk tier's files: a slow device's bucket and a down provider's are written once their time has passed", async () => {
  const { clock, history, poll, files } = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  clock.wall = T0;
  await history.start();
  try {
    for (let s = 0; s < 300; s++) {
      poll("fast", "a", s);
      if (s % 60 === 0) poll("slow", "s", s); // a poll hint of a minute
      if (s <= 5 || s >= 200) poll("down", "d", s); // its provider down from 6 s to 199 s
      clock.wall += 1000;
    }
    await history.flushDisk();
    const written = await rows(files);
    const out = written.filter((r, i) => i > 0 && r[1] < written[i - 1]![1]);
    assert.deepEqual(out, [], "no row is earlier than the row before it");
    assert.deepEqual(
      written.filter((r) => r[2] === "slow/s").map((r) => (r[1] - T0) / 1000),
      [0, 60, 120, 180, 240],
    );
    // The down device's last bucket before its outage is answered from the disk.
    const answer = await history.query({
      providerId: "down",
      deviceId: "d",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 210_999,
      stepMs: 1000,
    });
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => (p.t_ms - T0) / 1000),
      [0, 1, 2, 3, 4, 5, ...Array.from({ length: 11 }, (_, k) => 200 + k)],
    );
  } finally {
    await history.stop();
  }
});

Deno.test("a wall clock stepped back: the rows after the step begin a new file, and a question over the repeated times gets both", async () => {
  const { clock, history, poll, files } = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  clock.wall = T0;
  await history.start();
  try {
    for (let s = 0; s < 100; s++) {
      poll("p", "a", s);
      clock.wall += 1000;
    }
    clock.wall = T0 + 50_000; // stepped back 50 s
    for (let s = 50; s <= 80; s++) {
      poll("p", "a", 1000 + s);
      clock.wall += 1000;
    }
    await history.flushDisk();
    const written = await rows(files);
    const names = [...new Set(written.map((r) => r[0]))];
    assert.equal(names.length, 2, "a new file at the step");
    for (const name of names) {
      const ts = written.filter((r) => r[0] === name).map((r) => r[1]);
      assert.deepEqual(ts, [...ts].sort((a, b) => a - b), `${name} ascends`);
    }
    assert.equal(written.find((r) => r[0] === names[1])![1], T0 + 50_000);
    const answer = await history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0 + 40_000,
      untilMs: T0 + 69_999, // before the ring's reach (the last 10 s)
      stepMs: 1000,
    });
    assert.equal(answer.source, "disk");
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.min, p.max, p.count]),
      Array.from({ length: 30 }, (_, k) => {
        const s = 40 + k;
        return s < 50 ? [s, s, s, 1] : [s, s, 1000 + s, 2];
      }),
      "each second before the step once; each after it from both files, in order",
    );
  } finally {
    await history.stop();
  }
});

Deno.test("a wall clock stepped back: the ring answers the polls of the repeated times of both periods, the disk tier the time before", async () => {
  const { clock, history, poll } = handFedHistory({ stepMs: 1000, memorySeconds: 60 });
  clock.wall = T0;
  await history.start();
  try {
    for (let s = 0; s < 30; s++) {
      poll("p", "a", s);
      clock.wall += 1000;
    }
    clock.wall = T0 + 10_000; // stepped back 20 s
    for (let s = 10; s < 20; s++) {
      poll("p", "a", 1000 + s);
      clock.wall += 1000;
    }
    const answer = await history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + 19_999,
    });
    assert.equal(answer.source, "memory+disk");
    assert.equal(answer.memory_from_ms, T0 + 10_000, "the ring from the step");
    assert.equal(answer.incomplete, null);
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.last]),
      Array.from({ length: 10 }, (_, s) => [s, s]).concat(
        Array.from({ length: 10 }, (_, k) => [[10 + k, 10 + k], [10 + k, 1010 + k]]).flat(),
      ),
      "the disk's buckets before the step's time, every poll of both periods since",
    );
    // The default range (the last memory_seconds) shows the polls of both periods, full rate.
    const recent = await history.query({ providerId: "p", deviceId: "a", signalIds: ["x"] });
    assert.deepEqual(
      recent.signals[0]!.points.filter((p) => p.t_ms >= T0 + 10_000).map((p) => p.last),
      [...Array.from({ length: 10 }, (_, k) => [10 + k, 1010 + k]).flat(), 20],
    );
  } finally {
    await history.stop();
  }
});

/**
 * A history (1 s buckets, a 60 s ring; `more` options too) fed one poll a second from T0 to T0+30 s
 * (value = its second), then the wall clock stepped back 20 s and two more polls (T0+11 s and 12 s,
 * values 1011 and 1012).
 */
async function steppedBack20s(more: Partial<Parameters<typeof handFedHistory>[0]> = {}) {
  const { clock, history, poll } = handFedHistory({ stepMs: 1000, memorySeconds: 60, ...more });
  clock.wall = T0;
  await history.start();
  for (let s = 0; s <= 30; s++) {
    poll("p", "a", s);
    clock.wall += 1000;
  }
  clock.wall = T0 + 11_000; // stepped back 20 s
  for (let s = 11; s <= 12; s++) {
    poll("p", "a", 1000 + s);
    clock.wall += 1000;
  }
  return history;
}

Deno.test("a wall clock stepped back: a question over the repeated times gets the ring's polls from before the step too, not only those since", async () => {
  const history = await steppedBack20s();
  try {
    const q = { providerId: "p", deviceId: "a", signalIds: ["x"], sinceMs: T0 };
    const full = await history.query({ ...q, untilMs: T0 + 40_000 });
    assert.equal(full.incomplete, null);
    assert.equal(full.source, "memory+disk");
    assert.deepEqual(
      full.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.last]),
      [
        ...Array.from({ length: 11 }, (_, s) => [s, s]),
        [11, 11],
        [11, 1011],
        [12, 12],
        [12, 1012],
        ...Array.from({ length: 18 }, (_, k) => [13 + k, 13 + k]),
      ],
      "every poll of the first period, those of the repeated times before the step's polls",
    );
    const stepped = await history.query({ ...q, untilMs: T0 + 40_000, stepMs: 1000 });
    assert.equal(stepped.incomplete, null);
    assert.deepEqual(
      stepped.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.min, p.max, p.count]),
      Array.from(
        { length: 31 },
        (_, s) => s === 11 || s === 12 ? [s, s, 1000 + s, 2] : [s, s, s, 1],
      ),
      "each second once, the two repeated ones from both periods",
    );
  } finally {
    await history.stop();
  }
});

Deno.test("a wall clock stepped back without a disk tier: the ring's polls from before the step that the answer holds are after its memory_from_ms, as points before it are the disk tier's", async () => {
  const history = await steppedBack20s({ diskMaxBytes: 0 });
  try {
    const q = { providerId: "p", deviceId: "a", signalIds: ["x"], sinceMs: T0 + 5000 };
    const full = await history.query({ ...q, untilMs: T0 + 40_000 });
    assert.equal(full.source, "memory");
    assert.equal(full.disk_step_ms, null);
    const points = full.signals[0]!.points;
    assert.equal(points[0]!.t_ms, T0 + 5000, "the first period's polls from since_ms");
    assert.equal(full.memory_from_ms, T0 + 5000, "the ring's part begins at its first point");
    assert.ok(points.every((p) => p.t_ms >= full.memory_from_ms!));
  } finally {
    await history.stop();
  }
});

Deno.test("a wall clock behind the disk tier's last row at start (stepped back across a restart) begins a new file", async () => {
  const first = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  first.clock.wall = T0;
  await first.history.start();
  for (let s = 0; s < 100; s++) {
    first.poll("p", "a", s);
    first.clock.wall += 1000;
  }
  await first.history.stop();
  // The next start: the clock is 50 s behind the last row (an RTC-less board before NTP).
  const next = handFedHistory({ stepMs: 1000, memorySeconds: 10 }, first.files);
  next.clock.wall = T0 + 50_000;
  await next.history.start();
  try {
    for (let s = 50; s <= 80; s++) {
      next.poll("p", "a", 1000 + s);
      next.clock.wall += 1000;
    }
    await next.history.flushDisk();
    const written = await rows(next.files);
    const names = [...new Set(written.map((r) => r[0]))];
    assert.equal(names.length, 2, "a new file at the start");
    assert.equal(written.find((r) => r[0] === names[1])![1], T0 + 50_000);
    const answer = await next.history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0 + 45_000,
      untilMs: T0 + 59_999,
      stepMs: 1000,
    });
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.count]),
      Array.from({ length: 15 }, (_, k) => [45 + k, k < 5 ? 1 : 2]),
      "both runs' rows of the repeated times",
    );
  } finally {
    await next.history.stop();
  }
});

Deno.test("a device row stays within what the disk tier reads back (DISK_MAX_ROW_BYTES): a long string signal does not cost its device's other signals their disk history", async () => {
  // A device with a number and a string of 1,100,000 characters (a JSON status, a base64 frame):
  // its bucket row was written whole, longer than DISK_MAX_ROW_BYTES, and skipped as damaged when
  // read back, so even the number had no disk history.
  const { clock, history, feed } = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  clock.wall = T0;
  await history.start();
  try {
    const signals = new Map<string, SignalState>();
    const dev: DeviceState = {
      providerId: "p0",
      deviceId: "spec0",
      pollable: ["temp", "status"],
      signals,
      lastPollMs: 0,
      lastPollMono: 0,
      available: true,
    };
    for (let s = 0; s < 30; s++) {
      const at = { quality: "OK" as const, timestampMs: clock.wall, receivedMono: clock.mono };
      signals.set("temp", { ...at, value: { type: "double", double: s } });
      signals.set("status", {
        ...at,
        value: { type: "string", string: `${s}:`.padEnd(1_100_000, "x") },
      });
      feed(dev);
      clock.wall += 1000;
    }
    await history.flushDisk();
    const answer = await history.query({
      providerId: "p0",
      deviceId: "spec0",
      signalIds: ["temp"],
      sinceMs: T0,
      untilMs: T0 + 9_999,
      stepMs: 1000,
    });
    assert.equal(answer.source, "disk");
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => p.last),
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
      "temp's first ten seconds, from the disk tier",
    );
    // The string's buckets are there too, counted, without the value too long to keep.
    const status = await history.query({
      providerId: "p0",
      deviceId: "spec0",
      signalIds: ["status"],
      sinceMs: T0,
      untilMs: T0 + 9_999,
      stepMs: 1000,
    });
    assert.deepEqual(
      status.signals[0]!.points.map((p) => [p.last, p.count]),
      Array(10).fill([null, 1]),
    );
  } finally {
    await history.stop();
  }
});

Deno.test("many wall clock steps back (a board without a real-time clock) keep every row while the files are within disk_max_bytes", async () => {
  const { clock, history, poll, files } = handFedHistory({
    stepMs: 1000,
    memorySeconds: 10,
    diskMaxBytes: 1024 * 1024,
  });
  clock.wall = T0;
  await history.start();
  const periods = 40;
  try {
    // Each period polls 20 s, then the clock steps back 10 s: a new (small) file each time.
    for (let k = 0; k < periods; k++) {
      clock.wall = T0 + k * 10_000;
      for (let s = 0; s < 20; s++) {
        poll("p", "a", k * 100 + s);
        clock.wall += 1000;
      }
    }
    await history.flushDisk();
    const names = await files.listNames("/data/history");
    let bytes = 0;
    for (const name of names) bytes += files.text(`/data/history/${name}`).length;
    assert.ok(bytes < 100_000, `small files: ${bytes} bytes`);
    assert.equal(names.length, periods, "a file per period, none removed");
    const answer = await history.query({
      providerId: "p",
      deviceId: "a",
      signalIds: ["x"],
      sinceMs: T0,
      untilMs: T0 + (periods - 1) * 10_000 - 1, // before the ring's reach (the last period)
      stepMs: 1000,
    });
    assert.equal(answer.source, "disk");
    assert.deepEqual(
      answer.signals[0]!.points.map((p) => [(p.t_ms - T0) / 1000, p.count]),
      Array.from({ length: (periods - 1) * 10 }, (_, s) => [s, s < 10 ? 1 : 2]),
      "every second of every period, the repeated ones from both files",
    );
  } finally {
    await history.stop();
  }
});

Deno.test("the disk tier's files stay within disk_max_bytes together, the oldest removed past it", async () => {
  const max = 1024 * 1024;
  const { clock, history, pollSignals, files } = handFedHistory({
    stepMs: 1000,
    memorySeconds: 10,
    diskMaxBytes: max,
  });
  clock.wall = T0;
  await history.start();
  try {
    const ids = Array.from({ length: 40 }, (_, i) => `signal_${i}`);
    // ~1.3 KB a row: 2 MB in all, twice the bound, with a step back every 200 rows.
    for (let k = 0; k < 8; k++) {
      clock.wall = T0 + k * 190_000;
      for (let s = 0; s < 200; s++) {
        pollSignals(ids, Math.PI * (k * 1000 + s));
        clock.wall += 1000;
      }
    }
    await history.flushDisk();
    const names = await files.listNames("/data/history");
    let bytes = 0;
    for (const name of names) bytes += files.text(`/data/history/${name}`).length;
    assert.ok(bytes <= max, `${bytes} bytes in ${names.length} files, at most ${max}`);
    assert.ok(bytes > max / 2, `the oldest removed only past the bound: ${bytes} bytes kept`);
    assert.ok(!names.includes("history-00000001.jsonl"), "the oldest file removed");
  } finally {
    await history.stop();
  }
});
