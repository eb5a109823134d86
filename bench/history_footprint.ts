/**
 * The history's footprint (issue 37): the runtime idle-polling 10 simulated providers × 4 devices
 * at 100 ms, with `history:` at its defaults (A) and with `history.enabled: false` (B, the code
 * path of the parent), side by side, alternating A,B,B,A,... on the same machine. Per session,
 * the budget's method (bench/README.md "Footprint budget"): after 10 s of settling, a 50 s window:
 * runtime CPU (% of a core), mean and last RSS; for A also the ring's bytes
 * (runtime_history_memory_bytes) and the disk tier's bytes written in the window (as bytes per
 * hour).
 *
 * With `--no-disk` a third kind of session runs too: `history.disk_max_bytes: 0` (C: the ring
 * without the disk tier), in the rotation A,B,C then C,B,A.
 *
 * Run: `deno run -A bench/history_footprint.ts [--pairs N] [--window-s S] [--no-disk]`. Not a
 * test.
 */
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { clockTicksPerSecond, cpuPercent, descendants, sampleCpuMem } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const PROVIDERS = 10;
const SETTLE_MS = 10_000;
const args = Deno.args;
const flag = (name: string, def: number) => {
  const i = args.indexOf(name);
  return i >= 0 ? Number(args[i + 1]) : def;
};
const PAIRS = flag("--pairs", 2);
const WINDOW_MS = flag("--window-s", 50) * 1000;
const RUNTIME = ["deno", "run", "-A", "--v8-flags=--max-semi-space-size=4", `${REPO}/src/main.ts`];
const SIM = [
  "deno",
  "run",
  "-A",
  "--v8-flags=--max-semi-space-size=4,--lite-mode",
  `${REPO}/examples/providers/sim/main.ts`,
];

interface Figures {
  label: string;
  cpu: number;
  rssMeanMiB: number;
  rssLastMiB: number;
  ringBytes: number | null;
  diskBytesPerHour: number | null;
}

async function dirBytes(dir: string): Promise<number> {
  let n = 0;
  try {
    for await (const e of Deno.readDir(dir)) {
      if (e.isFile) n += (await Deno.stat(`${dir}/${e.name}`)).size;
    }
  } catch {
    // not there (yet)
  }
  return n;
}

type Kind = "on" | "off" | "no-disk";

async function session(kind: Kind, port: number): Promise<Figures> {
  const history = kind !== "off";
  const dir = await Deno.makeTempDir({ prefix: "bench-history-" });
  const simPath = `${dir}/sim.yaml`;
  await Deno.writeTextFile(simPath, simProviderYaml());
  const configPath = `${dir}/runtime.yaml`;
  let yaml = runtimeYaml({
    providerCount: PROVIDERS,
    port,
    providerCmd: SIM,
    simConfigPath: simPath,
    pollIntervalMs: 100,
    dataDir: `${dir}/data`,
  });
  if (kind === "off") yaml += "\nhistory:\n  enabled: false\n";
  if (kind === "no-disk") yaml += "\nhistory:\n  disk_max_bytes: 0\n";
  await Deno.writeTextFile(configPath, yaml);
  const rt = await RuntimeProcess.start({
    cmd: RUNTIME,
    configPath,
    port,
    expectedProviders: PROVIDERS,
    readyTimeoutMs: 180_000,
  });
  try {
    await new Promise((r) => setTimeout(r, SETTLE_MS));
    const ticks = await clockTicksPerSecond();
    const others = descendants(rt.pid);
    const first = sampleCpuMem(rt.pid, others);
    const disk0 = await dirBytes(`${dir}/data/history`);
    const rss: number[] = [];
    let last = first;
    for (let t = 0; t < WINDOW_MS; t += 1000) {
      await new Promise((r) => setTimeout(r, 1000));
      last = sampleCpuMem(rt.pid, others);
      rss.push(last.mainRssKb);
    }
    const disk1 = await dirBytes(`${dir}/data/history`);
    const metrics = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const ring = /^runtime_history_memory_bytes (\d+)$/m.exec(metrics);
    return {
      label: kind === "on"
        ? "history on (A)"
        : kind === "off"
        ? "history off (B)"
        : "ring only, disk_max_bytes 0 (C)",
      cpu: cpuPercent(first, last, ticks).main,
      rssMeanMiB: rss.reduce((a, b) => a + b, 0) / rss.length / 1024,
      rssLastMiB: rss.at(-1)! / 1024,
      ringBytes: ring ? Number(ring[1]) : null,
      diskBytesPerHour: history ? ((disk1 - disk0) / WINDOW_MS) * 3_600_000 : null,
    };
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}

const rows: Figures[] = [];
const kinds: Kind[] = args.includes("--no-disk") ? ["on", "off", "no-disk"] : ["on", "off"];
for (let p = 0; p < PAIRS; p++) {
  const order = p % 2 === 0 ? kinds : [...kinds].reverse();
  for (const kind of order) {
    const f = await session(kind, 18_300 + rows.length);
    rows.push(f);
    console.error(JSON.stringify(f));
  }
}
const fmt = (n: number | null, d = 1) => n === null ? "-" : n.toFixed(d);
console.log("| session | runtime CPU % | RSS mean MiB | RSS last MiB | ring bytes | disk MB/h |");
console.log("| ------- | ------------- | ------------ | ------------ | ---------- | --------- |");
for (const r of rows) {
  console.log(
    `| ${r.label} | ${fmt(r.cpu, 2)} | ${fmt(r.rssMeanMiB)} | ${fmt(r.rssLastMiB)} | ${
      r.ringBytes ?? "-"
    } | ${r.diskBytesPerHour === null ? "-" : fmt(r.diskBytesPerHour / 1e6, 2)} |`,
  );
}
