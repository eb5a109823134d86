/**
 * A seeded property test of the seam between the ring (memory) and the disk tier: a pseudo-random
 * walk of polls of two devices (times mostly increasing, sometimes equal, now and then a wall clock
 * stepped back or forward), restarts over the same folder of real files, and a ring of 10 s (the
 * least history.memory_seconds allows) so the seam moves all the time; after each step a question
 * over a random range, full rate and in buckets, is compared with a plain model: every sample
 * polled, each counted once (docs/history.md: the disk tier survives restarts, the open bucket is
 * written at stop and a restart within it answers both runs' samples; a question over times
 * repeated by a step back is answered from both periods; disk_max_bytes is set so nothing is
 * removed). The model holds nothing the docs do not promise: per bucket of the disk step, the
 * count and the min and max of the values (a bucket's `last` across a step back is not promised
 * an order), points in time order, `incomplete` null.
 *
 * A failure names its seed; `HISTORY_SEAM_SEED=<seed>` runs that seed alone, and prints its steps.
 */
import assert from "node:assert/strict";
import type { DeviceState, SignalState } from "../../src/state/mod.ts";
import type { HistoryAnswer } from "../../src/history/mod.ts";
import { journalFiles } from "../../src/host/mod.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { tempDir, testLogger } from "../helpers/kernel.ts";
import { prng } from "../helpers/prng.ts";

/** Seeds the suite walks (a replay sets HISTORY_SEAM_SEED instead). */
const SEAM_SEEDS = 12;
/** Steps of each seed's walk (each followed by two questions). */
const SEAM_STEPS = 70;
/** The disk tier's bucket: the least history.step_ms allows. */
const STEP_MS = 1000;
/** A 10 s ring; disk files of 16 KiB (disk_max_bytes / 16): none is removed in a walk. */
const HISTORY = {
  stepMs: STEP_MS,
  memorySeconds: 10,
  memoryMaxBytes: 1 << 20,
  diskMaxBytes: 256 * 1024,
};
const T0 = 1_700_000_000_000;
const DEVICES = ["d0", "d1"] as const;
/** Signal a changes at every poll; b every few polls (a ring keeps only its changes). */
const SIGNALS = ["a", "b"] as const;

interface Sample {
  readonly device: string;
  readonly signal: string;
  readonly t: number;
  readonly v: number;
}

/** Per bucket start: count, min and max of the values (a signal's). */
type Folded = Map<number, { count: number; min: number; max: number }>;

function foldInto(out: Folded, t: number, count: number, min: number, max: number, wide: number) {
  const b = t - (((t % wide) + wide) % wide);
  const cur = out.get(b);
  if (cur === undefined) out.set(b, { count, min, max });
  else {
    cur.count += count;
    cur.min = Math.min(cur.min, min);
    cur.max = Math.max(cur.max, max);
  }
}

function sorted(f: Folded): [number, { count: number; min: number; max: number }][] {
  return [...f].sort((x, y) => x[0] - y[0]).map(([t, v]) => [t - T0, v]);
}

/** One walk: its steps' log is thrown with the first difference from the model. */
async function walk(seed: number, trace: boolean): Promise<void> {
  const rnd = prng(seed);
  const int = (lo: number, hi: number) => lo + Math.floor(rnd() * (hi - lo + 1));
  const dataDir = tempDir("history-seam-");
  const model: Sample[] = [];
  const steps: string[] = [];
  let counter = 0;
  const start = (wall: number, mono: number) => {
    const h = handFedHistory(HISTORY, journalFiles, testLogger(), dataDir);
    h.clock.wall = wall;
    h.clock.mono = mono;
    // A restarted runtime lists its devices again (its provider's inventory), polled or not yet.
    for (const d of DEVICES) {
      h.known.add(`p/${d}`);
      for (const s of SIGNALS) h.declaredTypes.set(`p/${d}/${s}`, "double");
    }
    return h;
  };
  let h = start(T0 + int(0, 5) * 1000, 1000);
  await h.history.start();
  const poll = (device: string) => {
    counter++;
    const values: Record<string, number> = { a: counter, b: Math.floor(counter / 4) };
    const signals = new Map<string, SignalState>();
    for (const s of SIGNALS) {
      signals.set(s, {
        value: { type: "double", double: values[s]! },
        quality: "OK",
        timestampMs: h.clock.wall,
        receivedMono: h.clock.mono,
      });
      model.push({ device, signal: s, t: h.clock.wall, v: values[s]! });
    }
    const dev: DeviceState = {
      providerId: "p",
      deviceId: device,
      pollable: [...SIGNALS],
      signals,
      lastPollMs: h.clock.wall,
      lastPollMono: h.clock.mono,
      available: true,
    };
    h.feed(dev);
    steps.push(`poll ${device} @${h.clock.wall - T0} mono ${h.clock.mono}`);
  };
  try {
    for (let step = 0; step < SEAM_STEPS; step++) {
      const op = rnd();
      if (op < 0.07) {
        // A restart over the same folder: the next run starts ahead of, at or behind the last.
        const wall = h.clock.wall + int(-20, 20) * 500 + int(0, 1) * int(0, 499);
        const mono = h.clock.mono + 1000;
        await h.history.stop();
        steps.push(`restart @${wall - T0} mono ${mono}`);
        h = start(wall, mono);
        await h.history.start();
      } else if (op < 0.15) {
        const back = rnd() < 0.5 ? int(1, 3000) : int(3000, 25_000);
        h.clock.stepWall(-back);
        steps.push(`step back ${back}`);
      } else if (op < 0.18) {
        const ahead = int(1, 30_000);
        h.clock.stepWall(ahead);
        steps.push(`step ahead ${ahead}`);
      } else {
        const dt = rnd() < 0.15 ? 0 : int(1, 1500);
        await h.clock.advanceAsync(dt);
      }
      // Asked too before the poll that follows (a clock stepped back or ahead, or time passed,
      // with no poll since): after a step back, before the next poll.
      if (op < 0.18 || rnd() < 0.2) await check(step);
      const which = rnd();
      if (which < 0.45) poll("d0");
      else if (which < 0.9) poll("d1");
      else {
        poll("d0");
        poll("d1");
      }
      await check(step);
    }
  } catch (e) {
    const message = e instanceof Error ? e.message : String(e);
    throw new Error(
      `seed ${seed} (replay: HISTORY_SEAM_SEED=${seed}): ${message}\nsteps (times since T0):\n  ` +
        steps.join("\n  "),
      { cause: e },
    );
  } finally {
    await h.history.stop();
  }
  if (trace) console.log(`seed ${seed}:\n  ${steps.join("\n  ")}`);

  /** Two questions of a random device and range, compared with the model. */
  async function check(step: number): Promise<void> {
    const device = DEVICES[int(0, DEVICES.length - 1)]!;
    const times = model.filter((s) => s.device === device).map((s) => s.t);
    if (times.length === 0) return;
    const lo = Math.min(...times) - 3000;
    const hi = Math.max(...times) + 3000;
    for (const stepMs of [0, [1000, 2000, 5000][int(0, 2)]!]) {
      const wide = Math.max(stepMs, STEP_MS);
      // Aligned to the buckets: no bucket lies partly in the range.
      const since = Math.floor(int(lo, hi) / wide) * wide;
      // Sometimes to past the newest sample, else 1..40 buckets.
      const buckets = rnd() < 0.2 ? Math.ceil((hi - since) / wide) + 1 : int(1, 40);
      const q = { since, until: since + buckets * wide - 1, stepMs };
      steps.push(
        `  ask ${device} ${q.since - T0}..${q.until - T0}` + (stepMs ? ` step ${stepMs}` : ""),
      );
      const answer: HistoryAnswer = await h.history.query({
        providerId: "p",
        deviceId: device,
        signalIds: [...SIGNALS],
        sinceMs: q.since,
        untilMs: q.until,
        stepMs,
      });
      const where = `step ${step}, ${device} ${q.since - T0}..${q.until - T0}` +
        ` step_ms ${stepMs} (source ${answer.source}, memory_from_ms ${
          answer.memory_from_ms === null ? null : answer.memory_from_ms - T0
        })`;
      assert.equal(answer.incomplete, null, `${where}: incomplete`);
      for (const signal of SIGNALS) {
        const want: Folded = new Map();
        for (const s of model) {
          if (s.device === device && s.signal === signal && s.t >= q.since && s.t <= q.until) {
            foldInto(want, s.t, 1, s.v, s.v, wide);
          }
        }
        const series = answer.signals.find((x) => x.signal_id === signal);
        const points = series?.points ?? [];
        const got: Folded = new Map();
        let prev = -Infinity;
        for (const p of points) {
          const inOrder = stepMs === 0 ? p.t_ms >= prev : p.t_ms > prev;
          assert.ok(inOrder, `${where}: ${signal}'s points out of order at ${p.t_ms - T0}`);
          prev = p.t_ms;
          foldInto(got, p.t_ms, p.count, p.min as number, p.max as number, wide);
        }
        assert.deepEqual(
          sorted(got),
          sorted(want),
          `${where}: ${signal} per bucket [start, {count, min, max}]`,
        );
      }
    }
  }
}

const replay = Deno.env.get("HISTORY_SEAM_SEED");
const seeds = replay !== undefined
  ? [Number(replay)]
  : Array.from({ length: SEAM_SEEDS }, (_, i) => i + 1);

Deno.test(`History answers every sample once across the memory/disk seam, restarts and wall clock steps (${seeds.length} seeded walks of ${SEAM_STEPS} steps)`, async () => {
  for (const seed of seeds) await walk(seed, replay !== undefined);
});
