/**
 * deno run -A bench/side_by_side.ts --cmd "<runtime cmd>" --cmd "<runtime cmd>" [--cmd ...]
 *   [--providers 10] [--poll-ms 100] [--warm 40] [--secs 120] [--no-build] [--out F]
 *
 * Several runtimes idle-polling at once, each with its own `--providers` simulated providers x 4
 * devices at `--poll-ms`: after `--warm` seconds, each runtime's CPU (utime + stime of its own
 * process, /proc) over `--secs` as % of one core, and its RSS median over the same window (sampled
 * every SAMPLE_EVERY_S). Side by side, all see the same machine load, so the difference between
 * them is what a V8 flag or a bundle changes, not what the machine did meanwhile (the way the
 * V8-flag tables in bench/README.md are measured). Commands as for `deno task bench --runtime-cmd`
 * (the spawned pid must be the runtime: `env VAR=1 deno run ...` execs). Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { clockTicksPerSecond, readProcStat, readRssKb } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Seconds between RSS samples. */
const SAMPLE_EVERY_S = 2;
/** How long each runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;

const { values } = parseArgs({
  args: Deno.args,
  options: {
    cmd: { type: "string", multiple: true },
    providers: { type: "string", default: "10" },
    "poll-ms": { type: "string", default: "100" },
    warm: { type: "string", default: "40" },
    secs: { type: "string", default: "120" },
    out: { type: "string" },
    "no-build": { type: "boolean", default: false },
  },
});
const cmds = (values.cmd ?? []).map(splitCommand);
if (cmds.length < 1 || cmds.some((c) => c.length === 0)) {
  console.error('usage: deno run -A bench/side_by_side.ts --cmd "<runtime cmd>" [--cmd ...]');
  Deno.exit(2);
}
const providers = Number(values.providers);
const pollMs = Number(values["poll-ms"]);
const warmS = Number(values.warm);
const secs = Number(values.secs);

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
    await Deno.writeTextFile(
      configPath,
      runtimeYaml({
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
  const rows = cmds.map((cmd, i) => ({
    cmd: cmd.join(" "),
    providers,
    pollMs,
    cpuPercent: Math.round(((cpu1[i]! - cpu0[i]!) / ticks / wallS) * 10_000) / 100,
    rssMiB: Math.round(median(rss[i]!) / 102.4) / 10,
  }));
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ")[0];
  for (const r of rows) console.log(`${r.rssMiB} MiB  ${r.cpuPercent} % of a core  ${r.cmd}`);
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
