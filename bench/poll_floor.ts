/**
 * MALLOC_ARENA_MAX=2 deno run -A --v8-flags=--max-semi-space-size=4 bench/poll_floor.ts
 *   [--providers 10] [--secs 40] [--rounds 2] [--out F]
 *
 * The floor under the runtime's device poll in this Deno (issue 39, item 2): the least any Deno
 * program must spend to poll the bench's simulated providers as the runtime does, and nothing
 * else. It spawns `--providers` sims (the bundle, `deno task bundle`; 4 devices each), says Hello,
 * then polls them on one shared timer on a grid: at each instant, for each provider, one write
 * holding a framed ReadSignals (all signals) for each device due, and a read kept pending on each
 * provider's stdout whose answers are split into frames and decoded -- the timer, pipe writes and
 * reads, framing and decoding the runtime cannot avoid; no cache, history, event bus, queue,
 * promise per request or health. The devices are due as the runtime polls the sim by its hints
 * at 100 ms (tempctl every instant, motorctl every 2nd, analogsensor every 5th, relayio every
 * 10th: 18 polls a second per provider) and every instant at 1000 ms (4 a second). CPU per
 * device poll is the figure: (CPU at 100 ms - CPU at 1000 ms) / (polls at 100 ms - polls
 * at 1000 ms), the CPU being this process's (`process.cpuUsage`, every thread) over `--secs` of
 * each interval; rounds alternate the two. Run it under the runtime's settings (the command
 * above) on a quiet machine, and compare with `side_by_side.ts`'s figure of the same session.
 * `--interval-ms 100|1000 --settle S --secs N`: one window only, to run beside `side_by_side.ts`
 * at the same interval (a wake-up's cost depends on how idle the whole machine is: a floor measured
 * alone and a runtime measured beside others do not compare). Each window's RSS (median of samples every RSS_EVERY_S) is reported as well: run at 1 and at 40
 * providers, its slope is the floor under item 3's memory per provider.
 * Not a test.
 */
import { parseArgs } from "node:util";
import { decodeResponse, encodeRequest } from "../src/adpp/codec.ts";
import { encodeFrame, FrameReader } from "../src/adpp/framing.ts";
import { ADPP_PROTOCOL_VERSION } from "../src/common/version.ts";
import { defaultCommands } from "./lib/args.ts";
import { BENCH_DEVICES, simProviderYaml } from "./lib/config_gen.ts";
import { median } from "./lib/stats.ts";

const { values } = parseArgs({
  args: Deno.args,
  options: {
    providers: { type: "string", default: "10" },
    secs: { type: "string", default: "40" },
    rounds: { type: "string", default: "2" },
    // One window at this interval (100 or 1000) after --settle seconds, no rounds: to run beside
    // side_by_side.ts at the same interval, so that both see the same machine.
    "interval-ms": { type: "string" },
    settle: { type: "string", default: "3" },
    out: { type: "string" },
  },
});
const PROVIDERS = Number(values.providers);
const SECS = Number(values.secs);
const ROUNDS = Number(values.rounds);
/** How long each interval runs before its window (the sims' and this process's pace settled). */
const SETTLE_MS = Number(values.settle) * 1000;
const ONLY_INTERVAL_MS = values["interval-ms"] === undefined ? null : Number(values["interval-ms"]);
if (ONLY_INTERVAL_MS !== null && ONLY_INTERVAL_MS !== 100 && ONLY_INTERVAL_MS !== 1000) {
  console.error(`--interval-ms: 100 or 1000, not ${values["interval-ms"]}`);
  Deno.exit(2);
}
/** Seconds between RSS samples in a window (the RSS reported is their median). */
const RSS_EVERY_S = 2;
/** Bound on the Hello of one sim. */
const HELLO_TIMEOUT_MS = 10_000;
/** Every how many 100 ms instants each device is due (the sim's poll hints, above). */
const EVERY_NTH_AT_100_MS: Readonly<Record<string, number>> = {
  [BENCH_DEVICES.tempctl]: 1,
  [BENCH_DEVICES.motorctl]: 2,
  [BENCH_DEVICES.analogsensor]: 5,
  [BENCH_DEVICES.relayio]: 10,
};
const DEVICES = Object.keys(EVERY_NTH_AT_100_MS);

const REPO = new URL("../", import.meta.url).pathname;
const simMain = `${REPO}dist/bundle/sim/main.js`;
try {
  Deno.statSync(simMain);
} catch {
  console.error(`${simMain} is missing: run \`deno task bundle\` first`);
  Deno.exit(2);
}
const dir = await Deno.makeTempDir({ prefix: "poll-floor-" });
const simYaml = `${dir}/sim.yaml`;
await Deno.writeTextFile(simYaml, simProviderYaml());

interface Sim {
  readonly child: Deno.ChildProcess;
  readonly writer: WritableStreamDefaultWriter<Uint8Array>;
  readonly frames: FrameReader;
}

let polls = 0;
let requestId = 1;
let helloWaiting: (() => void) | null = null;
const onPayload = (buf: Uint8Array, start: number, end: number): void => {
  const res = decodeResponse(buf.subarray(start, end));
  if (res.read_signals !== undefined) polls++;
  else if (res.hello !== undefined) helloWaiting?.();
};
function readForever(sim: Sim): void {
  sim.frames.readFrames(onPayload).then((eof) => {
    if (!eof) readForever(sim);
  }, () => {});
}

const [cmd, ...args] = defaultCommands(REPO).provider;
const sims: Sim[] = [];
for (let i = 0; i < PROVIDERS; i++) {
  const child = new Deno.Command(cmd!, {
    args: [...args, "--config", simYaml],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const sim: Sim = {
    child,
    writer: child.stdin.getWriter(),
    frames: new FrameReader(child.stdout),
  };
  const hello = new Promise<void>((resolve, reject) => {
    helloWaiting = resolve;
    setTimeout(() => reject(new Error(`sim${i}: no Hello answer`)), HELLO_TIMEOUT_MS);
  });
  readForever(sim);
  await sim.writer.write(encodeFrame(encodeRequest({
    request_id: requestId++,
    hello: { protocol_version: ADPP_PROTOCOL_VERSION, client_name: "poll-floor" },
  })));
  await hello;
  sims.push(sim);
}

/**
 * One instant's write for one provider: a framed ReadSignals per device due, concatenated; made
 * once per set of devices (the sims do not check request ids; the runtime writes only the id).
 */
const passes = new Map<string, Uint8Array>();
function passBytes(due: readonly string[]): Uint8Array {
  const key = due.join(",");
  const made = passes.get(key);
  if (made !== undefined) return made;
  const frames = due.map((device_id) =>
    encodeFrame(encodeRequest({
      request_id: requestId++,
      read_signals: { device_id, signal_ids: [] },
    }))
  );
  const out = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) {
    out.set(f, at);
    at += f.length;
  }
  passes.set(key, out);
  return out;
}

let intervalMs = 100;
let instant = 0;
let timer: ReturnType<typeof setTimeout> | undefined;
const gridOrigin = performance.now();
function onInstant(): void {
  const k = instant++;
  const due = intervalMs === 100
    ? DEVICES.filter((d) => k % EVERY_NTH_AT_100_MS[d]! === 0)
    : DEVICES;
  for (const sim of sims) sim.writer.write(passBytes(due)).catch(() => {});
  const now = performance.now();
  const next = gridOrigin + Math.ceil((now - gridOrigin + 1) / intervalMs) * intervalMs;
  timer = setTimeout(onInstant, next - now);
}
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const cpuUs = () => {
  const u = process.cpuUsage();
  return u.user + u.system;
};
const rssMiB = () =>
  Number(/VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/self/status"))![1]) / 1024;
async function window(
  ms: number,
): Promise<{ cpuPct: number; pollsPerS: number; rssMiB: number }> {
  intervalMs = ms;
  instant = 0;
  await sleep(SETTLE_MS);
  const c0 = cpuUs();
  const p0 = polls;
  const rss: number[] = [];
  for (let t = 0; t < SECS; t += RSS_EVERY_S) {
    await sleep(Math.min(RSS_EVERY_S, SECS - t) * 1000);
    rss.push(rssMiB());
  }
  return {
    cpuPct: (cpuUs() - c0) / SECS / 1e4,
    pollsPerS: (polls - p0) / SECS,
    rssMiB: median(rss),
  };
}

const rounds: { at100: Awaited<ReturnType<typeof window>>; at1000: typeof rounds[0]["at100"] }[] =
  [];
try {
  onInstant();
  if (ONLY_INTERVAL_MS !== null) {
    const w = await window(ONLY_INTERVAL_MS);
    console.log(
      `${ONLY_INTERVAL_MS} ms: ${w.cpuPct.toFixed(2)} % CPU, ${w.pollsPerS.toFixed(1)} polls/s, ` +
        `RSS ${w.rssMiB.toFixed(1)} MiB`,
    );
    if (values.out) {
      await Deno.writeTextFile(
        values.out,
        JSON.stringify({
          bench: "poll_floor",
          deno: Deno.version.deno,
          providers: PROVIDERS,
          secs: SECS,
          interval_ms: ONLY_INTERVAL_MS,
          ...w,
        }) + "\n",
      );
    }
  }
  for (let r = 1; ONLY_INTERVAL_MS === null && r <= ROUNDS; r++) {
    const at100 = await window(100);
    const at1000 = await window(1000);
    rounds.push({ at100, at1000 });
    const us = (at100.cpuPct - at1000.cpuPct) * 1e4 / (at100.pollsPerS - at1000.pollsPerS);
    console.log(
      `round ${r}: 100 ms ${at100.cpuPct.toFixed(2)} % CPU, ${
        at100.pollsPerS.toFixed(1)
      } polls/s, ` +
        `RSS ${at100.rssMiB.toFixed(1)} MiB; ` +
        `1000 ms ${at1000.cpuPct.toFixed(2)} %, ${at1000.pollsPerS.toFixed(1)} polls/s; ` +
        `${us.toFixed(1)} µs per device poll`,
    );
  }
  if (rounds.length > 0) {
    const perPoll = rounds.map(({ at100, at1000 }) =>
      (at100.cpuPct - at1000.cpuPct) * 1e4 / (at100.pollsPerS - at1000.pollsPerS)
    );
    console.log(`median ${median(perPoll).toFixed(1)} µs per device poll (${PROVIDERS} providers)`);
    if (values.out) {
      await Deno.writeTextFile(
        values.out,
        JSON.stringify(
          {
            bench: "poll_floor",
            deno: Deno.version.deno,
            providers: PROVIDERS,
            secs: SECS,
            rounds,
            per_poll_us: perPoll,
          },
          null,
          2,
        ) + "\n",
      );
    }
  }
} finally {
  clearTimeout(timer);
  for (const sim of sims) {
    await sim.writer.close().catch(() => {});
    await sim.child.status;
  }
  await Deno.remove(dir, { recursive: true });
}
