/**
 * deno run -A bench/sparkplug.ts [--providers 10] [--rounds 2] [--warm 5] [--secs 20]
 *   [--estops 10] [--runtime-cmd "<cmd>"] [--out FILE]
 *
 * What the Sparkplug B edge node costs and that the e-stop never waits for the network (issue 38,
 * docs/sparkplug.md). A real Mosquitto on 127.0.0.1 (tests/helpers/mosquitto.ts; Debian's
 * `mosquitto`) and the runtime with `--providers` simulated providers polled at 10 Hz
 * (bench/lib/config_gen.ts; the sims' values drift, so every poll changes something):
 *
 * 1. **Idle, Sparkplug off vs on**: sessions alternate off/on, on/off over `--rounds`; after
 *    `--warm` s, the runtime's CPU (% of one core, utime + stime from /proc) over `--secs` s and
 *    its RSS at the end. With Sparkplug on, a subscriber in this process counts the DDATA messages
 *    (and their metrics) on `spBv1.0/bench/DDATA/#` over the same window: the DDATA rate.
 * 2. **E-stop with the broker stalled vs not**: with Sparkplug on, `--estops` times each:
 *    `POST /v0/estop` written on a connection opened beforehand; request -> answer read, and
 *    request -> the `estop_change` (latched) event on an open `GET /v0/events` stream; then the
 *    latch is cleared. Stalled: the Mosquitto process is SIGSTOPped (connections stay open, nothing
 *    is read: the runtime's writes pile up), resumed with SIGCONT after the series.
 *
 * Prints a table (p50/p90/max) and, with `--out`, writes JSON. Not a test; Linux (reads /proc).
 * Default runtime command: the bundle, built first, as `deno task bench` runs it.
 */
import { parseArgs } from "node:util";
import { Buffer } from "node:buffer";
import mqtt from "mqtt";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { clockTicksPerSecond, cpuPercent, loadAverage, sampleCpuMem } from "./lib/proc.ts";
import { RuntimeProcess } from "./lib/runtime_proc.ts";
import { parseSseFrame, SseClient } from "./lib/sse.ts";
import { percentile } from "./lib/stats.ts";
import { Mosquitto, mosquittoMissing } from "../tests/helpers/mosquitto.ts";
import { decode } from "../src/sparkplug/mod.ts";

const REPO = new URL("..", import.meta.url).pathname.replace(/\/$/, "");
/** The generated config's runtime.name: the edge node id; the group is the same word. */
const GROUP = "bench";
/** How long the runtime may take to report every provider AVAILABLE. */
const READY_TIMEOUT_MS = 120_000;
/** Bound on one e-stop answer and on its event (the runtime's own bounds are far below it). */
const ESTOP_TIMEOUT_MS = 30_000;
/** After SIGSTOP, before the stalled series: the runtime's writes start to pile up. */
const STALL_SETTLE_MS = 2000;
/** Bound on waiting for the edge node's births before measuring. */
const BIRTH_TIMEOUT_MS = 30_000;

interface IdleSession {
  readonly sparkplug: boolean;
  readonly cpuPct: number;
  readonly rssMiB: number;
  /** DDATA messages per second seen by the subscriber (Sparkplug on only). */
  readonly ddataPerS: number | null;
  /** Metrics per second in those messages. */
  readonly metricsPerS: number | null;
  readonly load1: number | null;
}

interface EstopSample {
  readonly stalled: boolean;
  readonly answerMs: number;
  readonly eventMs: number;
}

function epochMs(): number {
  return performance.timeOrigin + performance.now();
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = l.addr.port;
  l.close();
  return port;
}

async function writeConfig(
  dir: string,
  o: { providers: number; port: number; providerCmd: readonly string[]; brokerUrl: string | null },
): Promise<string> {
  const sim = `${dir}/sim.yaml`;
  await Deno.writeTextFile(sim, simProviderYaml());
  let yaml = runtimeYaml({
    providerCount: o.providers,
    port: o.port,
    providerCmd: o.providerCmd,
    simConfigPath: sim,
    pollIntervalMs: 100,
    dataDir: `${dir}/data`,
  });
  if (o.brokerUrl !== null) {
    yaml += `sparkplug:\n  enabled: true\n  broker_url: ${o.brokerUrl}\n  group_id: ${GROUP}\n`;
  }
  const path = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(path, yaml);
  return path;
}

/** A subscriber counting the group's messages by type (DDATA metrics too). */
async function subscriber(url: string) {
  const client = await mqtt.connectAsync(url, { clientId: `bench-${crypto.randomUUID()}` });
  const counts = { nbirth: 0, dbirth: 0, ddata: 0, ddataMetrics: 0 };
  client.on("message", (topic: string, payload: Buffer) => {
    const type = topic.split("/")[2];
    if (type === "NBIRTH") counts.nbirth++;
    else if (type === "DBIRTH") counts.dbirth++;
    else if (type === "DDATA") {
      counts.ddata++;
      counts.ddataMetrics += decode(new Uint8Array(payload)).metrics?.length ?? 0;
    }
  });
  await client.subscribeAsync(`spBv1.0/${GROUP}/#`, { qos: 0 });
  return { counts, close: () => client.endAsync(true) };
}

async function idleSession(
  o: {
    providers: number;
    warm: number;
    secs: number;
    runtimeCmd: readonly string[];
    providerCmd: readonly string[];
    broker: Mosquitto;
    sparkplug: boolean;
  },
  ticks: number,
): Promise<IdleSession> {
  const dir = await Deno.makeTempDir({ prefix: "bench-sparkplug-" });
  const port = freePort();
  const sub = o.sparkplug ? await subscriber(o.broker.url) : null;
  try {
    const configPath = await writeConfig(dir, {
      providers: o.providers,
      port,
      providerCmd: o.providerCmd,
      brokerUrl: o.sparkplug ? o.broker.url : null,
    });
    const rt = await RuntimeProcess.start({
      cmd: o.runtimeCmd,
      configPath,
      port,
      expectedProviders: o.providers,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    try {
      if (sub) await waitBirths(sub.counts, o.providers * 4);
      await sleep(o.warm * 1000);
      const d0 = sub ? { ...sub.counts } : null;
      const a = sampleCpuMem(rt.pid, []);
      await sleep(o.secs * 1000);
      const b = sampleCpuMem(rt.pid, []);
      const wallS = (b.atMs - a.atMs) / 1000;
      return {
        sparkplug: o.sparkplug,
        cpuPct: cpuPercent(a, b, ticks).main,
        rssMiB: b.mainRssKb / 1024,
        ddataPerS: sub && d0 ? (sub.counts.ddata - d0.ddata) / wallS : null,
        metricsPerS: sub && d0 ? (sub.counts.ddataMetrics - d0.ddataMetrics) / wallS : null,
        load1: loadAverage()?.[0] ?? null,
      };
    } catch (err) {
      console.error(`--- runtime output (tail) ---\n${rt.outputTail()}`);
      throw err;
    } finally {
      await rt.stop();
    }
  } finally {
    await sub?.close();
    await Deno.remove(dir, { recursive: true });
  }
}

/** Waits for the NBIRTH and `devices` DBIRTHs (the edge node is online). */
async function waitBirths(counts: { nbirth: number; dbirth: number }, devices: number) {
  const deadline = performance.now() + BIRTH_TIMEOUT_MS;
  while (counts.nbirth < 1 || counts.dbirth < devices) {
    if (performance.now() > deadline) {
      throw new Error(`births not seen: ${counts.nbirth} NBIRTH, ${counts.dbirth} DBIRTH`);
    }
    await sleep(50);
  }
}

/** One e-stop: request written -> answer read, and -> the latched estop_change event. */
async function estop(port: number, latchedAt: () => Promise<number>): Promise<EstopSample> {
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  const body = new TextEncoder().encode(JSON.stringify({ reason: "bench sparkplug" }));
  const request = new Uint8Array([
    ...new TextEncoder().encode(
      `POST /v0/estop HTTP/1.1\r\nhost: 127.0.0.1:${port}\r\nconnection: close\r\n` +
        `content-type: application/json\r\ncontent-length: ${body.length}\r\n\r\n`,
    ),
    ...body,
  ]);
  const event = latchedAt();
  let answer = "";
  const sentAt = epochMs();
  try {
    await conn.write(request);
    const buf = new Uint8Array(65_536);
    const decoder = new TextDecoder();
    const deadline = setTimeout(() => conn.close(), ESTOP_TIMEOUT_MS);
    try {
      for (;;) {
        const n = await conn.read(buf);
        if (n === null) break;
        answer += decoder.decode(buf.subarray(0, n), { stream: true });
      }
    } finally {
      clearTimeout(deadline);
    }
  } finally {
    try {
      conn.close();
    } catch {
      // closed by the deadline
    }
  }
  const answeredAt = epochMs();
  if (!/^HTTP\/1\.1 200/.test(answer)) throw new Error(`POST /v0/estop: ${answer.slice(0, 300)}`);
  const eventAt = await event;
  return { stalled: false, answerMs: answeredAt - sentAt, eventMs: eventAt - sentAt };
}

async function estopSeries(
  o: {
    providers: number;
    estops: number;
    runtimeCmd: readonly string[];
    providerCmd: readonly string[];
    broker: Mosquitto;
  },
): Promise<EstopSample[]> {
  const dir = await Deno.makeTempDir({ prefix: "bench-sparkplug-estop-" });
  const port = freePort();
  const sub = await subscriber(o.broker.url);
  const samples: EstopSample[] = [];
  let stalled = false;
  try {
    const configPath = await writeConfig(dir, {
      providers: o.providers,
      port,
      providerCmd: o.providerCmd,
      brokerUrl: o.broker.url,
    });
    const rt = await RuntimeProcess.start({
      cmd: o.runtimeCmd,
      configPath,
      port,
      expectedProviders: o.providers,
      readyTimeoutMs: READY_TIMEOUT_MS,
    });
    // The latched estop_change events, as a waiter per e-stop.
    let waiter: ((at: number) => void) | null = null;
    const sse = await SseClient.open(`http://127.0.0.1:${port}/v0/events`, (frame, atMs) => {
      const f = parseSseFrame(frame);
      if (!f || !f.data.includes('"estop_change"') && f.event !== "estop_change") return;
      const data = JSON.parse(f.data) as { latched?: boolean };
      if (data.latched === true && waiter) {
        waiter(performance.timeOrigin + atMs);
        waiter = null;
      }
    });
    const latchedAt = () =>
      new Promise<number>((resolve, reject) => {
        const t = setTimeout(
          () => reject(new Error("no latched estop_change event")),
          ESTOP_TIMEOUT_MS,
        );
        waiter = (at) => {
          clearTimeout(t);
          resolve(at);
        };
      });
    try {
      await waitBirths(sub.counts, o.providers * 4);
      await sleep(3000); // start-up JIT and first polls settle
      for (const stall of [false, true]) {
        if (stall) {
          o.broker.signal("SIGSTOP");
          stalled = true;
          await sleep(STALL_SETTLE_MS);
        }
        for (let i = 0; i < o.estops; i++) {
          const s = await estop(port, latchedAt);
          samples.push({ ...s, stalled: stall });
          const clear = await fetch(`http://127.0.0.1:${port}/v0/estop/clear`, { method: "POST" });
          await clear.body?.cancel();
          if (clear.status !== 200) throw new Error(`POST /v0/estop/clear -> ${clear.status}`);
          await sleep(300);
        }
        if (stall) {
          o.broker.signal("SIGCONT");
          stalled = false;
        }
      }
    } catch (err) {
      console.error(`--- runtime output (tail) ---\n${rt.outputTail()}`);
      throw err;
    } finally {
      if (stalled) o.broker.signal("SIGCONT");
      await sse.close();
      await rt.stop();
    }
  } finally {
    await sub.close();
    await Deno.remove(dir, { recursive: true });
  }
  return samples;
}

function fig(values: readonly number[]): string {
  if (values.length === 0) return "-";
  const r = (v: number) => v.toFixed(1);
  return `${r(percentile(values, 50))} / ${r(percentile(values, 90))} / ${r(Math.max(...values))}`;
}

function mean(values: readonly number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

if (import.meta.main) {
  if (mosquittoMissing()) Deno.exit(2);
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      providers: { type: "string", default: "10" },
      rounds: { type: "string", default: "2" },
      warm: { type: "string", default: "5" },
      secs: { type: "string", default: "20" },
      estops: { type: "string", default: "10" },
      "runtime-cmd": { type: "string" },
      out: { type: "string" },
    },
  });
  const n = {
    providers: Number(values.providers),
    rounds: Number(values.rounds),
    warm: Number(values.warm),
    secs: Number(values.secs),
    estops: Number(values.estops),
  };
  if (!Object.values(n).every((v) => Number.isFinite(v) && v >= 0) || n.providers < 1) {
    throw new RangeError("--providers, --rounds, --warm, --secs and --estops take numbers >= 0");
  }
  const defaults = defaultCommands(REPO);
  const runtimeCmd = values["runtime-cmd"] ? splitCommand(values["runtime-cmd"]) : defaults.runtime;
  if ([...runtimeCmd, ...defaults.provider].some((w) => w.startsWith(BUNDLE_DIR.pathname))) {
    await buildAll();
  }
  // Warms Deno's module cache, so the first session does not compile the sources.
  await new Deno.Command(runtimeCmd[0]!, { args: [...runtimeCmd.slice(1), "--version"] }).output();
  const ticks = await clockTicksPerSecond();
  const broker = await Mosquitto.start();
  const loadStart = loadAverage();
  const idle: IdleSession[] = [];
  let estops: EstopSample[] = [];
  try {
    for (let round = 0; round < n.rounds; round++) {
      for (const sparkplug of round % 2 === 0 ? [false, true] : [true, false]) {
        const s = await idleSession({
          ...n,
          runtimeCmd,
          providerCmd: defaults.provider,
          broker,
          sparkplug,
        }, ticks);
        idle.push(s);
        console.error(
          `idle round ${round + 1}, sparkplug ${sparkplug ? "on " : "off"}: CPU ${
            s.cpuPct.toFixed(2)
          } %, RSS ${s.rssMiB.toFixed(1)} MiB` +
            (s.ddataPerS === null
              ? ""
              : `, DDATA ${s.ddataPerS.toFixed(1)}/s (${s.metricsPerS!.toFixed(0)} metrics/s)`) +
            ` (load ${s.load1?.toFixed(1) ?? "?"})`,
        );
      }
    }
    if (n.estops > 0) {
      estops = await estopSeries({
        ...n,
        runtimeCmd,
        providerCmd: defaults.provider,
        broker,
      });
    }
  } finally {
    await broker.dispose();
  }
  const off = idle.filter((s) => !s.sparkplug);
  const on = idle.filter((s) => s.sparkplug);
  const rows: Array<[string, string, string]> = [
    [
      "idle CPU, % of one core (mean)",
      off.length ? mean(off.map((s) => s.cpuPct)).toFixed(2) : "-",
      on.length ? mean(on.map((s) => s.cpuPct)).toFixed(2) : "-",
    ],
    [
      "idle RSS, MiB (mean)",
      off.length ? mean(off.map((s) => s.rssMiB)).toFixed(1) : "-",
      on.length ? mean(on.map((s) => s.rssMiB)).toFixed(1) : "-",
    ],
    [
      "DDATA messages/s at 10 Hz polling (mean)",
      "-",
      on.length ? mean(on.map((s) => s.ddataPerS!)).toFixed(1) : "-",
    ],
    [
      "DDATA metrics/s (mean)",
      "-",
      on.length ? mean(on.map((s) => s.metricsPerS!)).toFixed(0) : "-",
    ],
  ];
  const live = estops.filter((s) => !s.stalled);
  const stalled = estops.filter((s) => s.stalled);
  const estopRows: Array<[string, string, string]> = [
    [
      "e-stop request -> answer, ms (p50 / p90 / max)",
      fig(live.map((s) => s.answerMs)),
      fig(stalled.map((s) => s.answerMs)),
    ],
    [
      "e-stop request -> latch event, ms (p50 / p90 / max)",
      fig(live.map((s) => s.eventMs)),
      fig(stalled.map((s) => s.eventMs)),
    ],
  ];
  const w0 = Math.max(...[...rows, ...estopRows].map((r) => r[0].length));
  const line = (a: string, b: string, c: string) =>
    `${a.padEnd(w0)}  ${b.padStart(18)}  ${c.padStart(18)}`;
  console.log(`${n.providers} providers, 10 Hz polling, ${n.rounds} round(s) of ${n.secs} s`);
  console.log(line("", "sparkplug off", "sparkplug on"));
  for (const r of rows) console.log(line(...r));
  if (estops.length > 0) {
    console.log(line("(sparkplug on)", "broker live", "broker stalled"));
    for (const r of estopRows) console.log(line(...r));
  }
  if (values.out) {
    await Deno.writeTextFile(
      values.out,
      JSON.stringify(
        {
          ...n,
          runtime_cmd: runtimeCmd.join(" "),
          load_average_start: loadStart,
          load_average_end: loadAverage(),
          idle,
          estops,
        },
        null,
        2,
      ) + "\n",
    );
  }
}
