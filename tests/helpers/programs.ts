/**
 * The provider programs tests run, each both ways: in-process (tests/helpers/in_process_provider.ts
 * finds it by its main module's path among a provider entry's arguments) and as a real child (its
 * main module serves the same program with runStdioProvider). So one provider entry, e.g.
 * sim_config.ts's simProvider or safety/_fixture.ts's plantProvider, runs either way: the SpawnFn
 * decides.
 */
import type { ChaosHost } from "../../examples/providers/sim/chaos.ts";
import { buildSimProvider } from "../../examples/providers/sim/build.ts";
import { parseSimConfig } from "../../examples/providers/sim/config.ts";
import type { ProgramFactory, ProgramHost, Programs } from "./in_process_provider.ts";
import { FakeProvider, plantDevice, type PlantState } from "./fake_provider.ts";
import { SIM_MAIN } from "./sim_config.ts";
import { PROGRAMMABLE_MAIN, programmableProgram } from "./programmable_provider.ts";
import { READBACK_MAIN, readbackProgram } from "./readback_program.ts";

/** tests/safety/_plant_provider.ts: the plant as a real child (safety/_fixture.ts plantProvider). */
export const PLANT_MAIN = new URL("../safety/_plant_provider.ts", import.meta.url).pathname;

/** The ProgramHost of a real child process: Deno's own exit, timers and stderr. */
export function stdioHost(): ProgramHost {
  return {
    pid: Deno.pid,
    args: Deno.args,
    exit: (code) => Deno.exit(code),
    sleep: (ms) => new Promise((r) => setTimeout(r, ms)),
    hang: () => {
      setInterval(() => {}, 1 << 30); // keeps the event loop (and so the process) alive
      return new Promise<never>(() => {});
    },
    stderr: (line) => console.error(line),
  };
}

/** Value of `--flag VALUE` in `args`, or undefined. */
function flag(args: readonly string[], name: string): string | undefined {
  const at = args.indexOf(name);
  return at >= 0 ? args[at + 1] : undefined;
}

/**
 * The plant provider (fake_provider.ts plantDevice, device plant0) as a FakeProvider, from the
 * plant's command line: `--latency-ms N` slows every actuating call; `--grow-marker PATH` makes
 * the first process (PATH absent: it creates it) declare only its READ function, a later one
 * (a restart) every function. `state` receives the plant's state (in-process only).
 */
export function plantProgram(host: ProgramHost, state?: PlantState): FakeProvider {
  const latencyMs = Number(flag(host.args, "--latency-ms") ?? 0);
  const readLatencyMs = Number(flag(host.args, "--read-latency-ms") ?? 0);
  const marker = flag(host.args, "--grow-marker");
  let readOnly = false;
  if (marker !== undefined) {
    try {
      Deno.writeTextFileSync(marker, "started once\n", { createNew: true });
      readOnly = true;
    } catch (err) {
      if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
    }
  }
  return new FakeProvider([
    plantDevice({
      latencyMs,
      readLatencyMs,
      readOnly,
      sleep: (ms) => host.sleep(ms),
      ...(state ? { state } : {}),
    }),
  ], { name: "plant-test", version: "0.0.1", host });
}

/**
 * The simulated provider (examples/providers/sim), built from `--config YAML` as its main.ts
 * builds it, its chaos_control acting on the process through `host` (crash: exit, hang: hang).
 */
export const simProgram: ProgramFactory = (host) => {
  const path = flag(host.args, "--config");
  if (path === undefined) throw new Error("sim: --config <yaml> is required");
  const config = parseSimConfig(Deno.readTextFileSync(path));
  const chaosHost: ChaosHost = {
    exit: (code) => host.exit(code),
    sleep: (ms) => host.sleep(ms),
    hangForever: () => host.hang(),
  };
  const { provider, failed } = buildSimProvider(config, { host: chaosHost });
  if (failed.length > 0 && config.startupPolicy === "strict") {
    throw new Error(`sim: device init failed: ${failed.map((f) => f.reason).join("; ")}`);
  }
  const leaseMs = flag(host.args, "--lease-ms");
  return { handler: provider, ...(leaseMs === undefined ? {} : { leaseMs: Number(leaseMs) }) };
};

/**
 * The programs every in-process rig knows: the simulated provider, the plant, and the in-process
 * twins of the programmable provider (one request at a time) and of the read-back provider.
 */
export const TEST_PROGRAMS: Programs = {
  [SIM_MAIN]: simProgram,
  [PLANT_MAIN]: (host) => plantProgram(host),
  [PROGRAMMABLE_MAIN]: programmableProgram,
  [READBACK_MAIN]: readbackProgram,
};
