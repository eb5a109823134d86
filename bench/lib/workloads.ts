/**
 * The workloads of bench/README.md ("Workloads"), each run against one started runtime. A workload
 * throws BenchFailure when the runtime answers non-2xx, a stream breaks, or an observed value is
 * wrong.
 */
import { BenchFailure, KeepAliveConnection } from "./api.ts";
import { BENCH_DEVICES } from "./config_gen.ts";
import type { Profile } from "./profile.ts";
import { cpuPercent, sampleCpuMem } from "./proc.ts";
import type { MetricKey, RuntimeLabel } from "./results.ts";
import type { RuntimeProcess } from "./runtime_proc.ts";
import { frameId, parseSseFrame, SseClient } from "./sse.ts";
import { intervals, median, percentile, slope } from "./stats.ts";

/** What a workload gets: the runtime, where to record, and the run's sizes. */
export interface SessionContext {
  readonly rt: RuntimeProcess;
  readonly label: RuntimeLabel;
  readonly providers: readonly string[];
  readonly profile: Profile;
  readonly ticksPerSecond: number;
  readonly record: (key: MetricKey, value: number) => void;
  readonly log: (line: string) => void;
}

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Call bodies

/** tempctl0 set_mode "open": the cheapest call the sim offers (it has no READ function). */
function configCall(provider: string): string {
  return JSON.stringify({
    provider_id: provider,
    device_id: BENCH_DEVICES.tempctl,
    function_id: 1,
    args: { mode: { type: "string", string: "open" } },
  });
}

/** motorctl0 set_motor_duty(motor_index, duty): an ACTUATE call. */
function dutyCall(provider: string, duty: number, motor = 1): string {
  return JSON.stringify({
    provider_id: provider,
    device_id: BENCH_DEVICES.motorctl,
    function_id: 10,
    args: {
      motor_index: { type: "int64", int64: motor },
      duty: { type: "double", double: duty },
    },
  });
}

/** relayio0 set_relay_ch1(enabled). */
function relayCall(provider: string, enabled: boolean): string {
  return JSON.stringify({
    provider_id: provider,
    device_id: BENCH_DEVICES.relayio,
    function_id: 1,
    args: { enabled: { type: "bool", bool: enabled } },
  });
}

/**
 * Puts the runtime in MANUAL (it starts in IDLE, where actuating calls are refused). A runtime
 * already in MANUAL is left as it is: the C++ anolis runtime without automation starts there and
 * answers POST /v0/mode 503.
 */
export async function armManual(ctx: SessionContext): Promise<void> {
  const status = await ctx.rt.api.get("/v0/runtime/status");
  if (status.mode === "MANUAL") return;
  const res = await ctx.rt.api.post("/v0/mode", { mode: "MANUAL" });
  if (res.mode !== "MANUAL") throw new BenchFailure(`POST /v0/mode MANUAL left mode ${res.mode}`);
}

// ---------------------------------------------------------------------------------------------
// Load loops

/** Runs `one` back to back n times; returns each latency. */
async function sequential(n: number, one: (i: number) => Promise<number>): Promise<number[]> {
  const out: number[] = [];
  for (let i = 0; i < n; i++) out.push(await one(i));
  return out;
}

/**
 * `clients` loops each issuing `one` back to back until windowMs has passed. Returns every
 * latency and the rate over the time the last request finished (not the nominal window).
 */
async function closedLoop(
  clients: number,
  windowMs: number,
  one: (i: number, client: number) => Promise<number>,
): Promise<{ latencies: number[]; perSecond: number }> {
  const latencies: number[] = [];
  const t0 = performance.now();
  const end = t0 + windowMs;
  let i = 0;
  await Promise.all(
    Array.from({ length: clients }, async (_, client) => {
      while (performance.now() < end) latencies.push(await one(i++, client));
    }),
  );
  const elapsedS = (performance.now() - t0) / 1000;
  return { latencies, perSecond: latencies.length / elapsedS };
}

// ---------------------------------------------------------------------------------------------
// Workload 1: call round trip

/** Sequential p50/p99 (client 0), then calls/s and p99 of the clients in a closed loop. */
async function keepAliveRows(
  ctx: SessionContext,
  name: string,
  one: (i: number, client: number) => Promise<number>,
): Promise<void> {
  const prof = ctx.profile;
  const first = (i: number) => one(i, 0);
  await sequential(prof.warmupCalls, first);
  const seq = await sequential(prof.sequentialCalls, first);
  ctx.record({ workload: 1, name: `${name}, sequential p50`, unit: "ms" }, percentile(seq, 50));
  ctx.record({ workload: 1, name: `${name}, sequential p99`, unit: "ms" }, percentile(seq, 99));
  const c = await closedLoop(prof.concurrentClients, prof.concurrentWindowMs, one);
  const tag = `${prof.concurrentClients} clients`;
  ctx.record({ workload: 1, name: `${name}, ${tag}`, unit: "calls/s" }, c.perSecond);
  ctx.record({ workload: 1, name: `${name}, ${tag} p99`, unit: "ms" }, percentile(c.latencies, 99));
}

/** Sequential p50/p99 and 16-client calls/s for a CONFIG and an ACTUATE call on provider 0. */
export async function callRoundTrip(ctx: SessionContext): Promise<void> {
  const api = ctx.rt.api;
  const p = ctx.providers[0];
  const config = configCall(p!);
  const duty = [dutyCall(p!, 0.25), dutyCall(p!, 0.5)];
  const prof = ctx.profile;
  // Keep-alive: each client its own raw connection (api.ts KeepAliveConnection), client 0 the
  // sequential one.
  const conns = Array.from(
    { length: Math.max(1, prof.concurrentClients) },
    () => new KeepAliveConnection(api.baseUrl),
  );
  const kinds: [string, (i: number, client: number) => Promise<number>][] = [
    ["config call (tempctl set_mode)", (_, c) => conns[c]!.timed("POST", "/v0/call", config)],
    [
      "actuating call (motorctl set_motor_duty)",
      (i, c) => conns[c]!.timed("POST", "/v0/call", duty[i % 2]),
    ],
  ];
  try {
    for (const [name, kind] of kinds) await keepAliveRows(ctx, name, kind);
  } finally {
    for (const c of conns) c.close();
  }
  // The same actuating call from clients that open a connection per call (`Connection: close`).
  const name = "actuating call, new connection per call";
  const fresh = (i: number) => api.timedNewConnection("POST", "/v0/call", duty[i % 2]);
  await sequential(prof.warmupCalls, fresh);
  const seq = await sequential(prof.sequentialCalls, fresh);
  ctx.record({ workload: 1, name: `${name}, sequential p50`, unit: "ms" }, percentile(seq, 50));
  ctx.record({ workload: 1, name: `${name}, sequential p99`, unit: "ms" }, percentile(seq, 99));
  const h0 = sampleCpuMem(Deno.pid, []);
  const r0 = sampleCpuMem(ctx.rt.pid, []);
  const c = await closedLoop(prof.concurrentClients, prof.concurrentWindowMs, fresh);
  const tag = `${prof.concurrentClients} clients`;
  ctx.record({ workload: 1, name: `${name}, ${tag}`, unit: "calls/s" }, c.perSecond);
  ctx.record({ workload: 1, name: `${name}, ${tag} p99`, unit: "ms" }, percentile(c.latencies, 99));
  // On a 2-core machine the harness's own share says how far the clients, not the runtime, set
  // the rate.
  const ticks = ctx.ticksPerSecond;
  ctx.record(
    { workload: 1, name: `${name}, ${tag}: runtime CPU`, unit: "% of 1 core" },
    cpuPercent(r0, sampleCpuMem(ctx.rt.pid, []), ticks).main,
  );
  ctx.record(
    { workload: 1, name: `${name}, ${tag}: harness CPU`, unit: "% of 1 core" },
    cpuPercent(h0, sampleCpuMem(Deno.pid, []), ticks).main,
  );
  // Leave the motor stopped for the next workloads.
  await api.post("/v0/call", JSON.parse(dutyCall(p!, 0)));
}

// ---------------------------------------------------------------------------------------------
// Workload 2: state reads

/** GET /v0/state and GET /v0/state/{p}/{d} with 16 clients: requests/s and p99. */
export async function stateReads(ctx: SessionContext): Promise<void> {
  const api = ctx.rt.api;
  const p = ctx.providers[0];
  const reads: [string, string][] = [
    ["GET /v0/state", "/v0/state"],
    ["GET /v0/state/{p}/{d}", `/v0/state/${p}/${BENCH_DEVICES.analogsensor}`],
  ];
  const prof = ctx.profile;
  for (const [name, path] of reads) {
    // Sanity first: a fast empty answer must not read as a good number.
    const body = await api.get(path);
    const devices = body.devices ?? [body];
    if (!Array.isArray(devices) || devices.length === 0 || !Array.isArray(devices[0].values)) {
      throw new BenchFailure(`${name}: answer carries no device state`);
    }
    if (devices[0].values.length === 0) throw new BenchFailure(`${name}: device has no values`);
    await sequential(prof.warmupCalls, () => api.timed("GET", path));
    const c = await closedLoop(
      prof.concurrentClients,
      prof.readWindowMs,
      () => api.timed("GET", path),
    );
    const tag = `${prof.concurrentClients} clients`;
    ctx.record({ workload: 2, name: `${name}, ${tag}`, unit: "req/s" }, c.perSecond);
    ctx.record(
      { workload: 2, name: `${name}, ${tag} p99`, unit: "ms" },
      percentile(c.latencies, 99),
    );
  }
}

// ---------------------------------------------------------------------------------------------
// Workload 3 (and the soak of 7): polling window

/** Fails unless every provider is still AVAILABLE (a crash during a window is an error). */
async function assertProvidersUp(ctx: SessionContext, when: string): Promise<void> {
  const status = await ctx.rt.api.get("/v0/runtime/status");
  const down = (status.providers ?? []).filter((p: { state: string }) => p.state !== "AVAILABLE");
  if (down.length > 0 || (status.providers ?? []).length !== ctx.providers.length) {
    throw new BenchFailure(
      `${when}: providers not AVAILABLE: ${
        down.map((p: { provider_id: string }) => p.provider_id).join(", ")
      }`,
    );
  }
}

/** Results of one polling window. */
export interface PollingWindowResult {
  readonly runtimeCpuPct: number;
  readonly providersCpuPct: number;
  readonly runtimeRssMb: number;
  readonly providersRssMb: number;
  readonly rssSamples: { atS: number; mb: number }[];
  readonly achievedHzMedian: number;
  readonly achievedHzMin: number;
  readonly jitterP99Ms: number;
  readonly periodP50Ms: number;
}

/**
 * Idle polling for windowMs with one SSE client filtered to `voltage_ch1` (one event per
 * analogsensor poll, because its reading carries fresh noise on every read). The poll period of a
 * device is the gap between consecutive event `timestamp_ms` values (runtime clock, 1 ms
 * resolution); jitter is |period - interval_ms|.
 */
export async function pollingWindow(
  ctx: SessionContext,
  windowMs: number,
  rssEveryMs: number,
): Promise<PollingWindowResult> {
  const api = ctx.rt.api;
  const stamps = new Map<string, number[]>(ctx.providers.map((p) => [p, []]));
  let measuring = false;
  let badFrame: string | null = null;
  const sse = await SseClient.open(`${api.baseUrl}/v0/events?signal_id=voltage_ch1`, (frame) => {
    if (!measuring) return;
    const f = parseSseFrame(frame);
    if (!f || f.event !== "state_update") return;
    try {
      const d = JSON.parse(f.data);
      if (d.device_id === BENCH_DEVICES.analogsensor) {
        stamps.get(d.provider_id)?.push(d.timestamp_ms);
      }
    } catch {
      badFrame ??= frame.slice(0, 200);
    }
  });
  try {
    await sleep(ctx.profile.settleMs);
    const pids = ctx.rt.providerPids();
    const s0 = sampleCpuMem(ctx.rt.pid, pids);
    measuring = true;
    const rssSamples: { atS: number; mb: number }[] = [];
    const end = s0.atMs + windowMs;
    for (;;) {
      const left = end - performance.now();
      if (left <= 0) break;
      await sleep(Math.min(rssEveryMs, left));
      const s = sampleCpuMem(ctx.rt.pid, []);
      rssSamples.push({ atS: (s.atMs - s0.atMs) / 1000, mb: s.mainRssKb / 1024 });
      if (sse.error) throw new BenchFailure(`event stream failed: ${sse.error}`);
    }
    measuring = false;
    const s1 = sampleCpuMem(ctx.rt.pid, pids);
    if (badFrame) throw new BenchFailure(`unparseable state_update frame: ${badFrame}`);
    await assertProvidersUp(ctx, "polling window");
    const cpu = cpuPercent(s0, s1, ctx.ticksPerSecond);
    const jitter: number[] = [];
    const periods: number[] = [];
    const rates: number[] = [];
    for (const [provider, ts] of stamps) {
      if (ts.length < 2) {
        throw new BenchFailure(
          `no polls of ${provider}/${BENCH_DEVICES.analogsensor} seen during the window`,
        );
      }
      const gaps = intervals(ts);
      periods.push(...gaps);
      for (const g of gaps) jitter.push(Math.abs(g - ctx.profile.pollIntervalMs));
      rates.push(((ts.length - 1) * 1000) / (ts[ts.length - 1]! - ts[0]!));
    }
    return {
      runtimeCpuPct: cpu.main,
      providersCpuPct: cpu.others,
      runtimeRssMb: s1.mainRssKb / 1024,
      providersRssMb: s1.otherRssKb / 1024,
      rssSamples,
      achievedHzMedian: median(rates),
      achievedHzMin: Math.min(...rates),
      jitterP99Ms: percentile(jitter, 99),
      periodP50Ms: percentile(periods, 50),
    };
  } finally {
    await sse.close();
  }
}

/** Workload 3 for this session's provider count. */
export async function pollingScale(ctx: SessionContext): Promise<void> {
  const n = ctx.providers.length;
  const r = await pollingWindow(ctx, ctx.profile.scaleWindowMs, 1000);
  const hz = 1000 / ctx.profile.pollIntervalMs;
  const at = `${n} provider${n === 1 ? "" : "s"}`;
  ctx.record({ workload: 3, name: `${at}: runtime CPU`, unit: "% of 1 core" }, r.runtimeCpuPct);
  ctx.record(
    { workload: 3, name: `${at}: providers' CPU (sum)`, unit: "% of 1 core" },
    r.providersCpuPct,
  );
  ctx.record({ workload: 3, name: `${at}: runtime RSS`, unit: "MiB" }, r.runtimeRssMb);
  ctx.record({ workload: 3, name: `${at}: providers' RSS (sum)`, unit: "MiB" }, r.providersRssMb);
  ctx.record({
    workload: 3,
    name: `${at}: poll rate per device, median (set ${hz} Hz)`,
    unit: "Hz",
  }, r.achievedHzMedian);
  ctx.record(
    { workload: 3, name: `${at}: poll rate, slowest device (set ${hz} Hz)`, unit: "Hz" },
    r.achievedHzMin,
  );
  ctx.record({ workload: 3, name: `${at}: poll period p50`, unit: "ms" }, r.periodP50Ms);
  ctx.record({
    workload: 3,
    name: `${at}: poll jitter p99 (deviation from ${ctx.profile.pollIntervalMs} ms)`,
    unit: "ms",
  }, r.jitterP99Ms);
}

/** Workload 7 soak: a long polling window; RSS growth from a least-squares fit after minute 1. */
export async function memorySoak(ctx: SessionContext): Promise<void> {
  const prof = ctx.profile;
  const r = await pollingWindow(ctx, prof.soakWindowMs, prof.soakSampleMs);
  const late = r.rssSamples.filter((s) => s.atS >= 60);
  const growthMbPerH = slope(late.map((s) => s.atS / 3600), late.map((s) => s.mb));
  const at = `${ctx.providers.length} providers, ${Math.round(prof.soakWindowMs / 60000)} min`;
  ctx.record(
    { workload: 7, name: `${at}: RSS at start of soak`, unit: "MiB" },
    r.rssSamples[0]?.mb ?? NaN,
  );
  ctx.record({ workload: 7, name: `${at}: RSS at end of soak`, unit: "MiB" }, r.runtimeRssMb);
  ctx.record(
    { workload: 7, name: `${at}: RSS growth (fit after minute 1)`, unit: "MB/h" },
    growthMbPerH,
  );
  ctx.record({ workload: 7, name: `${at}: runtime CPU`, unit: "% of 1 core" }, r.runtimeCpuPct);
  ctx.record({ workload: 7, name: `${at}: poll jitter p99`, unit: "ms" }, r.jitterP99Ms);
}

// ---------------------------------------------------------------------------------------------
// Workload 4: SSE fan-out

interface Probe {
  readonly provider: string;
  readonly duty: number;
  readonly startMs: number;
  endMs: number;
  readonly arrivals: number[];
}

/**
 * `fanoutClients` unfiltered SSE clients while every provider polls. Every probeIntervalMs the
 * harness sets a new motor-1 duty on the next provider (round robin) and each client times the
 * matching `motor1_duty` state_update: call-start->event (upper bound of "value changed at the
 * provider -> event at the client", since the provider applies the value during the call) and
 * call-return->event (can be negative when the event overtakes the HTTP answer).
 * Events/s and losses come from the global event ids: an unfiltered client sees every id, so a
 * gap is an event the runtime dropped for that client (bounded per-client queue).
 */
export async function sseFanout(ctx: SessionContext): Promise<void> {
  const api = ctx.rt.api;
  const prof = ctx.profile;
  const probes = new Map<string, Probe>();
  let measuring = false;
  let badFrame: string | null = null;
  interface ClientStats {
    frames: number;
    firstId: number | null;
    lastId: number | null;
  }
  const stats: ClientStats[] = [];
  const clients: SseClient[] = [];
  try {
    for (let i = 0; i < prof.fanoutClients; i++) {
      const st: ClientStats = { frames: 0, firstId: null, lastId: null };
      stats.push(st);
      clients.push(
        await SseClient.open(`${api.baseUrl}/v0/events`, (frame, at) => {
          if (!measuring) return;
          const id = frameId(frame);
          if (id === null) return; // keep-alive comment
          st.frames++;
          st.firstId ??= id;
          st.lastId = id;
          if (!frame.includes('"motor1_duty"')) return;
          const f = parseSseFrame(frame);
          if (!f || f.event !== "state_update") return;
          try {
            const d = JSON.parse(f.data);
            probes.get(`${d.provider_id}|${d.value?.double}`)?.arrivals.push(at);
          } catch {
            badFrame ??= frame.slice(0, 200);
          }
        }),
      );
    }
    await sleep(Math.min(prof.settleMs, 1000));
    const pids = ctx.rt.providerPids();
    const s0 = sampleCpuMem(ctx.rt.pid, pids);
    // The harness's own CPU: when it nears 100 % the clients, not the runtime, set the pace.
    const h0 = sampleCpuMem(Deno.pid, []);
    measuring = true;
    const t0 = performance.now();
    const lastDuty = new Map<string, number>();
    let k = 0;
    while (performance.now() - t0 < prof.fanoutWindowMs) {
      const slot = t0 + k * prof.probeIntervalMs;
      const wait = slot - performance.now();
      if (wait > 0) await sleep(wait);
      const provider = ctx.providers[k % ctx.providers.length];
      // A value different from this provider's previous one, so the change produces an event.
      const count = Math.floor(k / ctx.providers.length);
      let duty = ((count % 90) + 1) / 100;
      if (lastDuty.get(provider!) === duty) duty = 0.95;
      lastDuty.set(provider!, duty);
      const probe: Probe = {
        provider: provider!,
        duty,
        startMs: performance.now(),
        endMs: NaN,
        arrivals: [],
      };
      probes.set(`${provider}|${duty}`, probe);
      await api.timed("POST", "/v0/call", dutyCall(provider!, duty));
      probe.endMs = performance.now();
      k++;
    }
    const windowS = (performance.now() - t0) / 1000;
    const s1 = sampleCpuMem(ctx.rt.pid, pids);
    const h1 = sampleCpuMem(Deno.pid, []);
    // Late arrivals: give each client up to 2 s to receive the last probes' events.
    const expected = probes.size * prof.fanoutClients;
    const deadline = performance.now() + 2000;
    const arrived = () => [...probes.values()].reduce((a, p) => a + p.arrivals.length, 0);
    while (arrived() < expected && performance.now() < deadline) await sleep(50);
    measuring = false;
    for (const c of clients) {
      if (c.error) throw new BenchFailure(`an event stream failed during fan-out: ${c.error}`);
    }
    if (badFrame) throw new BenchFailure(`unparseable motor1_duty frame: ${badFrame}`);
    await assertProvidersUp(ctx, "SSE fan-out");

    const fromStart: number[] = [];
    const fromReturn: number[] = [];
    for (const p of probes.values()) {
      for (const at of p.arrivals) {
        fromStart.push(at - p.startMs);
        fromReturn.push(at - p.endMs);
      }
    }
    const rates = stats.map((s) => s.frames / windowS);
    const lossPct = stats.map((s) => {
      if (s.firstId === null || s.lastId === null) return 100;
      const span = s.lastId - s.firstId + 1;
      return span > 0 ? Math.max(0, (1 - s.frames / span) * 100) : 0;
    });
    const cpu = cpuPercent(s0, s1, ctx.ticksPerSecond);
    const at = `${prof.fanoutClients} clients, ${ctx.providers.length} providers`;
    ctx.record(
      { workload: 4, name: `${at}: events/s per client, median`, unit: "events/s" },
      median(rates),
    );
    ctx.record(
      { workload: 4, name: `${at}: events/s per client, slowest`, unit: "events/s" },
      Math.min(...rates),
    );
    ctx.record(
      { workload: 4, name: `${at}: events lost per client, median`, unit: "%" },
      median(lossPct),
    );
    ctx.record(
      { workload: 4, name: `${at}: delay call start → event p50`, unit: "ms" },
      percentile(fromStart, 50),
    );
    ctx.record(
      { workload: 4, name: `${at}: delay call start → event p99`, unit: "ms" },
      percentile(fromStart, 99),
    );
    ctx.record(
      { workload: 4, name: `${at}: delay call return → event p50`, unit: "ms" },
      percentile(fromReturn, 50),
    );
    ctx.record(
      { workload: 4, name: `${at}: delay call return → event p99`, unit: "ms" },
      percentile(fromReturn, 99),
    );
    ctx.record(
      { workload: 4, name: `${at}: probe events missed`, unit: "%" },
      expected === 0 ? NaN : ((expected - fromStart.length) / expected) * 100,
    );
    ctx.record({ workload: 4, name: `${at}: runtime CPU`, unit: "% of 1 core" }, cpu.main);
    ctx.record(
      {
        workload: 4,
        name: `${at}: harness CPU (all ${prof.fanoutClients} clients)`,
        unit: "% of 1 core",
      },
      cpuPercent(h0, h1, ctx.ticksPerSecond).main,
    );
    ctx.log(
      `    fan-out: ${probes.size} probes, ${fromStart.length}/${expected} probe events received`,
    );
  } finally {
    measuring = false;
    await Promise.all(clients.map((c) => c.close()));
  }
}

// ---------------------------------------------------------------------------------------------
// Workload 6: e-stop

/**
 * Sets motor 1 and relay 1 on every provider, then times POST /v0/estop until the answer reports
 * every ladder action done; checks each action succeeded and the motor duty reads 0 afterwards;
 * clears the latch and re-arms MANUAL. Repeated estopReps times.
 */
export async function estop(ctx: SessionContext): Promise<void> {
  const api = ctx.rt.api;
  const latencies: number[] = [];
  /** Latch + ladder (+ drain and FAULT hooks): the answer's time minus the read-back. */
  const beforeVerify: number[] = [];
  let actions = 0;
  const status = await api.get("/v0/runtime/status");
  const uncovered = Number(status.estop?.uncovered_actuating_functions ?? NaN);
  for (let rep = 0; rep < ctx.profile.estopReps; rep++) {
    await Promise.all(ctx.providers.map(async (p) => {
      await api.post("/v0/call", JSON.parse(dutyCall(p, 0.5)));
      await api.post("/v0/call", JSON.parse(relayCall(p, true)));
    }));
    const t0 = performance.now();
    const res = await api.post("/v0/estop", { reason: "bench" });
    const total = performance.now() - t0;
    latencies.push(total);
    beforeVerify.push(total - Number(res.verification?.elapsed_ms ?? 0));
    if (res.latched !== true) throw new BenchFailure("POST /v0/estop: latched is not true");
    const list: { device_handle: string; function: string; success: boolean; error?: string }[] =
      res.actions ?? [];
    const failed = list.filter((a) => !a.success);
    if (list.length === 0) {
      throw new BenchFailure(`POST /v0/estop ran no action (rung ${res.software_safe_state})`);
    }
    if (failed.length > 0) {
      throw new BenchFailure(
        `POST /v0/estop: ${failed.length} actions failed, e.g. ${failed[0]!.device_handle} ${
          failed[0]!.function
        }: ${failed[0]!.error}`,
      );
    }
    actions = list.length;
    // The cache must show the zeroed duty: a latch that reports success without acting is wrong.
    for (const p of ctx.providers) await expectDuty(ctx, p, 0);
    await api.post("/v0/estop/clear");
    const mode = await api.get("/v0/mode");
    if (mode.mode !== "MANUAL") await armManual(ctx);
  }
  const at = `${ctx.providers.length} providers`;
  ctx.record(
    { workload: 6, name: `${at}: POST /v0/estop latency p50`, unit: "ms" },
    percentile(latencies, 50),
  );
  ctx.record(
    { workload: 6, name: `${at}: POST /v0/estop latency max`, unit: "ms" },
    Math.max(...latencies),
  );
  ctx.record(
    { workload: 6, name: `${at}: e-stop latch + ladder (before verification) p50`, unit: "ms" },
    percentile(beforeVerify, 50),
  );
  ctx.record({ workload: 6, name: `${at}: safe-state actions per e-stop`, unit: "calls" }, actions);
  ctx.record(
    { workload: 6, name: `${at}: actuating functions left uncovered`, unit: "functions" },
    uncovered,
  );
}

/** Waits (bounded) until the cached motor-1 duty of `provider` equals `duty`. */
async function expectDuty(ctx: SessionContext, provider: string, duty: number): Promise<void> {
  const path = `/v0/state/${provider}/${BENCH_DEVICES.motorctl}?signal_id=motor1_duty`;
  const deadline = performance.now() + 2000 + 2 * ctx.profile.pollIntervalMs;
  let seen: unknown = undefined;
  while (performance.now() < deadline) {
    const body = await ctx.rt.api.get(path);
    seen = body.values?.[0]?.value?.double;
    if (seen === duty) return;
    await sleep(20);
  }
  throw new BenchFailure(
    `${provider}/${BENCH_DEVICES.motorctl} motor1_duty is ${seen} after e-stop, expected ${duty}`,
  );
}

/**
 * Workload 8: behavior-tree tick rate. Enters AUTO with a tree that never calls a device and
 * compares the engine's tick count over a window with tick_rate_hz.
 */
export async function btTickRate(ctx: SessionContext): Promise<void> {
  const api = ctx.rt.api;
  const auto = await api.post("/v0/mode", { mode: "AUTO" });
  if (auto.mode !== "AUTO") throw new BenchFailure(`POST /v0/mode AUTO left mode ${auto.mode}`);
  await sleep(500); // let the first ticks run
  const sample = async () => {
    const s = await api.get("/v0/automation/status");
    const d = s.engine_diagnostics ?? {};
    if (s.execution_status !== "running" || (d.error_count ?? 0) > 0) {
      throw new BenchFailure(
        `automation is ${s.execution_status} (${s.last_error ?? "no error"}) during workload 8`,
      );
    }
    return { ticks: Number(d.total_ticks), at: performance.now() };
  };
  const a = await sample();
  await sleep(ctx.profile.btWindowMs);
  const b = await sample();
  await api.post("/v0/mode", { mode: "MANUAL" });
  const hz = ((b.ticks - a.ticks) * 1000) / (b.at - a.at);
  const want = ctx.profile.btTickRateHz;
  ctx.record({ workload: 8, name: `BT ticks/s at tick_rate_hz ${want}`, unit: "Hz" }, hz);
  ctx.record(
    { workload: 8, name: `BT achieved / configured tick rate`, unit: "%" },
    (100 * hz) / want,
  );
}
