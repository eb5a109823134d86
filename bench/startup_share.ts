/**
 * deno run -A bench/startup_share.ts [--reps N] [--providers 1,10] [--runtime-cmd "<cmd>"] [--out F]
 *
 * The runtime's own share of start-up (the footprint goal "start-up, spawn -> all providers
 * AVAILABLE, <= 200 ms with providers that answer at once", measured apart from the providers';
 * bench/README.md, "Footprint"). Providers that answer at once: bench/lib/replay_provider.py, a
 * Python process that replays ADPP answers recorded here from the simulated provider (the bench's
 * generated 4-device config), so a provider costs ~20 ms to start instead of a Deno sim's ~100.
 *
 * Per repetition, measured from this process (readiness polled every READY_POLL_MS):
 * - provider alone: spawn -> its Hello answered (what a provider adds to the critical path);
 * - runtime with N replay providers: spawn -> /v0/runtime/status lists N providers AVAILABLE;
 * - runtime's own share = runtime figure - provider figure (providers start in parallel).
 * Medians and ranges are printed; `--out` writes them as JSON. Not a test; Linux or macOS.
 */
import { parseArgs } from "node:util";
import {
  decodeResponse,
  encodeFrame,
  encodeRequest,
  encodeResponse,
  FrameReader,
  type PayloadKind,
  type WireRequest,
} from "../src/adpp/mod.ts";
import { defaultCommands, splitCommand } from "./lib/args.ts";
import { buildAll, BUNDLE_DIR } from "../scripts/bundle.ts";
import { runtimeYaml, simProviderYaml } from "./lib/config_gen.ts";
import { clockTicksPerSecond, readProcStat } from "./lib/proc.ts";
import { median } from "./lib/stats.ts";

const REPO = new URL("../", import.meta.url).pathname.replace(/\/$/, "");
export const REPLAY = `${REPO}/bench/lib/replay_provider.py`;
/** Readiness poll period: the start-up figures are quantized to this. */
const READY_POLL_MS = 2;
/** Give up on one start-up after this long. */
const READY_TIMEOUT_MS = 30_000;

type Channel = { ask(req: WireRequest): Promise<Uint8Array>; close(): Promise<void> };

/** A raw ADPP channel to a child process (no runtime code beyond the codec and framing). */
function channel(cmd: readonly string[]): Channel {
  const [command, ...args] = cmd;
  const child = new Deno.Command(command!, {
    args: [...args],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const writer = child.stdin.getWriter();
  const reader = new FrameReader(child.stdout);
  let nextId = 1;
  return {
    async ask(req) {
      await writer.write(encodeFrame(encodeRequest({ ...req, request_id: nextId++ })));
      const r = await reader.read();
      if (r.done) throw new Error(`${command} closed its stdout`);
      return r.value;
    },
    async close() {
      await writer.close().catch(() => {});
      await reader.cancel().catch(() => {});
      await child.status;
    },
  };
}

/** Records the sim's answers to everything the runtime asks at start-up and while polling. */
export async function record(
  simCmd: readonly string[],
  simConfig: string,
): Promise<Record<string, string>> {
  const ch = channel([...simCmd, "--config", simConfig]);
  const out: Record<string, string> = {};
  let devices: string[] = [];
  const keep = async (key: string, req: WireRequest) => {
    const res = decodeResponse(await ch.ask(req));
    if (key === "list_devices") {
      devices = (res.list_devices?.devices ?? []).map((d) => d.device_id!);
    }
    if (res.status?.code !== 1) {
      throw new Error(`sim answered ${key} with ${JSON.stringify(res.status)}`);
    }
    // Without request_id (proto3 omits 0): the replay provider prefixes the asked id.
    const bytes = encodeResponse({ ...res, request_id: 0 });
    out[key] = Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  };
  const req = (payload: PayloadKind, body: object): WireRequest =>
    ({ request_id: 0, payload, [payload]: body }) as WireRequest;
  try {
    await keep("hello", req("hello", { protocol_version: "v1", client_name: "bench" }));
    await keep("list_devices", req("list_devices", {}));
    // Every device the sim lists (the bench's four and the sim's own chaos_control).
    for (const id of devices) {
      await keep(`describe_device/${id}`, req("describe_device", { device_id: id }));
      await keep(`read_signals/${id}`, req("read_signals", { device_id: id }));
    }
    await keep("get_health", req("get_health", {}));
    await keep("wait_ready", req("wait_ready", {}));
  } finally {
    await ch.close();
  }
  return out;
}

/** Spawn -> Hello answered, for one provider process. */
async function providerAlone(cmd: readonly string[]): Promise<number> {
  const t0 = performance.now();
  const ch = channel(cmd);
  try {
    const res = decodeResponse(
      await ch.ask({ request_id: 0, payload: "hello", hello: { protocol_version: "v1" } }),
    );
    if (res.status?.code !== 1) throw new Error("replay provider refused hello");
    return performance.now() - t0;
  } finally {
    await ch.close();
  }
}

function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/**
 * Spawn -> every provider AVAILABLE, for one runtime process, and the CPU time the runtime
 * process itself had used at that moment (its own work, whatever the providers cost).
 */
async function runtimeStart(
  runtimeCmd: readonly string[],
  configPath: string,
  port: number,
  providers: number,
  ticksPerSecond: number,
): Promise<{ wallMs: number; cpuMs: number }> {
  const [command, ...args] = runtimeCmd;
  const t0 = performance.now();
  const child = new Deno.Command(command!, {
    args: [...args, "--config", configPath],
    stdin: "null",
    stdout: "null",
    stderr: "piped",
  }).spawn();
  const stderr = new Response(child.stderr).text();
  try {
    while (performance.now() - t0 < READY_TIMEOUT_MS) {
      try {
        const res = await fetch(`http://127.0.0.1:${port}/v0/runtime/status`);
        const body = await res.json();
        const up = (body.providers ?? []).filter((p: { state: string }) => p.state === "AVAILABLE");
        if (up.length === providers) {
          const wallMs = performance.now() - t0;
          const st = readProcStat(child.pid);
          if (st === null) throw new Error("runtime exited at readiness");
          return { wallMs, cpuMs: ((st.utimeTicks + st.stimeTicks) / ticksPerSecond) * 1000 };
        }
      } catch {
        // not listening yet
      }
      await new Promise((r) => setTimeout(r, READY_POLL_MS));
    }
    throw new Error(`runtime not ready after ${READY_TIMEOUT_MS} ms`);
  } catch (err) {
    child.kill("SIGKILL");
    throw new Error(`${err}\n${(await stderr).slice(-4000)}`);
  } finally {
    try {
      child.kill("SIGTERM");
    } catch {
      // already gone
    }
    await child.status;
    await stderr.catch(() => "");
  }
}

function summary(xs: number[]) {
  const r = (v: number) => Math.round(v * 10) / 10;
  return { median: r(median(xs)), min: r(Math.min(...xs)), max: r(Math.max(...xs)), n: xs.length };
}

if (import.meta.main) {
  const { values } = parseArgs({
    args: Deno.args,
    options: {
      reps: { type: "string", default: "7" },
      providers: { type: "string", default: "1,10" },
      "runtime-cmd": { type: "string" },
      // The interpreter itself, not a wrapper script (a pyenv shim adds ~35 ms per start).
      python: { type: "string", default: "/usr/bin/python3" },
      out: { type: "string" },
    },
  });
  const reps = Number(values.reps);
  const counts = values.providers.split(",").map(Number);
  const defaults = defaultCommands(REPO);
  const runtimeCmd = values["runtime-cmd"] ? splitCommand(values["runtime-cmd"]) : defaults.runtime;
  if ([...runtimeCmd, ...defaults.provider].some((w) => w.startsWith(BUNDLE_DIR.pathname))) {
    await buildAll();
  }
  const dir = await Deno.makeTempDir({ prefix: "startup-share-" });
  try {
    const simConfig = `${dir}/sim.yaml`;
    await Deno.writeTextFile(simConfig, simProviderYaml());
    const recording = `${dir}/recording.json`;
    await Deno.writeTextFile(recording, JSON.stringify(await record(defaults.provider, simConfig)));
    const replayCmd = [values.python, "-S", REPLAY, recording];
    // Warm the module cache and the page cache once: every figure below is a warm start.
    await new Deno.Command(runtimeCmd[0]!, { args: [...runtimeCmd.slice(1), "--version"] })
      .output();
    await providerAlone(replayCmd);

    const ticks = await clockTicksPerSecond();
    const provider: number[] = [];
    for (let i = 0; i < reps; i++) provider.push(await providerAlone(replayCmd));
    const result: Record<string, unknown> = {
      date: new Date().toISOString(),
      runtime_cmd: runtimeCmd.join(" "),
      load_average: (await Deno.readTextFile("/proc/loadavg").catch(() => "")).split(" ").slice(
        0,
        3,
      ),
      provider_spawn_to_hello_ms: summary(provider),
    };
    for (const n of counts) {
      const port = freePort();
      const configPath = `${dir}/runtime-${n}.yaml`;
      await Deno.writeTextFile(
        configPath,
        runtimeYaml({
          providerCount: n,
          port,
          // runtimeYaml appends `--config <simConfigPath>`: the replay provider ignores it.
          providerCmd: replayCmd,
          simConfigPath: simConfig,
          pollIntervalMs: 100,
          dataDir: `${dir}/data`,
        }),
      );
      const total: number[] = [];
      const cpu: number[] = [];
      for (let i = 0; i < reps; i++) {
        const r = await runtimeStart(runtimeCmd, configPath, port, n, ticks);
        total.push(r.wallMs);
        cpu.push(r.cpuMs);
      }
      const own = total.map((t, i) => t - (provider[i % provider.length])!);
      result[`providers_${n}`] = {
        spawn_to_all_available_ms: summary(total),
        runtime_own_share_ms: summary(own),
        runtime_cpu_at_ready_ms: summary(cpu),
      };
    }
    console.log(JSON.stringify(result, null, 2));
    if (values.out) await Deno.writeTextFile(values.out, JSON.stringify(result, null, 2) + "\n");
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
