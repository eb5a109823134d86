/**
 * deno run -A bench/estop_storm.ts [--providers 40] [--rounds 2] [--offsets 0,100,...]
 *   [--backoff-ms 200] [--runtime-cmd "<cmd>"] [--no-expect] [--out FILE]
 *
 * How long the e-stop takes to latch while every provider restarts at once. The runtime runs N
 * simulated providers (restart_policy on, first backoff `--backoff-ms`). A storm: SIGKILL every
 * provider process (the runtime's children, from /proc) in one go, wait `offset` ms, write
 * `POST /v0/estop` on a connection opened beforehand, read the answer, then read
 * `latched_at_epoch_ms` from `GET /v0/runtime/status`. The figure is **request written -> latch**
 * on the one wall clock of the machine (the harness's `performance.timeOrigin + performance.now()`
 * right before the write; the runtime's `Date.now()` when the latch engaged, 1 ms resolution), not
 * the answer's timing: the answer also waits for the ladder and the read-back, which reads the
 * expected signals until they hold or `verify_timeout_ms` passes, so while the killed providers
 * are down the answer waits for their restart (`verify_ms`: the answer's `verification.elapsed_ms`).
 * `--no-expect` leaves out the `safety.safe_state.expect` entries: the answer then has nothing to
 * read back (figures taken before 61b449b were of that configuration). Then wait until
 * every provider is AVAILABLE again (`recovery`), let the restart streak reset, clear the latch.
 *
 * The offsets (ms from the kill to the request) sweep the storm: the exits, the backoff, the
 * burst of restart attempts (spawn, Hello, discovery) and the polls that follow. Every offset runs
 * `--rounds` times; p50/p90/p99/max are over all storms (nearest rank: with fewer than 100 storms
 * the p99 is the maximum). Also reported: the answer's latency, recovery (kill -> all AVAILABLE)
 * and the runtime's CPU over each storm (% of one core). Not a test; Linux (reads /proc).
 * Default commands: the bundles (built first), as `deno task bench` runs them.
 */
import { parseArgs } from "node:util";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { clockTicksPerSecond, loadAverage, readProcStat } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { median, percentile } from "./lib/stats.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** Offsets (ms after the kill) at which the e-stop is requested, when --offsets is not given. */
const DEFAULT_OFFSETS_MS = [
  0,
  20,
  50,
  100,
  150,
  180,
  200,
  210,
  220,
  240,
  260,
  300,
  350,
  400,
  500,
  700,
  1000,
  1500,
  2000,
  3000,
];
/** How long the runtime may take to report every provider AVAILABLE (start-up, after a storm). */
const READY_TIMEOUT_MS = 120_000;
/** Status poll interval while waiting for recovery. */
const RECOVERY_POLL_MS = 50;
/** restart_policy.success_reset_ms of the generated config; a storm waits this long (+ margin) after recovery. */
const SUCCESS_RESET_MS = 1000;
/** Margin past success_reset_ms before the next storm (the failure streak has reset by then). */
const SETTLE_MARGIN_MS = 700;
/** Bound on one e-stop answer (the runtime's own bounds are far below it). */
const ANSWER_TIMEOUT_MS = 60_000;

interface Storm {
  readonly offsetMs: number;
  /** Request written -> latch engaged (runtime clock), ms. */
  readonly latchMs: number;
  /** Request written -> answer read to its end, ms. */
  readonly answerMs: number;
  /** The answer's read-back (`verification.elapsed_ms`), ms; 0 when nothing is expected. */
  readonly verifyMs: number;
  /** The answer's `verification.outcome`. */
  readonly verifyOutcome: string;
  /** Kill -> every provider AVAILABLE again, ms. */
  readonly recoveryMs: number;
  /** Runtime CPU from the kill to recovery, % of one core. */
  readonly cpuPct: number;
}

/** Wall-clock epoch ms with sub-ms resolution (the same clock as the runtime's Date.now()). */
function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

/** The runtime's live children (the providers: spawned directly, each its own process group). */
function providerPids(runtimePid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!e.isDirectory || !/^\d+$/.test(e.name)) continue;
    const st = readProcStat(Number(e.name));
    if (st && st.ppid === runtimePid && st.state !== "Z") out.push(st.pid);
  }
  return out;
}

// deno-lint-ignore no-explicit-any
async function status(base: string): Promise<any> {
  const res = await fetch(`${base}/v0/runtime/status`, { signal: AbortSignal.timeout(15_000) });
  if (res.status !== 200) throw new Error(`GET /v0/runtime/status -> ${res.status}`);
  return await res.json();
}

// deno-lint-ignore no-explicit-any
function allAvailable(s: any, n: number): boolean {
  const providers: { state?: string }[] = s.providers ?? [];
  return providers.length === n && providers.every((p) => p.state === "AVAILABLE");
}

/** A POST on a connection opened now; `send()` writes it and resolves with the whole answer. */
async function preparedPost(
  port: number,
  path: string,
): Promise<{ send: () => Promise<{ sentAt: number; answer: string; answeredAt: number }> }> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const body = new TextEncoder().encode(JSON.stringify({ reason: "bench storm" }));
  const head = new TextEncoder().encode(
    `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n` +
      `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
  );
  const request = new Uint8Array([...head, ...body]);
  return {
    send: async () => {
      try {
        const sentAt = epochMs();
        await conn.write(request);
        const decoder = new TextDecoder();
        const buf = new Uint8Array(65_536);
        let answer = "";
        const deadline = setTimeout(() => conn.close(), ANSWER_TIMEOUT_MS);
        try {
          for (;;) {
            const n = await conn.read(buf);
            if (n === null) break;
            answer += decoder.decode(buf.subarray(0, n), { stream: true });
          }
        } finally {
          clearTimeout(deadline);
        }
        return { sentAt, answer, answeredAt: epochMs() };
      } finally {
        try {
          conn.close();
        } catch {
          // closed by the deadline
        }
      }
    },
  };
}

async function storm(
  rt: RuntimeProcess,
  port: number,
  n: number,
  offsetMs: number,
  ticksPerS: number,
): Promise<Storm> {
  const base = `http://127.0.0.1:${port}`;
  const pids = providerPids(rt.pid);
  if (pids.length !== n) throw new Error(`expected ${n} provider processes, found ${pids.length}`);
  const post = await preparedPost(port, "/v0/estop");
  const cpu0 = readProcStat(rt.pid)!;
  const killedAt = epochMs();
  for (const pid of pids) Deno.kill(pid, "SIGKILL");
  const wait = killedAt + offsetMs - epochMs();
  if (wait > 0) await new Promise((r) => setTimeout(r, wait));
  const { sentAt, answer, answeredAt } = await post.send();
  if (!/^HTTP\/1\.1 200/.test(answer)) throw new Error(`POST /v0/estop: ${answer.slice(0, 300)}`);
  const verification = estopVerification(answer);
  let s = await status(base);
  const latchedAt = s.estop?.latched_at_epoch_ms;
  if (s.estop?.latched !== true || typeof latchedAt !== "number") {
    throw new Error(`not latched after POST /v0/estop: ${JSON.stringify(s.estop)}`);
  }
  const deadline = performance.now() + READY_TIMEOUT_MS;
  while (!allAvailable(s, n)) {
    if (performance.now() > deadline) throw new Error("providers did not all come back");
    await new Promise((r) => setTimeout(r, RECOVERY_POLL_MS));
    s = await status(base);
  }
  const recoveredAt = epochMs();
  const cpu1 = readProcStat(rt.pid)!;
  const cpuTicks = cpu1.utimeTicks + cpu1.stimeTicks - cpu0.utimeTicks - cpu0.stimeTicks;
  // Let the failure streak reset (success_reset_ms) and the restarted providers' e-stop work end.
  await new Promise((r) => setTimeout(r, SUCCESS_RESET_MS + SETTLE_MARGIN_MS));
  const clear = await fetch(`${base}/v0/estop/clear`, { method: "POST" });
  await clear.body?.cancel();
  if (clear.status !== 200) throw new Error(`POST /v0/estop/clear -> ${clear.status}`);
  return {
    offsetMs,
    latchMs: latchedAt - sentAt,
    answerMs: answeredAt - sentAt,
    verifyMs: verification.elapsed_ms,
    verifyOutcome: verification.outcome,
    recoveryMs: recoveredAt - killedAt,
    cpuPct: cpuTicks / ticksPerS / ((recoveredAt - killedAt) / 1000) * 100,
  };
}

/** The `verification` of an e-stop answer (a whole HTTP/1.1 response, not chunked). */
function estopVerification(answer: string): { outcome: string; elapsed_ms: number } {
  const body = JSON.parse(answer.slice(answer.indexOf("\r\n\r\n") + 4));
  const v = body.verification;
  if (typeof v?.outcome !== "string" || typeof v?.elapsed_ms !== "number") {
    throw new Error(`POST /v0/estop: no verification in ${answer.slice(0, 300)}`);
  }
  return { outcome: v.outcome, elapsed_ms: v.elapsed_ms };
}

function countBy(values: readonly string[]): Record<string, number> {
  const out: Record<string, number> = {};
  for (const v of values) out[v] = (out[v] ?? 0) + 1;
  return out;
}

function figures(values: readonly number[]) {
  const r = (v: number) => Math.round(v * 10) / 10;
  return {
    p50: r(percentile(values, 50)),
    p90: r(percentile(values, 90)),
    p99: r(percentile(values, 99)),
    max: r(Math.max(...values)),
    n: values.length,
  };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      providers: { type: "string", default: "40" },
      rounds: { type: "string", default: "2" },
      offsets: { type: "string" },
      "backoff-ms": { type: "string", default: "200" },
      "runtime-cmd": { type: "string" },
      out: { type: "string" },
      "no-expect": { type: "boolean", default: false },
    },
  });
  const n = Number(values.providers);
  const rounds = Number(values.rounds);
  const backoffMs = Number(values["backoff-ms"]);
  const expectOff = values["no-expect"] === true;
  const offsets = values.offsets
    ? values.offsets.split(",").map((v) => Number(v.trim()))
    : DEFAULT_OFFSETS_MS;
  if (![n, rounds, backoffMs, ...offsets].every((v) => Number.isFinite(v) && v >= 0)) {
    throw new RangeError("--providers, --rounds, --backoff-ms and --offsets take numbers >= 0");
  }
  const defaults = defaultCommands(REPO);
  const runtimeCmd = values["runtime-cmd"] ? splitCommand(values["runtime-cmd"]) : defaults.runtime;
  if ([...runtimeCmd, ...defaults.provider].some((w) => w.startsWith(BUNDLE_DIR.pathname))) {
    await buildAll();
  }
  const dir = await Deno.makeTempDir({ prefix: "estop-storm-" });
  try {
    await Deno.writeTextFile(`${dir}/sim.yaml`, simProviderYaml());
    const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
    const port = listener.addr.port;
    listener.close();
    await Deno.writeTextFile(
      `${dir}/runtime.yaml`,
      runtimeYaml({
        providerCount: n,
        port,
        providerCmd: defaults.provider,
        simConfigPath: `${dir}/sim.yaml`,
        pollIntervalMs: 100,
        dataDir: `${dir}/data`,
        safeStateExpect: !expectOff,
        // Every storm is the first failure of a streak (it resets after success_reset_ms).
        restartPolicy: {
          maxAttempts: 3,
          backoffMs: [backoffMs, 1000, 3000],
          successResetMs: SUCCESS_RESET_MS,
        },
      }),
    );
    await new Deno.Command(runtimeCmd[0]!, { args: [...runtimeCmd.slice(1), "--version"] })
      .output();
    const rt = await RuntimeProcess.start({
      cmd: runtimeCmd,
      configPath: `${dir}/runtime.yaml`,
      port,
      expectedProviders: n,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    const loadStart = loadAverage();
    const storms: Storm[] = [];
    try {
      await new Promise((r) => setTimeout(r, 3000)); // start-up JIT and first polls settle
      const ticks = await clockTicksPerSecond();
      for (let round = 0; round < rounds; round++) {
        for (const offset of offsets) {
          const s = await storm(rt, port, n, offset, ticks);
          storms.push(s);
          console.error(
            `storm: offset ${offset} ms: latch ${s.latchMs.toFixed(1)} ms, answer ${
              s.answerMs.toFixed(0)
            } ms (read-back ${s.verifyMs} ms, ${s.verifyOutcome}), recovery ${
              s.recoveryMs.toFixed(0)
            } ms, runtime CPU ${s.cpuPct.toFixed(0)} %`,
          );
        }
      }
    } catch (err) {
      console.error(`--- runtime output (tail) ---\n${rt.outputTail()}`);
      throw err;
    } finally {
      await rt.stop();
    }
    const result = {
      providers: n,
      backoff_ms: backoffMs,
      runtime_cmd: runtimeCmd.join(" "),
      /** Spawn -> API answers with every provider AVAILABLE (start-up spawns are paced too). */
      startup_ms: Math.round(rt.startupMs),
      load_average_start: loadStart,
      load_average_end: loadAverage(),
      latch_ms: figures(storms.map((s) => s.latchMs)),
      answer_ms: figures(storms.map((s) => s.answerMs)),
      verify_ms: figures(storms.map((s) => s.verifyMs)),
      verify_outcomes: countBy(storms.map((s) => s.verifyOutcome)),
      recovery_ms_median: Math.round(median(storms.map((s) => s.recoveryMs))),
      runtime_cpu_pct_median: Math.round(median(storms.map((s) => s.cpuPct))),
      storms,
    };
    console.log(JSON.stringify({ ...result, storms: undefined }, null, 2));
    if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
