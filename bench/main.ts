/**
 * `deno task bench`: starts the runtime as a child process the way a user does (generated
 * `--config`), drives it over HTTP/SSE, samples its CPU time and RSS from /proc, stops it with
 * SIGTERM. Prints a markdown table on stdout (progress on stderr) and writes
 * bench/results/<date>.json. See bench/README.md for what each workload measures.
 */
import {
  absolutizeCommand,
  BENCH_USAGE,
  type BenchArgs,
  defaultCommands,
  parseBenchArgs,
  UsageError,
} from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { BenchFailure } from "./lib/api.ts";
import {
  anolisRuntimeYaml,
  benchTreeXml,
  providerIds,
  runtimeYaml,
  simProviderYaml,
} from "./lib/config_gen.ts";
import { DEFAULT_PROFILE, type Profile, QUICK_PROFILE } from "./lib/profile.ts";
import { clockTicksPerSecond, loadAverage, machineInfo, readRssKb } from "./lib/proc.ts";
import { markdownTable, type MetricKey, Recorder, type RuntimeLabel } from "./lib/results.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import {
  armManual,
  btTickRate,
  callRoundTrip,
  estop,
  memorySoak,
  pollingScale,
  type SessionContext,
  sseFanout,
  stateReads,
} from "./lib/workloads.ts";

const REPO_ROOT = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Readiness budget per runtime start (50 providers on a busy 2-core machine take a while). */
const READY_TIMEOUT_MS = 180_000;
/** Bound on any helper command (--version, --check-config, git). */
const COMMAND_TIMEOUT_MS = 60_000;

/** A runtime start with the workloads to run on it. */
interface SessionPlan {
  readonly name: string;
  readonly providers: number;
  /** Run with behavior-tree automation enabled (workload 8). */
  readonly automation?: boolean;
  readonly reps: number;
  readonly phases: readonly { name: string; run: (ctx: SessionContext) => Promise<void> }[];
}

const log = (line: string) => console.error(line);

function buildPlan(args: BenchArgs, prof: Profile): SessionPlan[] {
  const on = (w: number) => args.only === null || args.only.has(w);
  const plans: SessionPlan[] = [];
  if (on(1) || on(2) || on(5) || on(7)) {
    const phases = [];
    if (on(1)) phases.push({ name: "1 call round trip", run: callRoundTrip });
    if (on(2)) phases.push({ name: "2 state reads", run: stateReads });
    plans.push({ name: "api", providers: 1, reps: args.reps ?? prof.apiReps, phases });
  }
  for (const n of prof.scaleProviders) {
    const phases = [];
    if (on(3)) phases.push({ name: "3 polling scale", run: pollingScale });
    if (on(4) && n === prof.fanoutProviders) phases.push({ name: "4 SSE fan-out", run: sseFanout });
    if (on(6) && n === prof.estopProviders) phases.push({ name: "6 e-stop", run: estop });
    // Start-up with many providers is workload 5's second point: keep the session for it.
    const startupPoint = on(5) && n === Math.max(...prof.scaleProviders);
    if (phases.length > 0 || startupPoint) {
      plans.push({ name: `scale-${n}`, providers: n, reps: 1, phases });
    }
  }
  if (on(8)) {
    plans.push({
      name: "bt",
      providers: 1,
      reps: 1,
      automation: true,
      phases: [{ name: "8 behavior-tree tick rate", run: btTickRate }],
    });
  }
  if (args.soak && on(7)) {
    plans.push({
      name: "soak",
      providers: prof.soakProviders,
      reps: 1,
      phases: [{ name: "7 memory soak", run: memorySoak }],
    });
  }
  return plans;
}

/** Runs a helper command; returns trimmed stdout, or throws BenchFailure naming it. */
async function runCommand(argv: readonly string[], what: string): Promise<string> {
  const [cmd, ...rest] = argv;
  let out: Deno.CommandOutput;
  try {
    out = await new Deno.Command(cmd!, {
      args: rest,
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
      signal: AbortSignal.timeout(COMMAND_TIMEOUT_MS),
    }).output();
  } catch (err) {
    throw new BenchFailure(`${what}: cannot run '${argv.join(" ")}': ${err}`);
  }
  const dec = new TextDecoder();
  if (!out.success) {
    throw new BenchFailure(
      `${what}: '${argv.join(" ")}' exited ${out.code}: ${dec.decode(out.stderr).slice(-500)}`,
    );
  }
  return dec.decode(out.stdout).trim();
}

async function gitCommit(): Promise<{ commit: string; dirty: boolean } | null> {
  try {
    const commit = await runCommand(["git", "-C", REPO_ROOT, "rev-parse", "HEAD"], "git");
    const status = await runCommand(["git", "-C", REPO_ROOT, "status", "--porcelain"], "git");
    return { commit, dirty: status.length > 0 };
  } catch {
    return null;
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

function exists(path: string): boolean {
  try {
    Deno.statSync(path);
    return true;
  } catch {
    return false;
  }
}

/** The runtime currently running, so Ctrl-C can stop it instead of leaking it. */
let current: RuntimeProcess | null = null;

async function main(): Promise<number> {
  let args: BenchArgs;
  try {
    args = parseBenchArgs(Deno.args, REPO_ROOT);
  } catch (err) {
    if (err instanceof UsageError) {
      console.error(`bench: ${err.message}\n\n${BENCH_USAGE}`);
      return 2;
    }
    throw err;
  }
  if (args.help) {
    console.log(BENCH_USAGE);
    return 0;
  }
  const base = args.quick ? QUICK_PROFILE : DEFAULT_PROFILE;
  const prof: Profile = args.fanout === null ? base : {
    ...base,
    // Workload 4 runs in the scale session of its provider count: make sure there is one.
    scaleProviders: [...new Set([...base.scaleProviders, args.fanout.providers])].sort((a, b) =>
      a - b
    ),
    fanoutProviders: args.fanout.providers,
    fanoutClients: args.fanout.clients,
  };
  const cwd = Deno.cwd();
  const cmds: Partial<Record<RuntimeLabel, string[]>> = {
    A: absolutizeCommand(args.runtimeCmd, cwd, exists),
  };
  if (args.compareCmd) cmds.B = absolutizeCommand(args.compareCmd, cwd, exists);
  const labels = Object.keys(cmds) as RuntimeLabel[];
  // The C++ anolis runtime as B: its own configuration, no --check-config of ours, no automation.
  const anolisLabel: RuntimeLabel | null = args.compareAnolis ? "B" : null;
  const providerCmd = absolutizeCommand(args.providerCmd, cwd, exists);
  const defaultProvider =
    JSON.stringify(args.providerCmd) === JSON.stringify(defaultCommands(REPO_ROOT).provider);

  const started = new Date();
  const loadStart = loadAverage();
  const tmp = await Deno.makeTempDir({ prefix: "runtime-bench-" });
  const simConfigPath = `${tmp}/sim.yaml`;
  await Deno.writeTextFile(simConfigPath, simProviderYaml());

  const onSigint = () => {
    log("bench: interrupted, stopping the runtime");
    const rt = current;
    (rt ? rt.stop() : Promise.resolve()).finally(() => {
      try {
        Deno.removeSync(tmp, { recursive: true });
      } catch {
        // best effort: the folder only holds generated configs
      }
      Deno.exit(130);
    });
  };
  Deno.addSignalListener("SIGINT", onSigint);
  const rec = new Recorder();
  const notes: string[] = [];
  try {
    // The default commands run the bundles: build them from the current source first.
    const bundled = [...Object.values(cmds), providerCmd].some((c) =>
      c.some((w) => w.startsWith(BUNDLE_DIR.pathname))
    );
    if (bundled) {
      await buildAll();
      log(`bench: bundled the runtime and the sim into ${BUNDLE_DIR.pathname} (deno task bundle)`);
    }
    // Versions first: they also prove each command works and warm Deno's module cache, so the
    // first start-up figure does not include compiling the sources.
    const versions: Record<string, string> = {
      deno: ((await runCommand(["deno", "--version"], "deno --version")).split("\n")[0])!,
    };
    for (const l of labels) {
      versions[`runtime${l}`] =
        ((await runCommand([...cmds[l]!, "--version"], `runtime ${l} --version`))
          .split("\n")[0])!;
    }
    if (defaultProvider) {
      await runCommand([...providerCmd, "--check-config", simConfigPath], "provider warm-up");
    }
    const git = await gitCommit();
    const ticks = await clockTicksPerSecond();
    const plans = buildPlan(args, prof);
    log(
      `bench: profile ${prof.name}, sessions: ${
        plans.map((p) => `${p.name}×${p.reps}`).join(", ")
      }`,
    );
    for (const l of labels) {
      log(`bench: runtime ${l}: ${cmds[l]!.join(" ")} (${versions[`runtime${l}`]})`);
    }

    // Workload 5b: --check-config wall time on the full example config.
    if (args.only === null || args.only.has(5)) {
      const full = `${REPO_ROOT}/examples/full.yaml`;
      const reps = args.reps ?? prof.checkConfigReps;
      for (let r = 0; r < reps; r++) {
        for (const l of r % 2 === 0 ? labels : [...labels].reverse()) {
          if (l === anolisLabel) continue;
          const t0 = performance.now();
          await runCommand([...cmds[l]!, "--check-config", full], `runtime ${l} --check-config`);
          rec.add(
            l,
            { workload: 5, name: "--check-config examples/full.yaml", unit: "ms" },
            performance.now() - t0,
          );
        }
      }
    }

    let unit = 0;
    for (const plan of plans) {
      for (let rep = 0; rep < plan.reps; rep++) {
        const order = unit++ % 2 === 0 ? labels : [...labels].reverse();
        for (const label of order) {
          if (plan.automation && label === anolisLabel) continue;
          log(
            `bench: session ${plan.name} rep ${
              rep + 1
            }/${plan.reps}, runtime ${label}, ${plan.providers} provider(s)`,
          );
          await runSession(plan, label, cmds[label]!, {
            anolis: label === anolisLabel,
            prof,
            providerCmd,
            simConfigPath,
            tmp,
            ticks,
            rec,
            notes,
          });
        }
      }
    }

    const loadNow = loadAverage();
    if (loadStart && loadNow && Math.max(loadStart[0], loadNow[0]) > machineInfo().cores / 2) {
      notes.push(
        `machine busy: 1-min load average ${loadStart[0]} at start, ${loadNow[0]} at end ` +
          `(${machineInfo().cores} cores; the harness itself adds load during the run)`,
      );
    }
    const records = rec.records();
    const table = markdownTable(records, labels.length > 1);
    const loadEnd = loadAverage();
    const date = started.toISOString().slice(0, 10);
    const header = [
      `## Runtime benchmark — ${date}, profile ${prof.name}${args.soak ? " + soak" : ""}`,
      "",
      `commit ${
        git ? git.commit.slice(0, 12) + (git.dirty ? " (dirty tree)" : "") : "unknown"
      } · ` +
      `${machineInfo().cpuModel}, ${machineInfo().cores} cores · ${versions.deno} · ` +
      `load avg ${loadStart?.[0] ?? "?"} → ${loadEnd?.[0] ?? "?"}`,
      ...labels.map((l) => `runtime ${l}: \`${cmds[l]!.join(" ")}\` (${versions[`runtime${l}`]})`),
      "",
    ];
    console.log(
      [...header, table, ...(notes.length ? ["", ...notes.map((n) => `- ${n}`)] : [])].join("\n"),
    );

    if (!args.noWrite) {
      const suffix = args.quick ? "-quick" : args.soak ? "-soak" : "";
      const out = args.out ?? `${REPO_ROOT}/bench/results/${date}${suffix}.json`;
      const result = {
        schema: 1,
        date,
        started_at: started.toISOString(),
        duration_s: Math.round((Date.now() - started.getTime()) / 1000),
        profile: prof.name,
        soak: args.soak,
        only: args.only ? [...args.only].sort() : null,
        machine: { ...machineInfo(), load_avg_start: loadStart, load_avg_end: loadEnd },
        versions,
        git,
        commands: {
          ...Object.fromEntries(labels.map((l) => [`runtime${l}`, cmds[l]!.join(" ")])),
          provider: providerCmd.join(" "),
        },
        settings: {
          poll_interval_ms: prof.pollIntervalMs,
          devices_per_provider: 4,
          scale_providers: prof.scaleProviders,
          scale_window_ms: prof.scaleWindowMs,
          concurrent_clients: prof.concurrentClients,
          fanout_clients: prof.fanoutClients,
          fanout_providers: prof.fanoutProviders,
          clock_ticks_per_s: ticks,
        },
        notes,
        metrics: records,
      };
      const folder = out.slice(0, out.lastIndexOf("/"));
      if (folder) await Deno.mkdir(folder, { recursive: true });
      await Deno.writeTextFile(out, resultJson(result));
      log(`bench: wrote ${out}`);
    }
    return 0;
  } catch (err) {
    if (err instanceof BenchFailure) {
      console.error(`bench: FAILED: ${err.message}`);
      return 1;
    }
    throw err;
  } finally {
    Deno.removeSignalListener("SIGINT", onSigint);
    await Deno.remove(tmp, { recursive: true }).catch(() => {});
  }
}

/** The result file: readable header, one line per metric (keeps the file small and diffable). */
function resultJson(result: { metrics: readonly unknown[] } & Record<string, unknown>): string {
  const { metrics, ...head } = result;
  const top = JSON.stringify(head, null, 2).replace(/\n}$/, "");
  const rows = metrics.map((m) => `    ${JSON.stringify(m)}`).join(",\n");
  return `${top},\n  "metrics": [\n${rows}\n  ]\n}\n`;
}

/** Generous wall-clock budget of one phase: a hung workload must end the run, not stall it. */
function phaseBudgetMs(prof: Profile): number {
  return 3 * Math.max(prof.scaleWindowMs, prof.fanoutWindowMs, prof.soakWindowMs) + 120_000;
}

/** Resolves like `work`, or rejects with BenchFailure when it takes longer than ms. */
async function withDeadline<T>(work: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new BenchFailure(`${what} did not finish within ${ms / 1000} s`)),
      ms,
    );
  });
  try {
    return await Promise.race([work, late]);
  } finally {
    clearTimeout(timer);
  }
}

/** Writes workload 8's tree next to the generated configs. */
async function writeBenchTree(env: SessionEnv): Promise<{ treePath: string; tickRateHz: number }> {
  const treePath = `${env.tmp}/bench-tree.xml`;
  await Deno.writeTextFile(treePath, benchTreeXml(providerIds(1)[0]!));
  return { treePath, tickRateHz: env.prof.btTickRateHz };
}

interface SessionEnv {
  /** The runtime is the C++ anolis runtime (anolisRuntimeYaml). */
  readonly anolis: boolean;
  readonly prof: Profile;
  readonly providerCmd: readonly string[];
  readonly simConfigPath: string;
  readonly tmp: string;
  readonly ticks: number;
  readonly rec: Recorder;
  readonly notes: string[];
}

/** One runtime start: start-up figures, the plan's phases, stop. Always stops the runtime. */
async function runSession(
  plan: SessionPlan,
  label: RuntimeLabel,
  cmd: readonly string[],
  env: SessionEnv,
): Promise<void> {
  const port = freePort();
  const configPath = `${env.tmp}/runtime-${plan.name}-${label}.yaml`;
  const common = {
    providerCount: plan.providers,
    port,
    providerCmd: env.providerCmd,
    simConfigPath: env.simConfigPath,
    pollIntervalMs: env.prof.pollIntervalMs,
  };
  await Deno.writeTextFile(
    configPath,
    env.anolis ? anolisRuntimeYaml(common) : runtimeYaml({
      ...common,
      dataDir: `${env.tmp}/data-${label}`,
      ...(plan.automation ? { automation: await writeBenchTree(env) } : {}),
    }),
  );
  const rt = await RuntimeProcess.start({
    cmd,
    configPath,
    port,
    expectedProviders: plan.providers,
    readyTimeoutMs: READY_TIMEOUT_MS,
  });
  current = rt;
  const record = (key: MetricKey, value: number) => env.rec.add(label, key, value);
  const n = plan.providers;
  const at = `${n} provider${n === 1 ? "" : "s"}`;
  try {
    record({ workload: 5, name: `spawn → API ready, ${at}`, unit: "ms" }, rt.startupMs);
    record(
      { workload: 7, name: `runtime RSS after start-up, ${at}`, unit: "MiB" },
      (readRssKb(rt.pid) ?? NaN) / 1024,
    );
    log(`  ready in ${Math.round(rt.startupMs)} ms (pid ${rt.pid}, port ${port})`);
    const ctx: SessionContext = {
      rt,
      label,
      providers: providerIds(n),
      profile: env.prof,
      ticksPerSecond: env.ticks,
      record,
      log,
    };
    await armManual(ctx);
    for (const phase of plan.phases) {
      log(`  workload ${phase.name}`);
      await withDeadline(phase.run(ctx), phaseBudgetMs(env.prof), `workload ${phase.name}`);
    }
    if (plan.phases.length > 0) {
      // What the session's workloads left behind (the api session: after the HTTP workloads).
      record(
        { workload: 7, name: `runtime RSS after the session's workloads, ${at}`, unit: "MiB" },
        (readRssKb(rt.pid) ?? NaN) / 1024,
      );
    }
  } catch (err) {
    if (err instanceof BenchFailure) {
      err.message += `\n--- runtime ${label} output (tail) ---\n${rt.outputTail()}`;
    }
    throw err;
  } finally {
    current = null;
    const stopped = await rt.stop();
    if (stopped.forced || stopped.code !== 0 || stopped.orphansKilled.length > 0) {
      const note = `runtime ${label} (${plan.name}): exit code ${stopped.code}` +
        `${stopped.signal ? `, signal ${stopped.signal}` : ""}` +
        `${stopped.forced ? ", needed SIGKILL after SIGTERM" : ""}` +
        `${
          stopped.orphansKilled.length
            ? `, ${stopped.orphansKilled.length} provider(s) outlived it`
            : ""
        }`;
      if (!env.notes.includes(note)) env.notes.push(note);
      log(`  note: ${note}`);
    }
  }
}

if (import.meta.main) {
  Deno.exit(await main());
}
