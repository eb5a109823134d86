/**
 * deno run -A bench/child_floor.ts [--counts 10,40] [--rounds 2] [--out F]
 *
 * What a child process costs this Deno in RSS, with nothing of ours (issue 39, item 3: the part
 * of a provider's memory that is Deno's). For each way of spawning and each count, a fresh Deno
 * process (under the runtime's settings: `--max-semi-space-size=4`, `MALLOC_ARENA_MAX=2`) spawns
 * that many `sleep` children and reports its RSS before and 3 s after; the figure is the slope
 * between the first and the last count, so the one-off cost of the first spawn (~3.4 MiB: the
 * code and tables spawning touches) is not counted per child. Ways:
 * - `null`: stdin, stdout and stderr not piped;
 * - `piped`: all three piped, nothing read;
 * - `reads`: piped, and a BYOB read pending on stdout (16 KiB) and stderr (4 KiB), as the runtime
 *   keeps one on each provider (src/adpp/client.ts, src/providers/provider_session.ts).
 * Not a test; Linux.
 */
import { parseArgs } from "node:util";
import { median } from "./lib/stats.ts";

/** How long the children run before the second count (their start-up settled). */
const SETTLE_MS = 3000;
/** What the runtime keeps pending per provider: the ADPP reader's and the stderr line reader's. */
const STDOUT_READ_BYTES = 16384;
const STDERR_READ_BYTES = 4096;
const WAYS = ["null", "piped", "reads"] as const;
type Way = typeof WAYS[number];

function rssKiB(): number {
  const m = /VmRSS:\s+(\d+)/.exec(Deno.readTextFileSync("/proc/self/status"));
  return Number(m![1]);
}

/** The child side: spawns `n` children the given way and prints the RSS growth (KiB). */
async function child(n: number, way: Way): Promise<void> {
  await new Promise((r) => setTimeout(r, SETTLE_MS / 2));
  const before = rssKiB();
  const io = way === "null" ? "null" : "piped";
  const kids: Deno.ChildProcess[] = [];
  for (let i = 0; i < n; i++) {
    const k = new Deno.Command("sleep", {
      args: ["1000"],
      stdin: io,
      stdout: io,
      stderr: io,
    }).spawn();
    kids.push(k);
    if (way === "reads") {
      k.stdout.getReader({ mode: "byob" }).read(new Uint8Array(STDOUT_READ_BYTES)).catch(() => {});
      k.stderr.getReader({ mode: "byob" }).read(new Uint8Array(STDERR_READ_BYTES)).catch(() => {});
    }
  }
  await new Promise((r) => setTimeout(r, SETTLE_MS));
  console.log(String(rssKiB() - before));
  for (const k of kids) k.kill("SIGKILL");
  Deno.exit(0);
}

async function growth(n: number, way: Way): Promise<number> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "-A",
      "--v8-flags=--max-semi-space-size=4",
      new URL(import.meta.url).pathname,
      "--child",
      String(n),
      way,
    ],
    env: { MALLOC_ARENA_MAX: "2" },
    stdout: "piped",
  }).output();
  return Number(new TextDecoder().decode(out.stdout).trim());
}

if (import.meta.main) {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      child: { type: "boolean", default: false },
      counts: { type: "string", default: "10,40" },
      rounds: { type: "string", default: "2" },
      out: { type: "string" },
    },
  });
  if (values.child) {
    await child(Number(positionals[0]), positionals[1] as Way);
  } else {
    const counts = values.counts.split(",").map(Number);
    const lo = counts[0]!;
    const hi = counts.at(-1)!;
    const result: Record<string, { growthKiB: number[][]; perChildKiB: number }> = {};
    for (const way of WAYS) {
      const rounds: number[][] = [];
      for (let r = 0; r < Number(values.rounds); r++) {
        rounds.push([await growth(lo, way), await growth(hi, way)]);
      }
      const perChild = median(rounds.map(([a, b]) => (b! - a!) / (hi - lo)));
      result[way] = { growthKiB: rounds, perChildKiB: Math.round(perChild * 10) / 10 };
      console.log(
        `${way.padEnd(6)} growth at ${lo} / ${hi} children: ${
          rounds.map(([a, b]) => `${a} / ${b}`).join(", ")
        } KiB; per added child ${result[way].perChildKiB} KiB`,
      );
    }
    if (values.out) {
      await Deno.writeTextFile(
        values.out,
        JSON.stringify(
          { date: new Date().toISOString(), deno: Deno.version.deno, result },
          null,
          1,
        ),
      );
    }
  }
}
