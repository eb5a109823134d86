/**
 * deno run -A bench/provider_floor.ts [--rounds 2] [--providers 8] [--warm 10] [--secs 40] [--out F]
 *
 * The footprint goal for providers (the sim <= 40 MiB polled at 10 Hz; bench/README.md,
 * "Footprint") against the floor of any provider written in Deno. One runtime (the bundle, as
 * `deno task bench` runs it) polls, at 100 ms, four kinds of provider side by side, `--providers`
 * of them in turn:
 * - `sim`: the simulated provider's bundle, as the bench runs it (src/provider_sdk/, YAML config);
 * - `sim-repo-config`: the same without `--no-config`, so Deno loads the repository's deno.json and
 *   lockfile (the bundle lies inside the repository): what the bench measured before the eighth
 *   round;
 * - `floor-streams`: bench/lib/replay_provider.ts answering from a recording of that sim, reading
 *   and writing through Deno's stdio streams as the SDK does;
 * - `floor-raw`: the same through `Deno.stdin.read` / `Deno.stdout.writeSync`.
 * All under the sim's V8 flags, and all but `sim-repo-config` with `--no-config`.
 * After `--warm` seconds the RSS of every provider is sampled every SAMPLE_EVERY_S for `--secs`;
 * at the end, where each kind's pages are (/proc/<pid>/smaps:
 * `deno` code pages, V8 heap pages, malloc). Kinds rotate over the provider slots between rounds.
 * Prints the mean RSS per kind and round and the breakdown; `--out` writes JSON. Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { defaultCommands } from "./lib/args.ts";
import { buildAll } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { descendants, readRssKb, readSmapsGroups, type SmapsGroups } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { record } from "./startup_share.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const REPLAY = `${REPO}/bench/lib/replay_provider.ts`;
/** Seconds between RSS samples. */
const SAMPLE_EVERY_S = 2;
/** How long the runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;

const KINDS = ["sim", "sim-repo-config", "floor-streams", "floor-raw"] as const;
type Kind = typeof KINDS[number];

/** The kind of a provider process, from its command line. */
function kindOf(cmdline: string): Kind | null {
  if (cmdline.includes(REPLAY)) {
    return cmdline.includes("--streams") ? "floor-streams" : "floor-raw";
  }
  if (!cmdline.includes("/sim/main.js")) return null;
  return cmdline.includes("--no-config") ? "sim" : "sim-repo-config";
}

/** An empty list per kind. */
const byKind = <T>() => Object.fromEntries(KINDS.map((k) => [k, [] as T[]])) as Record<Kind, T[]>;

const mean = (xs: readonly number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
const mib = (kB: number) => Math.round((kB / 1024) * 10) / 10;

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string", default: "2" },
      providers: { type: "string", default: "8" },
      warm: { type: "string", default: "10" },
      secs: { type: "string", default: "40" },
      out: { type: "string" },
    },
  });
  const rounds = Number(values.rounds);
  const providers = Number(values.providers);
  if (!(providers >= KINDS.length)) throw new RangeError(`--providers: at least ${KINDS.length}`);
  await buildAll();
  const defaults = defaultCommands(REPO);
  const dir = await Deno.makeTempDir({ prefix: "provider-floor-" });
  try {
    const simConfig = `${dir}/sim.yaml`;
    await Deno.writeTextFile(simConfig, simProviderYaml());
    const recording = `${dir}/recording.json`;
    // Also warms the sim bundle's code cache (the first run of a fresh bundle costs more RSS).
    await Deno.writeTextFile(recording, JSON.stringify(await record(defaults.provider, simConfig)));
    // The sim's own `deno run` words (flags, permissions), another module: the same process
    // settings as the sim.
    const floor = [...defaults.provider.slice(0, -1), REPLAY, recording];
    const commands: Record<Kind, readonly string[]> = {
      sim: defaults.provider,
      "sim-repo-config": defaults.provider.filter((w) => w !== "--no-config"),
      "floor-streams": [...floor, "--streams"],
      "floor-raw": floor,
    };
    // Warm the runtime bundle and the replay provider's transpile cache the same way.
    await new Deno.Command(defaults.runtime[0]!, {
      args: [...defaults.runtime.slice(1), "--version"],
    })
      .output();
    await new Deno.Command(floor[0]!, { args: floor.slice(1), stdin: "null" }).output();

    const perRound = byKind<number>();
    const pages = byKind<SmapsGroups>();
    for (let round = 0; round < rounds; round++) {
      const port = freePort();
      await Deno.writeTextFile(
        `${dir}/runtime.yaml`,
        runtimeYaml({
          providerCount: providers,
          port,
          providerCmd: defaults.provider,
          providerCmdAt: (i) => commands[(KINDS[(i + round) % KINDS.length])!],
          simConfigPath: simConfig,
          pollIntervalMs: 100,
          dataDir: `${dir}/data`,
        }),
      );
      const rt = await RuntimeProcess.start({
        cmd: defaults.runtime,
        configPath: `${dir}/runtime.yaml`,
        port,
        expectedProviders: providers,
        readyTimeoutMs: READY_TIMEOUT_MS,
      });
      try {
        await new Promise((r) => setTimeout(r, Number(values.warm) * 1000));
        const procs = descendants(rt.pid).flatMap((pid) => {
          const cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`).replaceAll("\0", " ");
          const kind = kindOf(cmdline);
          return kind === null ? [] : [{ pid, kind }];
        });
        const samples = byKind<number>();
        for (let t = 0; t < Number(values.secs); t += SAMPLE_EVERY_S) {
          await new Promise((r) => setTimeout(r, SAMPLE_EVERY_S * 1000));
          for (const p of procs) {
            const kB = readRssKb(p.pid);
            if (kB !== null) samples[p.kind].push(kB);
          }
        }
        for (const p of procs) {
          const g = readSmapsGroups(p.pid);
          if (g !== null) pages[p.kind].push(g);
        }
        for (const k of KINDS) perRound[k].push(mib(mean(samples[k])));
        console.error(
          `provider-floor: round ${round + 1}: ` +
            KINDS.map((k) => `${k} ${perRound[k].at(-1)} MiB`).join(", "),
        );
      } finally {
        await rt.stop();
      }
    }
    const breakdown = Object.fromEntries(KINDS.map((k) => {
      const avg = (f: keyof SmapsGroups) => mib(mean(pages[k].map((g) => g[f])));
      return [k, {
        rss_mib_per_round: perRound[k],
        deno_code_pages_mib: avg("code"),
        deno_rodata_mib: avg("rodata"),
        v8_heap_pages_mib: avg("smallAnon"),
        malloc_heap_mib: avg("heap"),
      }];
    }));
    const result = {
      date: new Date().toISOString(),
      providers,
      rounds,
      sim_cmd: defaults.provider.join(" "),
      floor_cmd: floor.join(" "),
      load_average: (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3),
      kinds: breakdown,
    };
    console.log(JSON.stringify(result, null, 2));
    if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
