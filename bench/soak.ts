/**
 * deno run -A bench/soak.ts [--secs 600] [--providers 10] [--runtime-cmd "<cmd>"] [--out F]
 *
 * The soak of the footprint goals (bench/README.md, "Footprint"): the runtime idle-polling N
 * simulated providers x 4 devices at 100 ms for `--secs`, its RSS read from /proc and
 * `GET /metrics` scraped every SAMPLE_EVERY_S (as a Prometheus at that interval would; the scrape
 * also gives V8's heap in use and committed). Prints the samples, the least-squares RSS slope
 * (MiB/h) from minute 1, 3 and 5 on, the RSS at the end, the lowest heap-in-use sample per 2-minute
 * window (a floor that rises would be a leak; a flat floor under a rising RSS is V8 sizing its
 * heap) and the runtime's CPU. `--out` writes JSON. Default commands: the bundles (built first), as
 * `deno task bench` runs them. Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { clockTicksPerSecond, readProcStat, readRssKb } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { slope } from "./lib/stats.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Seconds between samples (and scrapes). */
const SAMPLE_EVERY_S = 10;
/** Width of the windows whose lowest heap-in-use sample is reported, seconds. */
const FLOOR_WINDOW_S = 120;
/** A scrape of `GET /metrics` that takes longer ends the soak (a runtime that stopped answering). */
const SCRAPE_TIMEOUT_MS = 5000;
/** How long the runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;

interface Sample {
  readonly t: number;
  readonly rssMiB: number;
  readonly heapUsedMiB: number;
  readonly heapTotalMiB: number;
}

function metric(text: string, name: string): number {
  const m = text.match(new RegExp(`^${name} (\\S+)`, "m"));
  return m ? Number(m[1]) / 1048576 : NaN;
}

/** MiB per hour from the samples at or after `fromS`. */
function slopeFrom(samples: readonly Sample[], fromS: number): number {
  const s = samples.filter((x) => x.t >= fromS);
  return slope(s.map((x) => x.t / 3600), s.map((x) => x.rssMiB));
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      secs: { type: "string", default: "600" },
      providers: { type: "string", default: "10" },
      "runtime-cmd": { type: "string" },
      out: { type: "string" },
    },
  });
  const secs = Number(values.secs);
  const providers = Number(values.providers);
  const defaults = defaultCommands(REPO);
  const runtimeCmd = values["runtime-cmd"] ? splitCommand(values["runtime-cmd"]) : defaults.runtime;
  if ([...runtimeCmd, ...defaults.provider].some((w) => w.startsWith(BUNDLE_DIR.pathname))) {
    await buildAll();
  }
  const dir = await Deno.makeTempDir({ prefix: "soak-" });
  try {
    await Deno.writeTextFile(`${dir}/sim.yaml`, simProviderYaml());
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    listener.close();
    await Deno.writeTextFile(
      `${dir}/runtime.yaml`,
      runtimeYaml({
        providerCount: providers,
        port,
        providerCmd: defaults.provider,
        simConfigPath: `${dir}/sim.yaml`,
        pollIntervalMs: 100,
        dataDir: `${dir}/data`,
      }),
    );
    // Warm Deno's code cache: the first run of a freshly built bundle costs more RSS.
    await new Deno.Command(runtimeCmd[0]!, { args: [...runtimeCmd.slice(1), "--version"] })
      .output();
    const rt = await RuntimeProcess.start({
      cmd: runtimeCmd,
      configPath: `${dir}/runtime.yaml`,
      port,
      expectedProviders: providers,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    const ticks = await clockTicksPerSecond();
    const cpuTicks = () => {
      const s = readProcStat(rt.pid);
      return s === null ? NaN : s.utimeTicks + s.stimeTicks;
    };
    const samples: Sample[] = [];
    try {
      const t0 = performance.now();
      const c0 = cpuTicks();
      for (let t = SAMPLE_EVERY_S; t <= secs; t += SAMPLE_EVERY_S) {
        const wait = t * 1000 - (performance.now() - t0);
        if (wait > 0) await new Promise((r) => setTimeout(r, wait));
        const rssMiB = (readRssKb(rt.pid) ?? NaN) / 1024;
        const text = await (await fetch(`http://127.0.0.1:${port}/metrics`, {
          signal: AbortSignal.timeout(SCRAPE_TIMEOUT_MS),
        })).text();
        samples.push({
          t,
          rssMiB,
          heapUsedMiB: metric(text, "runtime_process_heap_used_bytes"),
          heapTotalMiB: metric(text, "runtime_process_heap_total_bytes"),
        });
        console.error(
          `soak: ${t} s RSS ${rssMiB.toFixed(1)} MiB, heap ${
            samples.at(-1)!.heapUsedMiB.toFixed(1)
          } / ${samples.at(-1)!.heapTotalMiB.toFixed(1)} MiB`,
        );
      }
      const cpuPct = (cpuTicks() - c0) / ticks / ((performance.now() - t0) / 1000) * 100;
      const floors: number[] = [];
      for (let w = 0; w * FLOOR_WINDOW_S < secs; w++) {
        const inWindow = samples.filter((s) =>
          s.t > w * FLOOR_WINDOW_S && s.t <= (w + 1) * FLOOR_WINDOW_S
        );
        if (inWindow.length > 0) floors.push(Math.min(...inWindow.map((s) => s.heapUsedMiB)));
      }
      const round = (v: number) => Math.round(v * 100) / 100;
      const result = {
        providers,
        secs,
        runtime_cmd: runtimeCmd.join(" "),
        rss_end_mib: round(samples.at(-1)!.rssMiB),
        rss_max_mib: round(Math.max(...samples.map((s) => s.rssMiB))),
        slope_mib_per_h: {
          from_minute_1: round(slopeFrom(samples, 60)),
          from_minute_3: round(slopeFrom(samples, 180)),
          from_minute_5: round(slopeFrom(samples, 300)),
        },
        heap_used_floor_per_2_min_mib: floors.map(round),
        cpu_pct: round(cpuPct),
        samples,
      };
      console.log(JSON.stringify({ ...result, samples: undefined }, null, 2));
      if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
