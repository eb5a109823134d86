/**
 * Simulated ADPP provider (look-alike of anolis-provider-sim): tempctl, motorctl, relayio and
 * analogsensor devices plus chaos_control for fault injection. See README.md.
 *
 *   deno run --allow-read --allow-env examples/providers/sim/main.ts --config <yaml>
 *     [--crash-after <seconds>]    exit 42 after that time (crash tests)
 *     [--lease-ms <ms>]            apply the safe state when no request arrives for that long
 *                                  (default 0 = no lease; the runtime's polling is the heartbeat)
 *   ... main.ts --check-config <yaml>   validate and exit 0 (1 on errors)
 *
 * The safe state (motor duties 0, relays off, open loop, noise injection off: the start-up values)
 * is also applied on stdin EOF and on SIGTERM/SIGINT (then exit 0).
 * stdout carries ADPP frames only; logs go to stderr, one line per event.
 */
import {
  createStderrLogger,
  MAX_LEASE_MS,
  ProviderExitCode,
  runStdioProvider,
} from "../../../src/provider_sdk/mod.ts";
import type { Logger, LogLevel } from "../../../src/common/mod.ts";
import { buildSimProvider, createDevices, RNG_SEED } from "./build.ts";
import type { ChaosHost } from "./chaos.ts";
import { parseSimConfig, type SimConfig, SimConfigError } from "./config.ts";
import { SeededRandom } from "./rng.ts";

const EXIT_CRASH_AFTER = 42;

interface CliArgs {
  config: string | null;
  checkConfig: string | null;
  crashAfterS: number | null;
  leaseMs: number;
}

function parseArgs(argv: readonly string[]): CliArgs {
  const out: CliArgs = { config: null, checkConfig: null, crashAfterS: null, leaseMs: 0 };
  for (let i = 0; i < argv.length; i++) {
    const flag = argv[i];
    const value = argv[i + 1];
    if (
      flag === "--config" || flag === "--check-config" || flag === "--crash-after" ||
      flag === "--lease-ms"
    ) {
      if (value === undefined) throw new SimConfigError([`${flag}: missing value`]);
      i++;
      if (flag === "--config") out.config = value;
      else if (flag === "--check-config") out.checkConfig = value;
      else if (flag === "--lease-ms") {
        const n = Number(value);
        if (!/^[0-9]+$/.test(value) || n > MAX_LEASE_MS) {
          throw new SimConfigError([
            `--lease-ms: must be an integer in [0, ${MAX_LEASE_MS}] (0 = no lease), got '${value}'`,
          ]);
        }
        out.leaseMs = n;
      } else {
        const s = Number(value);
        if (!Number.isFinite(s) || s < 0) {
          throw new SimConfigError([`--crash-after: must be seconds >= 0, got '${value}'`]);
        }
        out.crashAfterS = s;
      }
    } else if (flag === "--sim-server") {
      throw new SimConfigError(["--sim-server: the external engine ('sim' mode) is not supported"]);
    } else {
      throw new SimConfigError([`unknown argument '${flag}'`]);
    }
  }
  return out;
}

async function loadConfig(path: string): Promise<SimConfig> {
  let text: string;
  try {
    text = await Deno.readTextFile(path);
  } catch (err) {
    throw new SimConfigError([`${path}: cannot read: ${(err as Error).message}`]);
  }
  return parseSimConfig(text);
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
      // A pending timer keeps the event loop (and so the process) alive while nothing is read.
      setInterval(() => {}, 60_000);
      return new Promise<never>(() => {});
    },
  };
}

async function main(): Promise<number> {
  const log = createStderrLogger("sim", logLevel());
  let cli: CliArgs;
  try {
    cli = parseArgs(Deno.args);
    if (cli.checkConfig !== null) {
      const config = await loadConfig(cli.checkConfig);
      const { failed } = createDevices(config, new SeededRandom(RNG_SEED));
      if (failed.length > 0 && config.startupPolicy === "strict") {
        throw new SimConfigError(failed.map((f) => f.reason));
      }
      log.info(`config ok: ${cli.checkConfig}`);
      return 0;
    }
    if (cli.config === null) throw new SimConfigError(["--config <yaml> is required"]);
  } catch (err) {
    if (!(err instanceof SimConfigError)) throw err;
    for (const p of err.problems) log.error(`config: ${p}`);
    return ProviderExitCode.CONFIG;
  }

  let config: SimConfig;
  try {
    config = await loadConfig(cli.config);
  } catch (err) {
    if (!(err instanceof SimConfigError)) throw err;
    for (const p of err.problems) log.error(`config: ${p}`);
    return ProviderExitCode.CONFIG;
  }

  const { provider, failed, deviceCount } = buildSimProvider(config, { host: makeHost(log) });
  for (const f of failed) log.error(`device init failed: ${f.reason}`);
  if (failed.length > 0 && config.startupPolicy === "strict") {
    log.error("startup_policy strict: aborting after device init failure");
    return ProviderExitCode.CONFIG;
  }

  if (cli.crashAfterS !== null) {
    const s = cli.crashAfterS;
    setTimeout(() => {
      log.warn(`--crash-after ${s}: exiting with code ${EXIT_CRASH_AFTER}`);
      Deno.exit(EXIT_CRASH_AFTER);
    }, s * 1000);
  }

  log.info(
    `started: ${deviceCount} device(s) + chaos_control, mode ${config.mode}` +
      (config.tickRateHz === null ? "" : ` @ ${config.tickRateHz} Hz`) +
      `, startup_policy ${config.startupPolicy}` +
      (cli.leaseMs > 0 ? `, lease ${cli.leaseMs} ms` : ""),
  );
  return await runStdioProvider(provider, { logger: log, leaseMs: cli.leaseMs });
}

if (import.meta.main) Deno.exit(await main());
