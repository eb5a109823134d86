/**
 * deno run -A bench/poll_hints.ts [--rounds 3] [--providers 4] [--interval 100] [--warm 5]
 *   [--secs 20] [--fast 10] [--slow 0.5] [--out F]
 *
 * What honouring poll_hint_hz saves (docs/http-api.md, "Provider policies"): one runtime
 * (`deno run -A src/main.ts`) polls `--providers` providers on the SDK (bench/lib/
 * hinted_provider.ts: 4 devices x 4 double signals each) at polling.interval_ms `--interval`,
 * once with every signal hinting `--fast` Hz (polled every cycle) and once hinting `--slow` Hz
 * (every 1000 / slow / interval cycles). After `--warm` seconds, CPU time (utime + stime from
 * /proc) of the runtime and of all providers is taken over `--secs`; sessions alternate
 * fast/slow, slow/fast between rounds. Prints CPU in % of one core per session and the means;
 * `--out` writes JSON. Not a test; Linux.
 */
import { parseArgs } from "node:util";
import {
  clockTicksPerSecond,
  cpuPercent,
  descendants,
  loadAverage,
  sampleCpuMem,
} from "./lib/proc.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
const PROVIDER = `${REPO}/bench/lib/hinted_provider.ts`;
/** How long the runtime may take to start its providers. */
const READY_TIMEOUT_MS = 60_000;

interface Session {
  readonly hz: number;
  readonly runtimePct: number;
  readonly providersPct: number;
  readonly load1: number | null;
}

function configYaml(o: { dataDir: string; providers: number; interval: number; hz: number }) {
  const lines = [
    "runtime:",
    "  name: bench-poll-hints",
    `  data_dir: ${JSON.stringify(o.dataDir)}`,
    "http:",
    "  enabled: false",
    "polling:",
    `  interval_ms: ${o.interval}`,
    "logging:",
    "  level: warn",
    "providers:",
  ];
  for (let i = 0; i < o.providers; i++) {
    lines.push(
      `  - id: h${i}`,
      `    command: ${JSON.stringify(Deno.execPath())}`,
      "    args:",
      ...["run", "--quiet", "--no-config", PROVIDER, "--hz", String(o.hz)].map(
        (a) => `      - ${JSON.stringify(a)}`,
      ),
      "    hello_timeout_ms: 30000",
      "    ready_timeout_ms: 30000",
    );
  }
  return lines.join("\n") + "\n";
}

/** One session: start the runtime, wait for its providers, warm, measure, stop. */
async function session(
  o: { providers: number; interval: number; warm: number; secs: number; hz: number },
  ticksPerSecond: number,
): Promise<Session> {
  const dir = await Deno.makeTempDir({ prefix: "poll-hints-" });
  const config = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(config, configYaml({ dataDir: `${dir}/data`, ...o }));
  const child = new Deno.Command(Deno.execPath(), {
    args: ["run", "-A", `${REPO}/src/main.ts`, "--config", config],
    stdin: "null",
    stdout: "null",
    stderr: "inherit",
  }).spawn();
  try {
    const deadline = performance.now() + READY_TIMEOUT_MS;
    let providers: number[] = [];
    while (providers.length < o.providers) {
      if (performance.now() > deadline) throw new Error("providers did not start in time");
      await new Promise((r) => setTimeout(r, 250));
      providers = descendants(child.pid);
    }
    await new Promise((r) => setTimeout(r, o.warm * 1000));
    providers = descendants(child.pid);
    const a = sampleCpuMem(child.pid, providers);
    await new Promise((r) => setTimeout(r, o.secs * 1000));
    const b = sampleCpuMem(child.pid, providers);
    const pct = cpuPercent(a, b, ticksPerSecond);
    return {
      hz: o.hz,
      runtimePct: pct.main,
      providersPct: pct.others,
      load1: loadAverage()?.[0] ?? null,
    };
  } finally {
    child.kill("SIGTERM");
    await child.status;
    await Deno.remove(dir, { recursive: true });
  }
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      rounds: { type: "string", default: "3" },
      providers: { type: "string", default: "4" },
      interval: { type: "string", default: "100" },
      warm: { type: "string", default: "5" },
      secs: { type: "string", default: "20" },
      fast: { type: "string", default: "10" },
      slow: { type: "string", default: "0.5" },
      out: { type: "string" },
    },
  });
  const base = {
    providers: Number(values.providers),
    interval: Number(values.interval),
    warm: Number(values.warm),
    secs: Number(values.secs),
  };
  const fast = Number(values.fast);
  const slow = Number(values.slow);
  const ticks = await clockTicksPerSecond();
  const sessions: Session[] = [];
  for (let round = 0; round < Number(values.rounds); round++) {
    const order = round % 2 === 0 ? [fast, slow] : [slow, fast];
    for (const hz of order) {
      const s = await session({ ...base, hz }, ticks);
      sessions.push(s);
      console.log(
        `round ${round + 1} hint ${hz} Hz: runtime ${s.runtimePct.toFixed(2)} %, providers ${
          s.providersPct.toFixed(2)
        } % (load ${s.load1?.toFixed(1) ?? "?"})`,
      );
    }
  }
  const mean = (hz: number, k: "runtimePct" | "providersPct") => {
    const xs = sessions.filter((s) => s.hz === hz).map((s) => s[k]);
    return xs.reduce((p, q) => p + q, 0) / xs.length;
  };
  for (const hz of [fast, slow]) {
    console.log(
      `mean hint ${hz} Hz: runtime ${mean(hz, "runtimePct").toFixed(2)} %, providers ${
        mean(hz, "providersPct").toFixed(2)
      } % of one core`,
    );
  }
  if (values.out) {
    await Deno.writeTextFile(
      values.out,
      JSON.stringify({ ...base, fast, slow, sessions }, null, 2),
    );
  }
}
