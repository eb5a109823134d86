/**
 * Micro-benchmark of the audit trail on the call path: CallRouter.call of an actuating function
 * through a stand-in provider (no process, no pipe: the figure is the runtime's own work per call)
 * without an audit sink, with the audit trail collapsing a repeated call, and with a distinct entry
 * per call; and AuditTrail.record alone.
 * Run: `deno bench --allow-all bench/audit_trail.bench.ts`. Not a test; no timing is asserted.
 *
 * The collapse figure of a tree calling at 100 Hz for a minute (entries and journal bytes) is
 * printed by `deno run --allow-all bench/audit_trail.bench.ts --collapse` (a fast clock, a real
 * journal in a temporary folder). `--http-ab [rounds]` runs the whole service (the simulated
 * provider as a child process, the journal in a temporary folder) and times blocks of 400
 * sequential actuating calls over real HTTP, alternating the audit sink connected and
 * disconnected in the same process, so the machine's load hits both alike.
 * bench/README.md has the figures.
 */
import { AuditTrail } from "../src/audit/mod.ts";
import type { Clock, DeviceCapabilities, Logger, TypedValue } from "../src/common/mod.ts";
import { type AuditDecision, CallRouter } from "../src/control/mod.ts";
import { journalFiles, systemClock } from "../src/host/mod.ts";
import { startServing } from "../tests/helpers/kernel.ts";
import { testConfig } from "../tests/helpers/sim_config.ts";
import type { ProviderRegistry } from "../src/providers/mod.ts";
import type { StateCache } from "../src/state/mod.ts";

const silent: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => silent,
};

const caps: DeviceCapabilities = {
  device: {
    providerId: "p0",
    deviceId: "motor0",
    providerName: "bench",
    typeId: "motor",
    typeVersion: "1",
    label: "",
    address: "",
    tags: {},
  },
  signals: [],
  functions: [{
    functionId: 10,
    name: "set_motor_duty",
    description: "",
    category: "ACTUATE",
    actuating: true,
    args: [
      {
        name: "motor_index",
        type: "int64",
        unit: "",
        description: "",
        required: true,
        min: 1,
        max: 2,
        allowedValues: [],
      },
      {
        name: "duty",
        type: "double",
        unit: "",
        description: "",
        required: true,
        min: 0,
        max: 1,
        allowedValues: [],
      },
    ],
  }],
};

const host = {
  id: "p0",
  available: true,
  request: () => Promise.resolve({ results: {} }),
};
const registry = {
  host: (id: string) => id === "p0" ? host : undefined,
  capabilities: (p: string, d: string) => p === "p0" && d === "motor0" ? caps : undefined,
} as unknown as ProviderRegistry;
const cache = { pollDevice: () => Promise.resolve() } as unknown as StateCache;
const clock: Clock = systemClock;
/** The system clock, its timers never firing: the bench measures the call, not the collapse. */
const noTimers: Clock = { ...systemClock, setTimer: () => 0, clearTimer: () => {} };

function router(audit: AuditTrail | null): CallRouter {
  const r = new CallRouter({ registry, cache, log: silent, clock });
  if (audit) r.setAuditSink(audit);
  return r;
}

function trail(): AuditTrail {
  return new AuditTrail({ clock: noTimers, log: silent, mode: () => "AUTO" });
}

function args(duty: number): Record<string, TypedValue> {
  return {
    motor_index: { type: "int64", int64: 1 },
    duty: { type: "double", double: duty },
  };
}

const request = (duty: number) => ({
  providerId: "p0",
  deviceId: "motor0",
  functionId: 10,
  args: args(duty),
  origin: "automated" as const,
  source: { kind: "automation" as const, node: "Main/Sequence[0]/CallDevice[0]" },
});

const plain = router(null);
const collapsing = router(trail());
const distinctTrail = trail();
const distinct = router(distinctTrail);
let k = 0;

Deno.bench(
  "CallRouter.call, actuating, no audit sink",
  { group: "call", baseline: true },
  async () => {
    await plain.call(request(0.5));
  },
);

Deno.bench(
  "CallRouter.call, actuating, audit: repeated call collapses",
  { group: "call" },
  async () => {
    await collapsing.call(request(0.5));
  },
);

Deno.bench(
  "CallRouter.call, actuating, audit: a new entry per call",
  { group: "call" },
  async () => {
    await distinct.call(request((k++ % 1000) / 1000));
  },
);

const recordTrail = trail();
const decision: AuditDecision = {
  action: "call",
  origin: { kind: "automation", node: "Main/Sequence[0]/CallDevice[0]" },
  outcome: "accepted",
  device_handle: "p0/motor0",
  function: "set_motor_duty",
  args: args(0.5),
  result: {},
  latency_ms: 1,
};
Deno.bench("AuditTrail.record, repeat of the open entry", { group: "record" }, () => {
  recordTrail.record(decision);
});

/** A tree calling the same function at 100 Hz for a minute, fast clock, real journal. */
async function collapseFigure(): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "audit_bench_" });
  try {
    let now = 1_700_000_000_000;
    const fast: Clock = { ...noTimers, nowMs: () => now, monoMs: () => now };
    const t = new AuditTrail({ clock: fast, log: silent, mode: () => "AUTO" });
    let entries = 0;
    t.onEntry(() => entries++);
    await t.openJournal({ dir, files: journalFiles, maxFileBytes: 16 << 20, maxFiles: 8 });
    const r = router(t);
    const hz = 100;
    const seconds = 60;
    for (let i = 0; i < hz * seconds; i++) {
      await r.call(request(0.5));
      now += 1000 / hz;
    }
    await t.close();
    let bytes = 0;
    for await (const e of Deno.readDir(dir)) bytes += (await Deno.stat(`${dir}/${e.name}`)).size;
    console.log(
      `100 Hz for ${seconds} s: ${hz * seconds} calls -> ${entries} audit entries, ${bytes} bytes`,
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

/** Sequential HTTP calls with the audit trail connected and disconnected, alternating. */
async function httpAb(rounds: number): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "audit_ab_" });
  const service = await startServing(testConfig({ runtime: { dataDir: dir }, http: { port: 0 } }));
  try {
    const base = `http://127.0.0.1:${service.http!.port}/v0`;
    const post = async (path: string, body: unknown) => {
      const r = await fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await r.body?.cancel();
      if (r.status !== 200) throw new Error(`${path}: ${r.status}`);
    };
    await post("/mode", { mode: "MANUAL" });
    let k = 0;
    const block = async (n: number) => {
      const t0 = performance.now();
      for (let i = 0; i < n; i++) {
        await post("/call", {
          provider_id: "sim0",
          device_id: "motorctl0",
          function_id: 10,
          args: {
            motor_index: { type: "int64", int64: 1 },
            duty: { type: "double", double: k++ % 2 ? 0.25 : 0.5 },
          },
        });
      }
      return (performance.now() - t0) / n;
    };
    await block(400);
    const on: number[] = [];
    const off: number[] = [];
    for (let r = 0; r < rounds; r++) {
      service.router.setAuditSink(service.audit);
      on.push(await block(400));
      service.router.setAuditSink(null);
      off.push(await block(400));
    }
    const median = (a: number[]) => [...a].sort((x, y) => x - y)[a.length >> 1];
    const show = (a: number[]) => a.map((x) => x.toFixed(3)).join(" ");
    console.log(`audit connected    ms/call: ${show(on)}; median ${median(on)!.toFixed(3)}`);
    console.log(`audit disconnected ms/call: ${show(off)}; median ${median(off)!.toFixed(3)}`);
    console.log(`journal: ${JSON.stringify(service.audit.status())}`);
  } finally {
    await service.stop();
    await Deno.remove(dir, { recursive: true });
  }
}

if (Deno.args.includes("--collapse")) await collapseFigure();
const ab = Deno.args.indexOf("--http-ab");
if (ab >= 0) await httpAb(Number(Deno.args[ab + 1] ?? 8) || 8);
