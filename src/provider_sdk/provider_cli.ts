import { type Logger, MAX_NAMED_IN_WARNING, quoteProviderText } from "../common/mod.ts";
import {
  checkHostEnvelope,
  CheckHostExitCode,
  checkHostExitCode,
  type CheckHostExitCodeNumber,
  configSchemaEnvelope,
  type HostRequirement,
  type JsonSchema,
  unmetSummary,
} from "./executable_profile.ts";
import { ProviderExitCode } from "./serve.ts";
import { errorMessageText as errorText, statusMessageText } from "./_status_message.ts";

type MaybePromise<T> = T | Promise<T>;

/** What a provider's process does besides serving: its command line (the executable profile). */
export interface ProviderCli<C> {
  /** The provider's name, as in Hello: the `provider` key of both envelopes. */
  readonly name: string;
  /** Printed by `--version` (a dotted `X.Y[.Z]`). */
  readonly version: string;
  /** The JSON Schema of the configuration file, printed by `--config-schema`. */
  readonly configSchema: JsonSchema;
  /**
   * Reads and validates the configuration file. Throw ProviderConfigError (each problem naming its
   * key) or any Error to reject it: `--config` and `--check-config` then exit 1, `--check-host` 2.
   */
  loadConfig(path: string): MaybePromise<C>;
  /**
   * The host requirements the configuration implies (sec. 6): read-only, no bus transactions. Runs for
   * `--check-host` and at start-up (absent = nothing to check).
   */
  checkHost?(config: C): MaybePromise<readonly HostRequirement[]>;
  /**
   * Flags of this provider that take a value (`--lease-ms`: `(v) => ...`). A handler that throws
   * rejects the command line (exit 1, its message logged).
   */
  readonly flags?: Readonly<Record<string, (value: string) => void>>;
  /**
   * Starts serving with a valid configuration and the start-up host check's results, and resolves
   * with the exit code (`runStdioProvider` exits by itself). With a requirement unmet the provider
   * should serve anyway, not ready (pass them to DeviceProviderOptions.hostRequirements).
   */
  serve(
    config: C,
    host: { readonly requirements: readonly HostRequirement[] },
  ): MaybePromise<number>;
  /** Where diagnostics go (stderr; stdout carries the envelopes and the protocol). */
  readonly logger: Logger;
  /** Where the envelopes and `--version` are written (default: the process's stdout). */
  readonly stdout?: (text: string) => Promise<void>;
}

/** The verbs of the executable profile v1 (sec. 1), as this SDK parses them. */
const VERBS = "--config <path> | --check-config <path> | --check-host <path> | " +
  "--config-schema | --version";

/**
 * Runs a provider's command line with the executable profile's verbs, the way the reference
 * providers parse it (anolis-provider-bread, src/core/main.cpp): arguments are read in order;
 * `--version` and `--config-schema` answer at once when reached (exit 0, whatever follows);
 * `--config`, `--check-config` and `--check-host` take a path (the last one given wins; the last
 * verb given decides); an unknown argument or a missing value is a usage error (exit 1, logged).
 *
 * - `--check-host P`: loads P (rejected: exit 2, stdout empty), runs `checkHost`, prints the
 *   envelope and exits 1 when a requirement is unmet, else 0.
 * - `--check-config P`: loads P, exits 0 (valid) or 1.
 * - `--config P`: loads P (rejected: exit 1), runs the start-up host check (an unmet requirement
 *   is logged; the provider serves, not ready), then `serve`.
 *
 * Resolves with the exit code; never calls exit.
 */
export async function runProviderCli<C>(
  cli: ProviderCli<C>,
  argv: readonly string[],
): Promise<number> {
  const log = cli.logger;
  const write = cli.stdout ?? writeStdout;
  let path: string | null = null;
  let verb: "--config" | "--check-config" | "--check-host" | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === "--version") {
      await write(`${cli.version}\n`);
      return ProviderExitCode.CLEAN;
    }
    if (arg === "--config-schema") {
      // Configless (sec. 2): the envelope is all stdout carries.
      await write(
        configSchemaEnvelope(cli.configSchema, {
          provider: cli.name,
          extra: { provider_version: cli.version },
        }),
      );
      return ProviderExitCode.CLEAN;
    }
    const value = argv[i + 1];
    if (arg === "--config" || arg === "--check-config" || arg === "--check-host") {
      if (value === undefined) return usage(log, `${arg} needs a path`);
      verb = arg;
      path = value;
      i++;
      continue;
    }
    const flag = cli.flags?.[arg!];
    if (flag !== undefined) {
      if (value === undefined) return usage(log, `${arg} needs a value`);
      try {
        flag(value);
      } catch (err) {
        return usage(log, `${arg}: ${errorText(err)}`);
      }
      i++;
      continue;
    }
    // The caller's text (any length, any character): cut and quoted, so it makes one short line.
    return usage(log, `unknown argument ${quoteProviderText(arg!)}`);
  }
  if (verb === null || path === null) return usage(log, "--config <path> is required");

  if (verb === "--check-host") return await checkHostVerb(cli, path, write);

  let config: C;
  try {
    config = await cli.loadConfig(path);
  } catch (err) {
    logConfigError(log, path, err);
    return ProviderExitCode.CONFIG;
  }
  if (verb === "--check-config") {
    log.info(`config ok: ${path}`);
    return ProviderExitCode.CLEAN;
  }
  let requirements: readonly HostRequirement[] = [];
  if (cli.checkHost !== undefined) {
    try {
      requirements = await cli.checkHost(config);
    } catch (err) {
      log.error(`host check failed: ${errorText(err)}`);
      return ProviderExitCode.CONFIG;
    }
    const unmet = unmetSummary(requirements);
    if (unmet !== "") {
      log.warn(`host requirements unmet: ${unmet}; serving with no devices (not ready)`);
    }
  }
  return await cli.serve(config, { requirements });
}

async function checkHostVerb<C>(
  cli: ProviderCli<C>,
  path: string,
  write: (text: string) => Promise<void>,
): Promise<CheckHostExitCodeNumber> {
  const log = cli.logger;
  let text: string;
  let code: CheckHostExitCodeNumber;
  try {
    const config = await cli.loadConfig(path);
    const requirements = (await cli.checkHost?.(config)) ?? [];
    text = checkHostEnvelope(cli.name, requirements);
    code = checkHostExitCode(requirements);
  } catch (err) {
    // sec. 6: exit 2, "could not evaluate"; stdout stays empty.
    logConfigError(log, path, err);
    log.error(`--check-host: cannot evaluate the host requirements of ${path}`);
    return CheckHostExitCode.NOT_EVALUATED;
  }
  await write(text);
  return code;
}

function usage(log: Logger, problem: string): number {
  log.error(`usage: ${problem} (verbs: ${VERBS})`);
  return ProviderExitCode.CONFIG;
}

/**
 * Logs why a configuration was rejected: a ProviderConfigError's first MAX_NAMED_IN_WARNING
 * problems one line each (each cut), then one line counting the rest, so a config with thousands
 * of problems does not flood stderr; any other error on one line.
 */
function logConfigError(log: Logger, path: string, err: unknown): void {
  const problems = (err as { problems?: unknown })?.problems;
  if (Array.isArray(problems) && problems.every((p) => typeof p === "string")) {
    for (const p of problems.slice(0, MAX_NAMED_IN_WARNING)) {
      log.error(`config: ${statusMessageText(p)}`);
    }
    const rest = problems.length - MAX_NAMED_IN_WARNING;
    if (rest > 0) log.error(`config: and ${rest} more problems (${problems.length} in all)`);
  } else {
    log.error(`config: ${path}: ${errorText(err)}`);
  }
}

const encoder = new TextEncoder();

async function writeStdout(text: string): Promise<void> {
  const writer = Deno.stdout.writable.getWriter();
  try {
    await writer.write(encoder.encode(text));
  } finally {
    writer.releaseLock();
  }
}
