/**
 * Simulated ADPP provider (look-alike of anolis-provider-sim): tempctl, motorctl, relayio and
 * analogsensor devices plus chaos_control for fault injection. See README.md.
 *
 *   deno run --allow-read --allow-env examples/providers/sim/main.ts --config <yaml>
 *     [--crash-after <seconds>]    exit 42 after that time (crash tests)
 *     [--lease-ms <ms>]            apply the safe state when no request arrives for that long
 *                                  (default 0 = no lease; the runtime's polling is the heartbeat)
 *   ... main.ts --check-config <yaml>   validate and exit 0 (1 on errors)
 *   ... main.ts --check-host <yaml>     print the host requirements envelope, exit 0/1 (2: invalid)
 *   ... main.ts --config-schema         print the configuration's JSON Schema envelope, exit 0
 *   ... main.ts --version               print the version, exit 0
 *
 * The command line is the provider SDK's (runProviderCli: the anolis executable profile v1). The
 * safe state (motor duties 0, relays off, open loop, noise injection off: the start-up values) is
 * also applied on stdin EOF and on SIGTERM/SIGINT (then exit 0).
 * stdout carries ADPP frames only (or a verb's envelope); logs go to stderr, one line per event.
 */
import {
  createStderrLogger,
  type HostRequirement,
  MAX_LEASE_MS,
  type ProviderCli,
  runProviderCli,
  runStdioProvider,
} from "../../../src/provider_sdk/mod.ts";
import type { Logger, LogLevel } from "../../../src/common/mod.ts";
import { buildSimProvider, createDevices, RNG_SEED } from "./build.ts";
import type { ChaosHost } from "./chaos.ts";
import { parseSimConfig, type SimConfig, SimConfigError } from "./config.ts";
import { SIM_CONFIG_SCHEMA } from "./config_schema.ts";
import { checkSimHost } from "./host_check.ts";
import { SeededRandom } from "./rng.ts";
import { SIM_PROVIDER_NAME, SIM_PROVIDER_VERSION } from "./sim_device.ts";

const EXIT_CRASH_AFTER = 42;

/** The simulator's own flags (the profile's verbs are the SDK's). */
interface SimFlags {
  crashAfterS: number | null;
  leaseMs: number;
}

function simFlags(out: SimFlags): Record<string, (value: string) => void> {
  return {
    "--lease-ms": (value) => {
      const n = Number(value);
      if (!/^[0-9]+$/.test(value) || n > MAX_LEASE_MS) {
        throw new Error(
          `must be an integer in [0, ${MAX_LEASE_MS}] (0 = no lease), got '${value}'`,
        );
      }
      out.leaseMs = n;
    },
    "--crash-after": (value) => {
      const s = Number(value);
      if (value.trim() === "" || !Number.isFinite(s) || s < 0) {
        throw new Error(`must be seconds >= 0, got '${value}'`);
      }
      out.crashAfterS = s;
    },
    "--sim-server": () => {
      throw new Error("the external engine ('sim' mode) is not supported");
    },
  };
}

/**
 * Reads and validates the configuration; under `startup_policy: strict` a device that fails to
 * initialise rejects it too (what `--check-config` has always checked).
 */
async function loadConfig(path: string): Promise<SimConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new SimConfigError([`${path}: cannot read: ${(err as Error).message}`]);
  }
  const config = parseSimConfig(text);
  const { failed } = createDevices(config, new SeededRandom(RNG_SEED));
  if (failed.length > 0 && config.startupPolicy === "strict") {
    throw new SimConfigError(failed.map((f) => f.reason));
  }
  return config;
}

function logLevel(): LogLevel {
  const v = Deno.env.get("SIM_LOG_LEVEL");
  return v === "debug" || v === "warn" || v === "error" ? v : "info";
}

function makeHost(log: Logger): ChaosHost {
  return {
    exit(code) {
      log.warn(`chaos: exiting with code ${code} on request`);
      Deno.exit(code);
    },
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
    hangForever() {
      log.warn("chaos: hanging forever on request");
      // A pending timer keeps the event loop (and so the process) alive while nothing is answered
      // (the SDK still reads stdin: its close ends the process, src/provider_sdk/README.md).
      setInterval(() => {}, 60_000);
      return new Promise<never>(() => {});
    },
  };
}

async function serve(
  config: SimConfig,
  flags: SimFlags,
  hostRequirements: readonly HostRequirement[],
  log: Logger,
): Promise<number> {
  const { provider, failed, deviceCount } = buildSimProvider(config, {
    host: makeHost(log),
    ...(config.deviceNodes.length === 0 ? {} : { hostRequirements }),
  });
  for (const f of failed) log.error(`device init failed: ${f.reason}`);

  if (flags.crashAfterS !== null) {
    const s = flags.crashAfterS;
    setTimeout(() => {
      log.warn(`--crash-after ${s}: exiting with code ${EXIT_CRASH_AFTER}`);
      Deno.exit(EXIT_CRASH_AFTER);
    }, s * 1000);
  }

  log.info(
    `started: ${deviceCount} device(s) + chaos_control, mode ${config.mode}` +
      (config.tickRateHz === null ? "" : ` @ ${config.tickRateHz} Hz`) +
      `, startup_policy ${config.startupPolicy}` +
      (flags.leaseMs > 0 ? `, lease ${flags.leaseMs} ms` : "") +
      (provider.hostReady ? "" : ", NOT READY (host requirements unmet)"),
  );
  return await runStdioProvider(provider, { logger: log, leaseMs: flags.leaseMs });
}

/** The simulator's command line: the SDK's executable-profile verbs plus its own flags. */
export function simCli(log: Logger): ProviderCli<SimConfig> {
  const flags: SimFlags = { crashAfterS: null, leaseMs: 0 };
  return {
    name: SIM_PROVIDER_NAME,
    version: SIM_PROVIDER_VERSION,
    configSchema: SIM_CONFIG_SCHEMA,
    loadConfig,
    checkHost: checkSimHost,
    flags: simFlags(flags),
    serve: (config, host) => serve(config, flags, host.requirements, log),
    logger: log,
  };
}

if (import.meta.main) {
  const log = createStderrLogger("sim", logLevel());
  Deno.exit(await runProviderCli(simCli(log), Deno.args));
}
