/**
 * Measures what AlarmEngine.evaluateAll allocates per call when nothing changes (100 alarms,
 * 20 interlocks on an in-process programmable provider), in whichever V8 tiers the flags it runs
 * with allow. Prints one JSON line:
 * - `bytesPerEvaluation`: heap growth per evaluation in each of 3 passes of HEAP_ROUNDS. A
 *   scavenge inside a pass would hide what it allocated: the child's young generation is made
 *   large enough (--min-semi-space-size) that none runs, and each pass starts after a full gc.
 * - `objects`: every allocation made under evaluateAll during PROFILED_ROUNDS more evaluations
 *   (V8's sampling heap profiler, sampling every few bytes: each object), as `{size: count}`.
 *   Unoptimized code (interpreter, Sparkplug) boxes every double it reads from a field or
 *   computes into a HeapNumber (HEAP_NUMBER_BYTES); anything else is an object the code made.
 * Run by alarm_engine_test.ts as a child: `deno run -A --v8-flags=--expose-gc,<tier flags> this`.
 * With the argument `objects-only` (an unoptimizing tier: its heap growth is the HeapNumbers it
 * boxes, nothing to compare, and it compiles nothing while warming) it warms WARM_ROUNDS_UNOPTIMIZED
 * evaluations, measures no heap pass (`bytesPerEvaluation` is empty) and profiles the objects.
 */
import { Session } from "node:inspector";
import { AlarmEngine } from "../../src/alarms/mod.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { Inventory as InventoryPort } from "../../src/state/mod.ts";
import { dbl, Q, startProgrammable, T } from "../helpers/programmable_provider.ts";

/** Evaluations per measured pass. */
export const HEAP_ROUNDS = 5_000;
/** Evaluations before measuring (the tiers the flags allow compile it meanwhile). */
const WARM_ROUNDS = 20_000;
/**
 * Evaluations before profiling an unoptimizing tier: past its first evaluations' one-time
 * objects (feedback vectors, lazily compiled functions; gone from 10 on), far fewer than
 * WARM_ROUNDS (the interpreter takes seconds for those).
 */
const WARM_ROUNDS_UNOPTIMIZED = 200;
const PASSES = 3;
/** Evaluations under the heap profiler (it records each allocation: slow in the interpreter). */
const PROFILED_ROUNDS = 20;
/** The mean bytes between two samples of the heap profiler: small enough to see every object. */
const SAMPLING_INTERVAL = 4;

const MODES = ["heap-and-objects", "objects-only"] as const;
const mode = Deno.args[0] ?? "heap-and-objects";
if (!(MODES as readonly string[]).includes(mode)) {
  throw new Error(`_evaluation_heap.ts: mode "${mode}" is none of ${MODES.join(", ")}`);
}
const objectsOnly = mode === "objects-only";

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) throw new Error("run with --v8-flags=--expose-gc");

const alarms = Array.from(
  { length: 100 },
  (_, i) => `  - { id: a${i}, signal: p0/probe/temp, lo: -1000, hi: ${1000 + i}, hysteresis: 1 }`,
).join("\n");
const interlocks = Array.from(
  { length: 20 },
  (_, i) =>
    `  - { id: i${i}, block: [p0/probe/f], message: m, while: "p0/probe/temp > ${900 + i} or ` +
    `p0/probe/mode == 'x' and not bad(p0/probe/on) or p0/probe/on == true" }`,
).join("\n");
const r = loadConfig(
  `providers: [{id: p0, command: prov}]\nalarms:\n${alarms}\ninterlocks:\n${interlocks}\n`,
  {
    path: "/etc/rig/runtime.yaml",
    mode: "check",
    env: {},
    fileExists: () => false,
    commandExists: () => true,
    cwd: "/",
  },
);
if (r.config === undefined || r.config === null) throw new Error("configuration refused");

const fx = await startProgrammable({
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE },
        { id: "mode", type: T.STRING },
        { id: "on", type: T.BOOL },
      ],
      values: [
        dbl("temp", 25),
        { id: "mode", type: T.STRING, string: "open", quality: Q.OK },
        { id: "on", type: T.BOOL, bool: false, quality: Q.OK },
      ],
    },
  },
}, { inProcess: true, mono: 1_000, staleness: { warnAfterMs: 0, staleAfterMs: 1000 } });
const bus = new EventBus();
const events: RuntimeEvent[] = [];
bus.subscribe((e) => events.push(e.event));
const engine = new AlarmEngine({
  alarms: r.config.alarms,
  interlocks: r.config.interlocks,
  cache: fx.cache,
  inventory: new InventoryPort(fx.registry),
  bus,
  // Small-integer times: a real clock's are doubles, and reading one boxes a number per read, as
  // the cache's own reading does; what is measured is the engine's own work. No timer fires.
  clock: {
    nowMs: () => 1_000_000,
    monoMs: () => 1_000,
    setTimer: () => 1,
    clearTimer: () => {},
  },
  log: new LineLogger({ level: "debug", journald: false, now: () => 0, write: () => {} }),
  actions: { fault: () => Promise.resolve(), estop: () => Promise.resolve() },
});
try {
  await fx.cache.pollDevice("p0", "probe");
  engine.start();
  const warmRounds = objectsOnly ? WARM_ROUNDS_UNOPTIMIZED : WARM_ROUNDS;
  for (let i = 0; i < warmRounds; i++) engine.evaluateAll();
  const perEvaluation: number[] = [];
  for (let pass = 0; pass < (objectsOnly ? 0 : PASSES); pass++) {
    gc();
    const before = Deno.memoryUsage().heapUsed;
    for (let i = 0; i < HEAP_ROUNDS; i++) engine.evaluateAll();
    const after = Deno.memoryUsage().heapUsed;
    perEvaluation.push(Math.round(((after - before) / HEAP_ROUNDS) * 10) / 10);
  }
  const objects = await profiled(() => {
    for (let i = 0; i < PROFILED_ROUNDS; i++) engine.evaluateAll();
  });
  if (events.length !== 0) throw new Error(`nothing changes, yet ${events.length} events`);
  console.log(JSON.stringify({
    bytesPerEvaluation: perEvaluation,
    rounds: HEAP_ROUNDS,
    objects,
    profiledRounds: PROFILED_ROUNDS,
  }));
} finally {
  engine.stop();
  await fx.close();
}

interface ProfileNode {
  callFrame: { functionName: string };
  id: number;
  children: ProfileNode[];
}

/** The objects `run` allocates under evaluateAll, by size: `{size: count}`. */
async function profiled(run: () => void): Promise<Record<string, number>> {
  const session = new Session();
  session.connect();
  const post = (method: string, params: object = {}) =>
    new Promise<unknown>((resolve, reject) =>
      session.post(method, params, (err, r) => err ? reject(err) : resolve(r))
    );
  try {
    await post("HeapProfiler.enable");
    await post("HeapProfiler.startSampling", {
      samplingInterval: SAMPLING_INTERVAL,
      includeObjectsCollectedByMajorGC: true,
      includeObjectsCollectedByMinorGC: true,
    });
    run();
    const { profile } = await post("HeapProfiler.stopSampling") as {
      profile: { head: ProfileNode; samples: { size: number; nodeId: number }[] };
    };
    // The nodes at or below evaluateAll (the profiler's own messages are elsewhere).
    const under = new Set<number>();
    const walk = (n: ProfileNode, inside: boolean): void => {
      const here = inside || n.callFrame.functionName === "evaluateAll";
      if (here) under.add(n.id);
      for (const c of n.children) walk(c, here);
    };
    walk(profile.head, false);
    const bySize: Record<string, number> = {};
    for (const s of profile.samples) {
      if (under.has(s.nodeId)) bySize[s.size] = (bySize[s.size] ?? 0) + 1;
    }
    return bySize;
  } finally {
    session.disconnect();
  }
}
