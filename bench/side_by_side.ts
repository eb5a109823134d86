/**
 * deno run -A bench/side_by_side.ts --cmd "<runtime cmd>" --cmd "<runtime cmd>" [--cmd ...]
 *   [--anolis-cmd "<anolis-runtime binary>"] [--providers 10] [--poll-ms 100] [--warm 40]
 *   [--secs 120] [--no-build] [--where] [--out F]
 *
 * Several runtimes idle-polling at once, each with its own `--providers` simulated providers x 4
 * devices at `--poll-ms`: after `--warm` seconds, each runtime's CPU (utime + stime of its own
 * process, /proc) over `--secs` as % of one core, and its RSS median over the same window (sampled
 * every SAMPLE_EVERY_S). Side by side, all see the same machine load, so the difference between
 * them is what a V8 flag or a bundle changes, not what the machine did meanwhile (the way the
 * V8-flag tables in bench/README.md are measured). Commands as for `deno task bench --runtime-cmd`
 * (the spawned pid must be the runtime: `env VAR=1 deno run ...` execs). `--where` adds, at the
 * window's end, where each runtime's RSS sits (/proc smaps, grouped as bench/lib/proc.ts's
 * SmapsGroups, MiB) and its V8 heap in use and reserved (GET /metrics; not for anolis), so a
 * difference in RSS can be told apart: the heap, malloc, or code. Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { anolisRuntimeYaml, runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import {
  clockTicksPerSecond,
  readProcStat,
  readRssKb,
  readSmapsGroups,
  type SmapsGroups,
} from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Seconds between RSS samples. */
const SAMPLE_EVERY_S = 2;
/**
 * After the CPU window, each runtime's polls a second (one at a time, so the sampling loads no
 * window it measures): GET /v0/state every RATE_EVERY_MS for RATE_SECS, each device's distinct
 * sample timestamps counted (its first signal's `timestamp_epoch_ms`, new at every poll).
 */
const RATE_SECS = 6;
const RATE_EVERY_MS = 25;
/** How long each runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    cmd: { type: "string", multiple: true },
    // The C++ anolis runtime's binary (its own config: anolisRuntimeYaml), measured beside them.
    "anolis-cmd": { type: "string", multiple: true },
    providers: { type: "string", default: "10" },
    "poll-ms": { type: "string", default: "100" },
    warm: { type: "string", default: "40" },
    secs: { type: "string", default: "120" },
    out: { type: "string" },
    "no-build": { type: "boolean", default: false },
    where: { type: "boolean", default: false },
  },
});
const anolisCmds = (values["anolis-cmd"] ?? []).map(splitCommand);
const cmds = [...(values.cmd ?? []).map(splitCommand), ...anolisCmds];
if (cmds.length < 1 || cmds.some((c) => c.length === 0)) {
  console.error('usage: deno run -A bench/side_by_side.ts --cmd "<runtime cmd>" [--cmd ...]');
  Deno.exit(2);
}
const providers = Number(values.providers);
const pollMs = Number(values["poll-ms"]);
const warmS = Number(values.warm);
const secs = Number(values.secs);

/** Device polls a second of the runtime at `baseUrl`, summed over its devices (RATE_SECS). */
async function pollsPerSecond(baseUrl: string): Promise<number> {
  const seen = new Map<string, Set<number>>();
  const t0 = performance.now();
  while (performance.now() - t0 < RATE_SECS * 1000) {
    const res = await fetch(`${baseUrl}/v0/state`);
    const body = await res.json() as {
      devices?: {
        provider_id: string;
        device_id: string;
        values?: { timestamp_epoch_ms?: number }[];
      }[];
    };
    for (const d of body.devices ?? []) {
      const t = d.values?.[0]?.timestamp_epoch_ms;
      if (t === undefined) continue;
      const key = `${d.provider_id}/${d.device_id}`;
      let times = seen.get(key);
      if (times === undefined) seen.set(key, times = new Set());
      times.add(t);
    }
    await new Promise((r) => setTimeout(r, RATE_EVERY_MS));
  }
  const secs = (performance.now() - t0) / 1000;
  let polls = 0;
  for (const times of seen.values()) polls += times.size - 1;
  return Math.round((polls / secs) * 10) / 10;
}

/** A runtime's V8 heap in use and reserved, MiB, from its Prometheus metrics. */
async function heapMiB(baseUrl: string): Promise<{ usedMiB: number; totalMiB: number }> {
  const text = await (await fetch(`${baseUrl}/metrics`)).text();
  const read = (name: string) => {
    const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
    return m ? Math.round(Number(m[1]) / 104857.6) / 10 : NaN;
  };
  return {
    usedMiB: read("runtime_process_heap_used_bytes"),
    totalMiB: read("runtime_process_heap_total_bytes"),
  };
}

/** SmapsGroups in MiB, one decimal. */
function smapsMiB(g: SmapsGroups | null): Record<string, number> | null {
  if (g === null) return null;
  return Object.fromEntries(
    Object.entries(g).map(([k, kb]) => [k, Math.round((kb as number) / 102.4) / 10]),
  );
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

// The sims run the bundle whatever the runtime commands are; `--no-build` keeps the one there
// (another measurement may be starting processes from it).
if (!values["no-build"]) await buildAll();
const dir = await Deno.makeTempDir({ prefix: "side-by-side-" });
const ticks = await clockTicksPerSecond();
const started: RuntimeProcess[] = [];
try {
  await Deno.writeTextFile(`${dir}/sim.yaml`, simProviderYaml());
  for (const [i, cmd] of cmds.entries()) {
    // Warm Deno's code cache for this command: a first run keeps more RSS (memory_per_provider.ts).
    await new Deno.Command(cmd[0]!, { args: [...cmd.slice(1), "--version"] }).output();
    const port = freePort();
    const configPath = `${dir}/runtime-${i}.yaml`;
    const anolis = anolisCmds.includes(cmd);
    await Deno.writeTextFile(
      configPath,
      (anolis ? anolisRuntimeYaml : runtimeYaml)({
        providerCount: providers,
        port,
        providerCmd: defaultCommands(REPO).provider,
        simConfigPath: `${dir}/sim.yaml`,
        pollIntervalMs: pollMs,
        dataDir: `${dir}/data-${i}`,
      }),
    );
    started.push(
      await RuntimeProcess.start({
        cmd,
        configPath,
        port,
        expectedProviders: providers,
        readyTimeoutMs: READY_TIMEOUT_MS,
      }),
    );
  }
  await new Promise((r) => setTimeout(r, warmS * 1000));
  const cpuOf = (rt: RuntimeProcess) => {
    const s = readProcStat(rt.pid);
    return s === null ? NaN : s.utimeTicks + s.stimeTicks;
  };
  const cpu0 = started.map(cpuOf);
  const t0 = performance.now();
  const rss: number[][] = started.map(() => []);
  for (let t = 0; t < secs; t += SAMPLE_EVERY_S) {
    started.forEach((rt, i) => {
      const kb = readRssKb(rt.pid);
      if (kb !== null) rss[i]!.push(kb);
    });
    await new Promise((r) => setTimeout(r, SAMPLE_EVERY_S * 1000));
  }
  const wallS = (performance.now() - t0) / 1000;
  const cpu1 = started.map(cpuOf);
  const where = values.where
    ? await Promise.all(started.map(async (rt, i) => ({
      smapsMiB: smapsMiB(readSmapsGroups(rt.pid)),
      heap: anolisCmds.includes(cmds[i]!) ? null : await heapMiB(rt.api.baseUrl),
    })))
    : null;
  const rates: number[] = [];
  for (const rt of started) rates.push(await pollsPerSecond(rt.api.baseUrl));
  const rows = cmds.map((cmd, i) => ({
    cmd: cmd.join(" "),
    anolis: anolisCmds.includes(cmd),
    providers,
    pollMs,
    cpuPercent: Math.round(((cpu1[i]! - cpu0[i]!) / ticks / wallS) * 10_000) / 100,
    rssMiB: Math.round(median(rss[i]!) / 102.4) / 10,
    devicePollsPerSecond: rates[i]!,
    ...(where ? where[i] : {}),
  }));
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
  for (const r of rows) {
    console.log(
      `${r.rssMiB} MiB  ${r.cpuPercent} % of a core  ${r.devicePollsPerSecond} device polls/s  ${r.cmd}`,
    );
    if (where) console.log(`  where: ${JSON.stringify({ smapsMiB: r.smapsMiB, heap: r.heap })}`);
  }
  console.log(
    `(${providers} providers each at ${pollMs} ms, ${secs} s after ${warmS} s; load ${load})`,
  );
  if (values.out) {
    await Deno.writeTextFile(
      values.out,
      JSON.stringify({ date: new Date().toISOString(), load, rows }, null, 1),
    );
  }
} finally {
  await Promise.all(started.map((rt) => rt.stop().catch(() => {})));
  await Deno.remove(dir, { recursive: true }).catch(() => {});
}
