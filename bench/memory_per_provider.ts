/**
 * deno run -A bench/memory_per_provider.ts [--counts 1,10,40] [--warm 40] [--secs 30] [--runtime CMD] [--out F]
 *
 * Issue 39 item 3: the runtime's resident memory per added provider, and the floor it is judged
 * against (a bare Deno process of the same version under the runtime's V8 flags and environment). For each
 * provider count, one runtime (the bundle, as `deno task bench` runs it; `--runtime` another
 * command) polls that many simulated providers (4 devices each) at 100 ms with the on-board
 * history on (its default). After `--warm` seconds the runtime's RSS is sampled every
 * SAMPLE_EVERY_S for `--secs`; at the end the V8 heap (`GET /metrics`) and where the pages are
 * (/proc/<pid>/smaps: the executable's code and data, malloc's main heap, small anonymous
 * mappings -- V8's heap pages, 256 KiB each -- and large ones: V8's nursery and the malloc arenas
 * of threads other than the main one, which RUNTIME_ENV caps). Prints medians per count and the
 * slope between counts (MiB per added provider); `--out` writes JSON. Not a test; Linux.
 *
 * Before the first count, the runtime is started once and stopped, unmeasured: the first start of
 * a freshly built bundle has Deno write its code cache, which leaves ~30 MiB of large mappings
 * resident for the life of that process (a 1-provider runtime at 96 MiB instead of 66).
 */
import { parseArgs } from "node:util";
import { defaultCommands, RUNTIME_ENV, RUNTIME_V8_FLAGS, splitCommand } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { readRssKb, readSmapsGroups, type SmapsGroups } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Seconds between RSS samples. */
const SAMPLE_EVERY_S = 2;
/** How long the runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;

interface Point {
  readonly providers: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number | null;
  readonly heapTotalMiB: number | null;
  readonly smapsMiB: Record<keyof SmapsGroups, number> | null;
}

function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const m = s.length >> 1;
  return s.length % 2 ? s[m]! : (s[m - 1]! + s[m]!) / 2;
}

const mib = (kb: number) => Math.round(kb / 102.4) / 10;

function metric(text: string, name: string): number | null {
  const m = new RegExp(`^${name} (\\S+)$`, "m").exec(text);
  return m ? Number(m[1]) : null;
}

/** The RSS of `pid` (kB) every SAMPLE_EVERY_S for `secs`. */
async function sampleRssKb(pid: number, secs: number): Promise<number[]> {
  const samples: number[] = [];
  for (let t = 0; t < secs; t += SAMPLE_EVERY_S) {
    const kb = readRssKb(pid);
    if (kb !== null) samples.push(kb);
    await new Promise((r) => setTimeout(r, SAMPLE_EVERY_S * 1000));
  }
  return samples;
}

async function measureRuntime(
  cmd: readonly string[],
  dir: string,
  providers: number,
  warmS: number,
  secs: number,
): Promise<Point> {
  const simPath = `${dir}/sim.yaml`;
  await Deno.writeTextFile(simPath, simProviderYaml());
  const port = freePort();
  const configPath = `${dir}/runtime-${providers}.yaml`;
  await Deno.writeTextFile(
    configPath,
    runtimeYaml({
      providerCount: providers,
      port,
      providerCmd: defaultCommands(REPO).provider,
      simConfigPath: simPath,
      pollIntervalMs: 100,
      dataDir: `${dir}/data-${providers}`,
    }),
  );
  const rt = await RuntimeProcess.start({
    cmd,
    configPath,
    port,
    expectedProviders: providers,
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  try {
    await new Promise((r) => setTimeout(r, warmS * 1000));
    const samples = await sampleRssKb(rt.pid, secs);
    const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
    const used = metric(text, "runtime_process_heap_used_bytes");
    const total = metric(text, "runtime_process_heap_total_bytes");
    const g = readSmapsGroups(rt.pid);
    return {
      providers,
      rssMiB: mib(median(samples)),
      heapUsedMiB: used === null ? null : Math.round(used / 104857.6) / 10,
      heapTotalMiB: total === null ? null : Math.round(total / 104857.6) / 10,
      smapsMiB: g === null
        ? null
        : Object.fromEntries(Object.entries(g).map(([k, v]) => [k, mib(v)])) as Record<
          keyof SmapsGroups,
          number
        >,
    };
  } finally {
    await rt.stop();
  }
}

/**
 * A bare Deno process of the same version under the runtime's V8 flags and environment (RUNTIME_ENV):
 * only an interval.
 */
async function measureBare(dir: string, warmS: number, secs: number): Promise<number> {
  const script = `${dir}/bare.js`;
  await Deno.writeTextFile(script, "setInterval(() => {}, 100);\n");
  const child = new Deno.Command("deno", {
    args: ["run", "--no-config", RUNTIME_V8_FLAGS, script],
    env: { ...RUNTIME_ENV },
    stdin: "null",
    stdout: "null",
    stderr: "null",
  }).spawn();
  try {
    await new Promise((r) => setTimeout(r, warmS * 1000));
    return mib(median(await sampleRssKb(child.pid, secs)));
  } finally {
    child.kill("SIGKILL");
    await child.status;
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      counts: { type: "string", default: "1,10,40" },
      warm: { type: "string", default: "40" },
      secs: { type: "string", default: "30" },
      runtime: { type: "string" },
      out: { type: "string" },
    },
  });
  const counts = values.counts.split(",").map(Number);
  const warmS = Number(values.warm);
  const secs = Number(values.secs);
  const cmd = values.runtime ? splitCommand(values.runtime) : defaultCommands(REPO).runtime;
  if (!values.runtime) await buildAll();
  const dir = await Deno.makeTempDir({ prefix: "mem-per-provider-" });
  try {
    const bare = await measureBare(dir, Math.min(warmS, 10), secs);
    console.log(`bare Deno (${RUNTIME_V8_FLAGS}, ${JSON.stringify(RUNTIME_ENV)}): ${bare} MiB`);
    await measureRuntime(cmd, dir, 1, 0, 0); // warm Deno's code cache: see the header
    const points: Point[] = [];
    for (const n of counts) {
      const p = await measureRuntime(cmd, dir, n, warmS, secs);
      points.push(p);
      console.log(JSON.stringify(p));
    }
    for (let i = 1; i < points.length; i++) {
      const a = points[0]!, b = points[i]!;
      const per = (b.rssMiB - a.rssMiB) / (b.providers - a.providers);
      console.log(
        `per added provider ${a.providers} -> ${b.providers}: ${per.toFixed(2)} MiB` +
          (a.heapUsedMiB !== null && b.heapUsedMiB !== null
            ? ` (V8 heap used ${
              ((b.heapUsedMiB - a.heapUsedMiB) / (b.providers - a.providers)).toFixed(2)
            })`
            : ""),
      );
    }
    const ten = points.find((p) => p.providers === 10);
    if (ten) console.log(`10 providers / bare: ${(ten.rssMiB / bare).toFixed(2)}x`);
    if (values.out) {
      await Deno.writeTextFile(
        values.out,
        JSON.stringify({ date: new Date().toISOString(), bare, points }, null, 2) + "\n",
      );
    }
  } finally {
    await Deno.remove(dir, { recursive: true }).catch(() => {});
  }
}
