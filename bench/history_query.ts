/**
 * GET /v0/history's work when the disk tier answers (issue 37): a day of 10 s buckets written as
 * the runtime writes them (one row per device per bucket, devices interleaved), then
 * History.query for an hour of one signal (360 buckets) and a day of ten signals folded into
 * 60 s buckets (14,400 points), repeated; median and max in ms. Two machines: the demo (4 devices
 * plus the 10-signal device asked for) and ten such providers (40 devices plus it).
 *
 * Run: `deno run -A bench/history_query.ts`. Not a test; nothing is asserted.
 */
import type { Logger } from "../src/common/mod.ts";
import { BucketAcc, DiskTier, History, rowText } from "../src/history/mod.ts";
import { journalFiles, systemClock } from "../src/host/mod.ts";

const silent: Logger = { debug() {}, info() {}, warn() {}, error() {}, child: () => silent };
const STEP = 10_000;
const DAY = 86_400_000;
const END = 1_800_000_000_000;
const REPS = 5;

/** A point as a noisy sensor's bucket gives it. */
function point(t: number, k: number) {
  const acc = new BucketAcc();
  for (let i = 0; i < 100; i++) acc.add(true, 20 + k + Math.sin(t / 1e6 + i) * 0.5, null, 0);
  return acc.point(t);
}

async function machine(otherDevices: number): Promise<string> {
  const dir = await Deno.makeTempDir({ prefix: "bench-history-query-" });
  const disk = new DiskTier({
    files: journalFiles,
    dir: `${dir}/history`,
    maxBytes: 2 * 1024 * 1024 * 1024,
    clock: systemClock,
    log: silent,
  });
  await disk.open();
  const others = Array.from({ length: otherDevices }, (_, d) => `dev${d}`);
  const wideSignals = Array.from({ length: 10 }, (_, k) => `ch${k}`);
  const sixSignals = Array.from({ length: 6 }, (_, k) => `s${k}`);
  for (let t = END - DAY; t < END; t += STEP) {
    disk.write(
      rowText(t, "sim0", "wide", wideSignals.map((id, k) => [id, point(t, k)] as const)),
      t,
    );
    for (const d of others) {
      disk.write(rowText(t, "sim0", d, sixSignals.map((id, k) => [id, point(t, k)] as const)), t);
    }
    if ((t / STEP) % 50 === 0) await disk.flush(); // within DISK_QUEUE_ROWS
  }
  await disk.close();
  const history = new History({
    config: {
      enabled: true,
      memorySeconds: 120,
      memoryMaxBytes: 8 * 1024 * 1024,
      stepMs: STEP,
      diskMaxBytes: 2 * 1024 * 1024 * 1024,
      incidentBeforeS: 10,
      incidentAfterS: 5,
      incidentMaxCount: 100,
      incidentMaxBytes: 64 * 1024 * 1024,
    },
    dataDir: dir,
    files: journalFiles,
    clock: { ...systemClock, nowMs: () => END },
    log: silent,
    cache: {
      onDevicePolled: () => () => {},
      device: () => undefined,
      qualityNow: () => "OK",
      declaredType: () => null,
      declaredUnit: () => "",
      staleAfterMs: () => Infinity,
      boundsVersion: 0,
    }, // nothing is polled here
  });
  let bytes = 0;
  for await (const e of Deno.readDir(`${dir}/history`)) {
    bytes += (await Deno.stat(`${dir}/history/${e.name}`)).size;
  }
  const time = async (q: Parameters<History["query"]>[0]) => {
    const ms: number[] = [];
    let points = 0;
    for (let i = 0; i < REPS; i++) {
      const t0 = performance.now();
      const a = await history.query(q);
      ms.push(performance.now() - t0);
      points = a.signals.reduce((n, s) => n + s.points.length, 0);
    }
    ms.sort((a, b) => a - b);
    return `${ms[Math.floor(REPS / 2)]!.toFixed(0)} ms (max ${
      ms.at(-1)!.toFixed(0)
    }), ${points} points`;
  };
  const hour = await time({
    providerId: "sim0",
    deviceId: "wide",
    signalIds: ["ch0"],
    sinceMs: END - 3_600_000,
    untilMs: END,
  });
  const day = await time({
    providerId: "sim0",
    deviceId: "wide",
    signalIds: wideSignals,
    sinceMs: END - DAY,
    untilMs: END,
    stepMs: 60_000,
  });
  await Deno.remove(dir, { recursive: true });
  return `| ${otherDevices + 1} devices | ${(bytes / 1e6).toFixed(1)} MB | ${hour} | ${day} |`;
}

console.log("| machine | disk tier, a day | an hour of one signal | a day of ten (60 s step) |");
console.log("| ------- | ---------------- | --------------------- | ------------------------ |");
console.log(await machine(4));
console.log(await machine(40));
