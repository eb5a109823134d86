/** Command-line parsing for `deno task bench` (pure: no I/O). */

/** What the user asked for. Commands are already split into argv arrays. */
export interface BenchArgs {
  readonly quick: boolean;
  readonly soak: boolean;
  /** Runtime A: spawned with `--config <generated file>` appended. */
  readonly runtimeCmd: readonly string[];
  /** Runtime B for `--compare` or `--compare-anolis`, or null. */
  readonly compareCmd: readonly string[] | null;
  /** Runtime B is the C++ anolis runtime (`--compare-anolis`): configured by anolisRuntimeYaml. */
  readonly compareAnolis: boolean;
  /** Provider command; `--config <generated sim yaml>` is appended in the runtime config. */
  readonly providerCmd: readonly string[];
  /** Workload numbers to run (1-8); all of the profile when not given. */
  readonly only: ReadonlySet<number> | null;
  /** Overrides the profile's repetition count of the repeated workloads. */
  readonly reps: number | null;
  /** Overrides workload 4's session size: providers and SSE clients (`--fanout 10x8`). */
  readonly fanout: { readonly providers: number; readonly clients: number } | null;
  /** Result file path; default bench/results/<date>[-quick|-soak].json. */
  readonly out: string | null;
  /** Skip writing the result file (development runs). */
  readonly noWrite: boolean;
  readonly help: boolean;
}

/** A usage error: the message names the flag. */
export class UsageError extends Error {
  override readonly name = "UsageError";
}

/** The help text of `deno task bench --help`. */
export const BENCH_USAGE = `Usage: deno task bench [flags]

  --quick                 short run (< 1 min): fewer repetitions, shorter windows, 1/10 providers
  --soak                  also run workload 7's 10-minute memory soak at 50 providers
  --runtime-cmd "<cmd>"   runtime A (default: deno run -A --v8-flags=... on the bundle
                          dist/bundle/runtime/main.js, built first: what deno task start
                          and the compile tasks run); --config FILE is appended
  --compare "<cmd>"       runtime B, run alternately with A; the table shows B/A per metric
  --compare-anolis "<cmd>"  runtime B is the C++ anolis-runtime binary (its own configuration;
                          workload 5's --check-config and workload 8 are A's only)
  --provider-cmd "<cmd>"  provider command (default: the simulated provider's bundle under deno);
                          --config <generated sim yaml> is appended
  --only 1,3,5            run only these workloads (1-8)
  --reps N                repetitions of the repeated workloads (default 3, quick 2)
  --fanout PxC            workload 4 with P providers and C SSE clients (default 50x32, quick 10x32)
  --out FILE              result file (default bench/results/<date>[-quick|-soak].json)
  --no-write              do not write a result file
  --help                  this text

Commands are split on spaces; quote with '...' or "..." to keep spaces inside one argument.`;

/**
 * Splits a command line into argv the way a POSIX shell would for plain words and quotes
 * ('...' literal, "..." with \\ escapes, backslash outside quotes). No expansion of any kind.
 */
export function splitCommand(line: string): string[] {
  const out: string[] = [];
  let cur = "";
  let inWord = false;
  let quote: "'" | '"' | null = null;
  for (let i = 0; i < line.length; i++) {
    const c = line[i];
    if (quote === "'") {
      if (c === "'") quote = null;
      else cur += c;
    } else if (quote === '"') {
      if (c === '"') quote = null;
      else if (c === "\\" && i + 1 < line.length && '"\\$`'.includes(line[i + 1]!)) {
        cur += line[++i];
      } else cur += c;
    } else if (c === "'" || c === '"') {
      quote = c;
      inWord = true;
    } else if (c === "\\" && i + 1 < line.length) {
      cur += line[++i];
      inWord = true;
    } else if (/\s/.test(c!)) {
      if (inWord) out.push(cur);
      cur = "";
      inWord = false;
    } else {
      cur += c;
      inWord = true;
    }
  }
  if (quote !== null) throw new UsageError(`unterminated ${quote} quote in command: ${line}`);
  if (inWord) out.push(cur);
  return out;
}

/** The V8 heap flag the runtime and the simulated provider share (the nursery's cap). */
export const V8_HEAP_FLAG = "--max-semi-space-size=4";

/**
 * The V8 flags every way of running the runtime applies (`deno task start`, the compile tasks):
 * the heap flag only (docs/deployment.md, "Memory: V8 and malloc settings": `--optimize-for-size`
 * was measured and dropped, it costs the e-stop storm CPU). The bench measures them as users run
 * them.
 */
export const RUNTIME_V8_FLAGS = `--v8-flags=${V8_HEAP_FLAG}`;

/**
 * The environment every way of running the runtime sets: at most two glibc malloc arenas (the
 * `start` tasks, the systemd unit; a compiled binary cannot carry it; `MALLOC_ENV` in src/main.ts,
 * which tests/deploy/compile_tasks_test.ts keeps equal). Without it each thread that allocates
 * gets an arena of its own and keeps its high-water mark.
 */
export const RUNTIME_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/**
 * The V8 flags of the simulated provider (and the advice for providers built on
 * `src/provider_sdk/`): the heap flag, plus `--lite-mode` -- no optimizing compilers, lazily
 * allocated feedback -- which cuts a polled sim's RSS from ~60 to ~49 MiB for ~0.1 % of a core
 * (docs/deployment.md, "Memory: V8 and malloc settings"). Not for the runtime: there it costs 2x CPU.
 */
export const PROVIDER_V8_FLAGS = `--v8-flags=${V8_HEAP_FLAG},--lite-mode`;

/**
 * Default commands, given the repository root (absolute, no trailing slash): the bundles of
 * `deno task bundle` (scripts/bundle.ts), which the harness builds before measuring — what
 * `deno task start` and the compile tasks run. The sim runs with `--no-config`: its bundle
 * resolves nothing through deno.json, and without the flag Deno loads this repository's
 * deno.json and lockfile into every sim process because the bundle lies inside the repository
 * (+2 MiB RSS each, bench/README.md, eighth round), which a provider installed outside a Deno
 * project does not pay. The runtime's bundle keeps the config: it loads its npm packages on demand
 * through deno.json's import map.
 */
export function defaultCommands(repoRoot: string): { runtime: string[]; provider: string[] } {
  return {
    runtime: [
      "env",
      ...Object.entries(RUNTIME_ENV).map(([k, v]) => `${k}=${v}`),
      "deno",
      "run",
      "-A",
      RUNTIME_V8_FLAGS,
      `${repoRoot}/dist/bundle/runtime/main.js`,
    ],
    provider: [
      "deno",
      "run",
      "--quiet",
      "--no-config",
      PROVIDER_V8_FLAGS,
      "--allow-read",
      "--allow-env",
      `${repoRoot}/dist/bundle/sim/main.js`,
    ],
  };
}

/** Parses the harness flags (`--flag value` or `--flag=value`). */
export function parseBenchArgs(argv: readonly string[], repoRoot: string): BenchArgs {
  const defaults = defaultCommands(repoRoot);
  let quick = false;
  let soak = false;
  let help = false;
  let noWrite = false;
  let runtimeCmd: string[] = defaults.runtime;
  let compareCmd: string[] | null = null;
  let compareAnolis = false;
  let providerCmd: string[] = defaults.provider;
  let only: Set<number> | null = null;
  let reps: number | null = null;
  let fanout: { providers: number; clients: number } | null = null;
  let out: string | null = null;

  const command = (flag: string, value: string): string[] => {
    const words = splitCommand(value);
    if (words.length === 0) throw new UsageError(`${flag}: empty command`);
    return words;
  };
  for (let i = 0; i < argv.length; i++) {
    let flag = argv[i];
    let inline: string | undefined;
    const eq = flag!.indexOf("=");
    if (flag!.startsWith("--") && eq > 0) {
      inline = flag!.slice(eq + 1);
      flag = flag!.slice(0, eq);
    }
    const value = (): string => {
      if (inline !== undefined) return inline;
      const v = argv[i + 1];
      if (v === undefined) throw new UsageError(`${flag}: missing value`);
      i++;
      return v;
    };
    const noValue = () => {
      if (inline !== undefined) throw new UsageError(`${flag}: takes no value`);
    };
    switch (flag) {
      case "--quick":
        noValue();
        quick = true;
        break;
      case "--soak":
        noValue();
        soak = true;
        break;
      case "--no-write":
        noValue();
        noWrite = true;
        break;
      case "--help":
      case "-h":
        noValue();
        help = true;
        break;
      case "--runtime-cmd":
        runtimeCmd = command(flag, value());
        break;
      case "--compare":
      case "--compare-anolis":
        if (compareCmd !== null) throw new UsageError(`${flag}: runtime B is given twice`);
        compareCmd = command(flag, value());
        compareAnolis = flag === "--compare-anolis";
        break;
      case "--provider-cmd":
        providerCmd = command(flag, value());
        break;
      case "--only": {
        const raw = value();
        only = new Set();
        for (const part of raw.split(",")) {
          const n = Number(part.trim());
          if (!Number.isInteger(n) || n < 1 || n > 8) {
            throw new UsageError(`--only: '${part}' is not a workload number 1-8`);
          }
          only.add(n);
        }
        break;
      }
      case "--reps": {
        const raw = value();
        const n = Number(raw);
        if (!Number.isInteger(n) || n < 1 || n > 50) {
          throw new UsageError(`--reps: '${raw}' is not an integer in 1..50`);
        }
        reps = n;
        break;
      }
      case "--fanout": {
        const raw = value();
        const m = /^(\d+)x(\d+)$/.exec(raw);
        const [providers, clients] = m === null ? [NaN, NaN] : [Number(m[1]), Number(m[2])];
        if (!(providers >= 1 && providers <= 200 && clients >= 1 && clients <= 256)) {
          throw new UsageError(
            `--fanout: '${raw}' is not PROVIDERSxCLIENTS with 1..200 providers and 1..256 clients`,
          );
        }
        fanout = { providers, clients };
        break;
      }
      case "--out":
        out = value();
        if (out === "") throw new UsageError("--out: empty path");
        break;
      default:
        throw new UsageError(`unknown flag: ${argv[i]}`);
    }
  }
  return {
    quick,
    soak,
    runtimeCmd,
    compareCmd,
    compareAnolis,
    providerCmd,
    only,
    reps,
    fanout,
    out,
    noWrite,
    help,
  };
}

/**
 * Makes a command's relative file arguments absolute. Generated configs live in a temporary
 * folder and the runtime resolves provider paths against that folder, so `examples/x.ts` typed
 * at the repository root would not be found. A word is rewritten only when it does not start with
 * "-" and `exists(resolve(cwd, word))` is true; a bare command name stays a PATH lookup.
 */
export function absolutizeCommand(
  argv: readonly string[],
  cwd: string,
  exists: (absPath: string) => boolean,
): string[] {
  return argv.map((word, i) => {
    if (word.startsWith("/") || word.startsWith("-")) return word;
    if (i === 0 && !word.includes("/")) return word;
    const abs = `${cwd.replace(/\/+$/, "")}/${word.replace(/^\.\//, "")}`;
    return exists(abs) ? abs : word;
  });
}
