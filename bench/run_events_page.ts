/**
 * GET /v0/runs/{id}/events page latency in a run of 100,000 events (a page must answer in <= 100
 * ms). Builds the run once with this checkout's RunRegistry (the files a runtime writes: call
 * events with an audit entry as payload, ~200 bytes each), then, per round, starts the runtime
 * (src/main.ts of `--repo`, the simulated provider from this checkout) on that data folder and
 * times, over real HTTP, the first page (default limit 200), a middle page by cursor
 * (after_sequence=50000) and the last page by cursor, each as the first read of the run by a
 * runtime just started (cold: what an operator opening the console gets) and once more (warm).
 *
 * Run: `deno run --allow-all bench/run_events_page.ts [--rounds 7] [--events 100000]
 * [--repo /path/to/other/checkout]`. Prints each round and the median per page.
 */
import { journalFiles, systemClock } from "../src/host/mod.ts";
import { RunRegistry } from "../src/runs/mod.ts";
import type { Logger } from "../src/common/mod.ts";
import { median } from "./lib/stats.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";

const REPO = new URL("../", import.meta.url).pathname.replace(/\/$/, "");

function flag(name: string, fallback: string): string {
  const i = Deno.args.indexOf(`--${name}`);
  return i >= 0 && Deno.args[i + 1] !== undefined ? Deno.args[i + 1]! : fallback;
}

const ROUNDS = Number(flag("rounds", "7"));
const EVENTS = Number(flag("events", "100000"));
const RUNTIME_REPO = flag("repo", REPO).replace(/\/$/, "");

const quiet: Logger = {
  debug() {},
  info() {},
  warn() {},
  error: (m) => console.error(m),
  child: () => quiet,
};

/** Writes a closed run of `n` call events into `dataDir` through the RunRegistry; its id. */
async function buildRun(dataDir: string, n: number): Promise<string> {
  const registry = new RunRegistry({
    dataDir,
    runtimeName: "bench",
    pollingIntervalMs: 100,
    files: journalFiles,
    clock: systemClock,
    logger: quiet,
  });
  await registry.start();
  const { run } = await registry.open({ experiment_label: "page bench" });
  // run_opened is event 1; the rest are calls, in batches below the registry's queue bound.
  for (let i = 2; i <= n; i++) {
    registry.recordCall({
      seq: i,
      first_time_epoch_ms: Date.now(),
      count: 1,
      origin: { kind: "automation", node: "Main/Sequence[0]/CallDevice[0]" },
      device_handle: "sim0/motorctl0",
      function: "set_motor_duty",
      args: { duty: { type: "double", double: i / n } },
      outcome: "accepted",
    });
    if (i % 500 === 0) await registry.listEvents(run.run_id, { after_sequence: i, limit: 1 });
  }
  await registry.close(run.run_id, { close_reason: "completed" });
  await registry.shutdown();
  return run.run_id;
}

/** The runtime under test on the bench's data folder, on a free port, its provider AVAILABLE. */
async function startRuntime(dir: string): Promise<RuntimeProcess> {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (listener.addr as Deno.NetAddr).port;
  listener.close();
  const configPath = `${dir}/runtime.yaml`;
  const sim = `${REPO}/examples/providers/sim/main.ts`;
  await Deno.writeTextFile(
    configPath,
    runtimeYaml({
      providerCount: 1,
      port,
      providerCmd: [Deno.execPath(), "run", "-A", "--quiet", sim],
      simConfigPath: `${dir}/sim.yaml`,
      pollIntervalMs: 500,
      dataDir: `${dir}/data`,
    }),
  );
  return await RuntimeProcess.start({
    cmd: [Deno.execPath(), "run", "-A", "--quiet", `${RUNTIME_REPO}/src/main.ts`],
    configPath,
    port,
    expectedProviders: 1,
    readyTimeoutMs: 60_000,
  });
}

async function timed(rt: RuntimeProcess, path: string): Promise<[number, number]> {
  const t0 = performance.now();
  const body = await rt.api.get(path);
  return [performance.now() - t0, body.count];
}

const dir = await Deno.makeTempDir({ prefix: "bench_run_events_" });
try {
  const t0 = performance.now();
  const runId = await buildRun(`${dir}/data`, EVENTS);
  const bytes = (await Deno.stat(`${dir}/data/runs/${runId.slice(-26)}.jsonl`)).size;
  console.log(
    `run of ${EVENTS} events: ${(bytes / 1e6).toFixed(1)} MB (${Math.round(bytes / EVENTS)} ` +
      `bytes/event), built in ${((performance.now() - t0) / 1000).toFixed(1)} s`,
  );
  await Deno.writeTextFile(`${dir}/sim.yaml`, simProviderYaml());
  const pages: Array<[string, string]> = [
    ["first page", ""],
    ["middle page, cursor", `?after_sequence=${Math.floor(EVENTS / 2)}`],
    ["last page, cursor", `?after_sequence=${EVENTS - 200}`],
  ];
  const times = new Map<string, number[]>();
  for (let round = 1; round <= ROUNDS; round++) {
    const line: string[] = [];
    for (const [what, query] of pages) {
      // A runtime of its own for each page: its first read of the run (cold), then again (warm).
      const rt = await startRuntime(dir);
      try {
        for (const kind of ["cold", "warm"]) {
          const [ms, count] = await timed(rt, `/v0/runs/${runId}/events${query}`);
          if (count !== 200) throw new Error(`${what}: ${count} events, expected 200`);
          const key = `${what} (${kind})`;
          times.set(key, [...times.get(key) ?? [], ms]);
          line.push(`${key} ${ms.toFixed(1)}`);
        }
      } finally {
        await rt.stop();
      }
    }
    console.log(`round ${round} (ms): ${line.join(", ")}`);
  }
  const load = (await Deno.readTextFile("/proc/loadavg")).split(" ").slice(0, 3).join(" ");
  console.log(`runtime: ${RUNTIME_REPO}/src/main.ts; load average now ${load}`);
  for (const [what, ms] of times) {
    console.log(
      `${what}: median ${median(ms).toFixed(1)} ms (min ${Math.min(...ms).toFixed(1)}, max ${
        Math.max(...ms).toFixed(1)
      }) over ${ms.length} rounds`,
    );
  }
} finally {
  await Deno.remove(dir, { recursive: true });
}
