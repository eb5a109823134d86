/**
 * Reading a run never stalls writing one: reads stay out of the write queue, and a page of a large
 * run costs O(page size) through the sparse event index.
 */
import {
  deepStrictEqual as deepEqual,
  ok,
  rejects,
  strictEqual as equal,
} from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { SEEK_LINEAR_BYTES } from "../../src/journal/mod.ts";
import { type RunEvent, RunRegistry } from "../../src/runs/mod.ts";
import { SwitchableFiles } from "../helpers/journal_files.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";

const T0 = 1760000000000;
const ULID = "01JB0Z8Q6M5S2K7T9V3W4X5Y6Z";
const BIG_RUN = `lab1-${ULID}`;

function event(sequence: number): RunEvent {
  return {
    schema_version: 1,
    run_id: BIG_RUN,
    sequence,
    category: "annotation",
    type: "sample",
    occurred_at_epoch_ms: T0 + sequence,
    recorded_at_epoch_ms: T0 + sequence,
    payload: { station: 4, n: sequence },
  };
}

/**
 * Writes a closed run of `n` events straight to disk (much faster than appending them through
 * the registry), with `junk` lines inserted after the given sequence numbers.
 */
async function writeBigRun(
  dataDir: string,
  n: number,
  junk: ReadonlyMap<number, string> = new Map(),
): Promise<void> {
  const parts: string[] = [];
  for (let i = 1; i <= n; i++) {
    parts.push(JSON.stringify(event(i)));
    const extra = junk.get(i);
    if (extra !== undefined) parts.push(extra);
  }
  await Deno.mkdir(`${dataDir}/runs`, { recursive: true });
  await Deno.writeTextFile(`${dataDir}/runs/${ULID}.jsonl`, parts.join("\n") + "\n");
  const run = {
    schema_version: 1,
    run_id: BIG_RUN,
    state: "open",
    close_reason: null,
    started_at_epoch_ms: T0,
    ended_at_epoch_ms: null,
    automation_version: null,
    runtime_version: "0.2.0",
    polling_interval_ms: 500,
    params: {},
    tag_scope: { provider_ids: [], device_ids: [], signal_ids: [] },
    experiment_label: "big",
  };
  const close = {
    v: 1,
    op: "close",
    run_id: BIG_RUN,
    close_reason: "completed",
    ended_at_epoch_ms: T0 + n + 1,
  };
  await Deno.writeTextFile(
    `${dataDir}/runs.jsonl`,
    `${JSON.stringify({ v: 1, op: "open", run })}\n${JSON.stringify(close)}\n`,
  );
}

async function withRegistry(
  fn: (r: RunRegistry, files: SwitchableFiles, dataDir: string) => Promise<void>,
  setup: (dataDir: string) => Promise<void> = () => Promise.resolve(),
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "runs_paging_" });
  const files = new SwitchableFiles();
  const registry = new RunRegistry({
    dataDir: `${dir}/data`,
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files,
    clock: systemClock,
    logger: testLogger(),
  });
  try {
    await setup(`${dir}/data`);
    await registry.start();
    await fn(registry, files, `${dir}/data`);
  } finally {
    await registry.shutdown();
    await Deno.remove(dir, { recursive: true });
  }
}

const sequences = (events: RunEvent[]) => events.map((e) => e.sequence);
/**
 * Lines a seek reads at most in these runs: two per bisection probe (about 20 for 20 MB), plus
 * the last SEEK_LINEAR_BYTES line by line (event lines here are over 150 bytes).
 */
const SEEK_LINES = 2 * 20 + Math.ceil(SEEK_LINEAR_BYTES / 150);
/** A number of events above one seek's linear part (pages cross it). */
const MANY = 256;
const range = (from: number, to: number) =>
  Array.from({ length: to - from + 1 }, (_, i) => from + i);

Deno.test("RunRegistry reads a page of a 100,000-event run in O(page size) lines", async () => {
  const N = 100_000;
  await withRegistry(async (registry, files) => {
    const first = await registry.listEvents(BIG_RUN, { offset: 99_900, limit: 100 });
    deepEqual(sequences(first.events), range(99_901, N));

    files.linesRead = 0;
    const page = await registry.listEvents(BIG_RUN, { offset: 99_900, limit: 100 });
    deepEqual(sequences(page.events), range(99_901, N));
    ok(
      files.linesRead <= SEEK_LINES + 100,
      `a page of 100 at offset 99,900 read ${files.linesRead} lines`,
    );

    files.linesRead = 0;
    const cursor = await registry.listEvents(BIG_RUN, { after_sequence: 99_900, limit: 100 });
    deepEqual(sequences(cursor.events), range(99_901, N));
    ok(
      files.linesRead <= SEEK_LINES + 100,
      `a page of 100 after sequence 99,900 read ${files.linesRead} lines`,
    );

    files.linesRead = 0;
    const middle = await registry.listEvents(BIG_RUN, { offset: 50_000, limit: 1000 });
    deepEqual(sequences(middle.events), range(50_001, 51_000));
    ok(files.linesRead <= SEEK_LINES + 1000, `${files.linesRead} lines`);
  }, (dataDir) => writeBigRun(dataDir, N));
});

Deno.test("RunRegistry answers each first read of a 100,000-event run after a start without reading the whole file", async () => {
  const N = 100_000;
  // Each read on a registry just started (nothing cached): the first page, a middle page and the
  // last page by cursor, and a page by offset. Before the fix the first read of a run indexed
  // its whole file (100,000 lines, 722 ms over HTTP); a page now reads its own lines plus a
  // bisection (a few probes and at most 64 KiB read line by line: ~300 lines of this run).
  const reads: Array<[string, Parameters<RunRegistry["listEvents"]>[1], number[]]> = [
    ["first page", {}, range(1, 200)],
    ["middle page by cursor", { after_sequence: 50_000 }, range(50_001, 50_200)],
    ["last page by cursor", { after_sequence: N - 200 }, range(N - 199, N)],
    ["page by offset", { offset: 70_000, limit: 100 }, range(70_001, 70_100)],
  ];
  for (const [what, page, want] of reads) {
    await withRegistry(async (registry, files) => {
      files.linesRead = 0;
      const got = await registry.listEvents(BIG_RUN, page);
      deepEqual(sequences(got.events), want, what);
      ok(files.linesRead <= SEEK_LINES + 200, `${what}: ${files.linesRead} lines read`);
    }, (dataDir) => writeBigRun(dataDir, N));
  }
});

Deno.test("RunRegistry appends a marker while three readers page through a 100,000-event run", async () => {
  await withRegistry(async (registry) => {
    const { run } = await registry.open({ experiment_label: "unrelated" });
    let stop = false;
    let pages = 0;
    const readers = [0, 1, 2].map(async () => {
      while (!stop) {
        const page = await registry.listEvents(BIG_RUN, { offset: 99_900, limit: 100 });
        equal(page.count, 100);
        pages++;
      }
    });
    try {
      const latencies: number[] = [];
      for (let i = 0; i < 5; i++) {
        const t = performance.now();
        await registry.addMarker(run.run_id, { type: `m${i}` });
        latencies.push(performance.now() - t);
      }
      // Requirement: an append waits at most 50 ms behind reads. The bound leaves room for the
      // marker's own fsync on a loaded machine; before the fix each marker took ~1 s.
      for (const ms of latencies) ok(ms < 300, `marker latencies ${latencies.map(Math.round)}`);
    } finally {
      stop = true;
      await Promise.all(readers);
    }
    ok(pages >= 3, `${pages} pages read`);
  }, (dataDir) => writeBigRun(dataDir, 100_000));
});

Deno.test("RunRegistry never queues an append behind a read", async () => {
  await withRegistry(async (registry, files) => {
    const { run } = await registry.open({});
    let release!: () => void;
    files.gate = new Promise<void>((r) => (release = r));
    const reading = registry.listEvents(run.run_id, {});
    try {
      await waitFor("the read to reach the file system", () => files.readsWaiting > 0);
      // The read is stuck in the file system; the marker must not wait for it.
      let timer: ReturnType<typeof setTimeout> | undefined;
      const outcome = await Promise.race([
        registry.addMarker(run.run_id, { type: "while reading" }).then(() => "appended"),
        new Promise<string>((r) => (timer = setTimeout(() => r("waited"), 2000))),
      ]);
      clearTimeout(timer);
      equal(outcome, "appended");
    } finally {
      release();
      files.gate = null;
    }
    // The read that started before the marker may or may not include it; a new one does.
    await reading;
    deepEqual(sequences((await registry.listEvents(run.run_id, {})).events), [1, 2]);
  });
});

Deno.test("RunRegistry pages an open run by cursor and sees every acknowledged marker", async () => {
  await withRegistry(async (registry) => {
    const { run } = await registry.open({});
    const id = run.run_id;
    const total = 2 * MANY + 10;
    for (let i = 2; i <= total; i++) await registry.addMarker(id, { type: `m${i}` });
    const seen: number[] = [];
    let after = 0;
    for (;;) {
      const page = await registry.listEvents(id, { after_sequence: after, limit: 100 });
      if (page.count === 0) break;
      seen.push(...sequences(page.events));
      after = page.events[page.count - 1]!.sequence;
      // Appends between pages are picked up by the next read.
      if (after === 300) await registry.addMarker(id, { type: "late" });
    }
    deepEqual(seen, range(1, total + 1));
    deepEqual(
      sequences((await registry.listEvents(id, { after_sequence: 5, offset: 2, limit: 3 })).events),
      [8, 9, 10],
    );
    equal((await registry.listEvents(id, { after_sequence: 10_000 })).count, 0);
    equal((await registry.listEvents(id, { offset: 10_000 })).count, 0);
    for (const bad of [-1, 1.5, Number.NaN]) {
      await rejects(registry.listEvents(id, { after_sequence: bad }), (err: unknown) => {
        ok(err instanceof RuntimeError);
        equal(err.code, "INVALID_ARGUMENT");
        ok(err.message.startsWith("after_sequence:"), err.message);
        return true;
      });
    }
  });
});

Deno.test("RunRegistry pages past corrupt, foreign and over-deep event lines consistently", async () => {
  const deep = JSON.stringify({
    ...event(0),
    payload: JSON.parse("[".repeat(200) + "]".repeat(200)),
  });
  const junk = new Map<number, string>([
    [10, "{torn"],
    [MANY, JSON.stringify({ ...event(1), run_id: "lab1-other" })],
    [MANY + 1, deep],
    [700, ""],
  ]);
  const N = 1000;
  await withRegistry(async (registry) => {
    const pages: number[] = [];
    for (let offset = 0; offset < N; offset += 97) {
      pages.push(...sequences((await registry.listEvents(BIG_RUN, { offset, limit: 97 })).events));
    }
    deepEqual(pages, range(1, N));
    deepEqual(
      sequences(
        (await registry.listEvents(BIG_RUN, { after_sequence: MANY, limit: 3 }))
          .events,
      ),
      range(MANY + 1, MANY + 3),
    );
  }, (dataDir) => writeBigRun(dataDir, N, junk));
});
