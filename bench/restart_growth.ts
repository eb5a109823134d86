/**
 * deno run -A bench/restart_growth.ts [--rounds 4] [--secs 10] [--clients 16] [--crash] [--runtime-cmd "<cmd>"] [--compare "<cmd>"] [--out F]
 *
 * Whether a start costs more as the runtime's data folder grows (the audit journal, the history's
 * disk tier, run records): one runtime command (or two, alternating round by round with
 * `--compare`, each with a data folder of its own) is started `--rounds` times on the same
 * `runtime.data_dir`, 1 simulated provider at 100 ms; each round measures spawn -> every provider
 * AVAILABLE and the RSS then, puts the runtime in MANUAL, runs `--clients` closed-loop clients of
 * actuating calls (motorctl set_motor_duty, alternating duties so each is an audit entry) for
 * `--secs`, and stops it with SIGTERM (a clean stop; `--crash`: SIGKILL, the providers then
 * killed by the harness). Prints one line per round with the size of each folder under the data
 * folder; `--out` writes the rounds as JSON. Not a test; Linux.
 *
 * Found with it (bench/README.md, "A start that grew with the audit journal"): a start searched
 * the audit journal's last 8 MiB for calls without an outcome, 370 -> 600 ms and 60 -> 73 MiB of
 * RSS as the journal grew to 37 MB.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { BENCH_DEVICES, providerIds, runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { readRssKb } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { freePort } from "../tests/helpers/ports.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** How long the runtime may take to report its provider AVAILABLE. */
const READY_TIMEOUT_MS = 60_000;
/** Longest wait for one call's answer (a stuck runtime ends the run instead of hanging it). */
const CALL_TIMEOUT_MS = 10_000;

interface Round {
  readonly label: string;
  readonly round: number;
  readonly readyMs: number;
  readonly rssAtReadyMiB: number;
  readonly calls: number;
  readonly rssAfterMiB: number;
  /** kB per folder (or file) directly under the data folder, after the stop. */
  readonly dataKb: Record<string, number>;
}

const mib = (kb: number | null) => kb === null ? NaN : Math.round(kb / 102.4) / 10;

function duKb(dir: string): Record<string, number> {
  const names = [...Deno.readDirSync(dir)].map((e) => `${dir}/${e.name}`);
  if (names.length === 0) return {};
  const out = new Deno.Command("du", { args: ["-sk", ...names] }).outputSync();
  const sizes: Record<string, number> = {};
  for (const line of new TextDecoder().decode(out.stdout).trim().split("\n")) {
    const [kb, path] = line.split("\t");
    sizes[path!.slice(dir.length + 1)] = Number(kb);
  }
  return sizes;
}

/** `clients` loops of actuating calls for `secs`; the number answered 200. */
async function actuate(base: string, clients: number, secs: number): Promise<number> {
  const provider = providerIds(1)[0]!;
  const body = (duty: number) =>
    JSON.stringify({
      provider_id: provider,
      device_id: BENCH_DEVICES.motorctl,
      function_id: 10,
      args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: duty } },
    });
  let calls = 0;
  const end = performance.now() + secs * 1000;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (performance.now() < end) {
      const res = await fetch(`${base}/v0/call`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: body(calls % 2 ? 0.25 : 0.5),
        signal: AbortSignal.timeout(CALL_TIMEOUT_MS),
      });
      const text = await res.text();
      if (res.status !== 200) throw new Error(`POST /v0/call answered ${res.status}: ${text}`);
      calls++;
    }
  }));
  return calls;
}

async function main(): Promise<void> {
  const { values } = parseArgs({
    options: {
      rounds: { type: "string", default: "4" },
      secs: { type: "string", default: "10" },
      clients: { type: "string", default: "16" },
      "runtime-cmd": { type: "string" },
      compare: { type: "string" },
      crash: { type: "boolean", default: false },
      out: { type: "string" },
    },
  });
  const rounds = Number(values.rounds);
  const secs = Number(values.secs);
  const clients = Number(values.clients);
  const defaults = defaultCommands(REPO);
  const cmds: Record<string, string[]> = {
    A: values["runtime-cmd"] ? splitCommand(values["runtime-cmd"]) : defaults.runtime,
    ...(values.compare ? { B: splitCommand(values.compare) } : {}),
  };
  if (
    [...Object.values(cmds), defaults.provider].some((c) =>
      c.some((w) => w.startsWith(BUNDLE_DIR.pathname))
    )
  ) {
    await buildAll();
  }
  const tmp = await Deno.makeTempDir({ prefix: "restart_growth_" });
  const results: Round[] = [];
  try {
    const sim = `${tmp}/sim.yaml`;
    await Deno.writeTextFile(sim, simProviderYaml());
    // Each command started once first, unmeasured: the first start of a freshly built bundle has
    // Deno write its code cache (bench/memory_per_provider.ts).
    for (let r = -1; r < rounds; r++) {
      for (const label of r % 2 === 0 ? Object.keys(cmds) : Object.keys(cmds).reverse()) {
        const port = freePort();
        const configPath = `${tmp}/runtime-${label}.yaml`;
        const dataDir = r < 0 ? `${tmp}/warm-${label}` : `${tmp}/data-${label}`;
        await Deno.writeTextFile(
          configPath,
          runtimeYaml({
            providerCount: 1,
            port,
            providerCmd: defaults.provider,
            simConfigPath: sim,
            pollIntervalMs: 100,
            dataDir,
          }),
        );
        const rt = await RuntimeProcess.start({
          cmd: cmds[label]!,
          configPath,
          port,
          expectedProviders: 1,
          readyTimeoutMs: READY_TIMEOUT_MS,
        });
        let calls = 0;
        let rssAtReady = NaN;
        let rssAfter = NaN;
        try {
          rssAtReady = mib(readRssKb(rt.pid));
          await rt.api.post("/v0/mode", { mode: "MANUAL" });
          calls = await actuate(rt.api.baseUrl, clients, secs);
          rssAfter = mib(readRssKb(rt.pid));
        } finally {
          await rt.stop(values.crash ? "SIGKILL" : "SIGTERM");
        }
        if (r < 0) continue;
        const round: Round = {
          label,
          round: r + 1,
          readyMs: Math.round(rt.startupMs),
          rssAtReadyMiB: rssAtReady,
          calls,
          rssAfterMiB: rssAfter,
          dataKb: duKb(dataDir),
        };
        results.push(round);
        console.log(
          `${label} round ${round.round}: ready in ${round.readyMs} ms, RSS ${rssAtReady} MiB; ` +
            `${calls} calls, RSS ${rssAfter} MiB; data kB after the stop: ${
              Object.entries(round.dataKb).map(([k, v]) => `${k} ${v}`).join(", ")
            }`,
        );
      }
    }
  } finally {
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
  for (const [label, cmd] of Object.entries(cmds)) console.log(`${label}: ${cmd.join(" ")}`);
  if (values.out) {
    await Deno.writeTextFile(values.out, JSON.stringify({ cmds, rounds: results }, null, 2) + "\n");
  }
}

if (import.meta.main) await main();
