/**
 * The `runtime` command: parses flags, runs `--check-config`, or loads the configuration and
 * starts the service. Exit codes: src/exit_codes.ts (0 ok, 1 configuration errors, 2 usage error or
 * unreadable file, 3 start-up failure, 4 crash).
 */
import {
  checkTlsFiles,
  commandLineArguments,
  commandOnPath,
  commandOnPathSync,
  connectMqttJs,
  createStderrLogger,
  exitProcess,
  flushStderrLog,
  onSignal,
  operatingSystem,
  type PathStat,
  readEnvironment,
  readFileBytes,
  readRegularFile,
  type RegularFileRead,
  secretFromEnvironment,
  statPath,
  statPathSync,
  systemClock,
  terminateProviderProcesses,
  workingDirectory,
} from "./host/mod.ts";
import type { TreeChecks } from "./automation/mod.ts";
import { authenticationSummary } from "./http/mod.ts";
import {
  AbandonedReloadReads,
  EXIT_INTERNAL_ERROR,
  EXIT_STARTUP_FAILURE,
  EXIT_USAGE,
  type ReloadedConfig,
  reloadFileReader,
  reloadPathAnswers,
  reloadRegularFileReader,
  type ReloadTreeFiles,
  runService,
  StopSignalFilter,
  USAGE,
} from "./app/mod.ts";
import {
  ADPP_PROTOCOL_VERSION,
  ADPP_SCHEMA_VERSION,
  type Clock,
  errorMessage,
  HTTP_CONTRACT_VERSION,
  LOG_LEVELS,
  type LogLevel,
  pathBelow,
  resolvePath,
  RUNTIME_VERSION,
} from "./common/mod.ts";
import {
  type Config,
  type Diagnostic,
  diagnosticsReport,
  formatDiagnostic,
  formatSummary,
  loadConfigFile,
  loadConfigFileAsking,
  sparkplugIdProblem,
} from "./config/mod.ts";

/** What the command line asks for. */
export type CliCommand =
  | { kind: "help" }
  | { kind: "version" }
  | { kind: "check"; file: string; format: "text" | "json"; strict: boolean }
  | { kind: "start"; file: string; logLevel: LogLevel | null; port: number | null }
  | {
    kind: "fleet";
    url: string;
    group: string | null;
    waitMs: number;
    format: "text" | "json";
  }
  | { kind: "usage-error"; message: string };

/** The options the command line takes: a string (`--name VALUE`, `--name=VALUE`) or a flag. */
const CLI_OPTIONS = {
  config: "string",
  "check-config": "string",
  format: "string",
  strict: "boolean",
  "log-level": "string",
  port: "string",
  version: "boolean",
  fleet: "string",
  group: "string",
  "wait-ms": "string",
  help: "boolean",
} as const;

/** One-letter forms of options. */
const CLI_SHORT: Readonly<Record<string, keyof typeof CLI_OPTIONS>> = { h: "help" };

type CliValues = {
  -readonly [K in keyof typeof CLI_OPTIONS]?: (typeof CLI_OPTIONS)[K] extends "string" ? string
    : boolean;
};

/**
 * The command line's options (a repeated option: the last wins), or a usage error naming the
 * argument. Hand-written, not node:util's parseArgs: importing node:util brings up Deno's Node
 * layer, ~1.5 MiB of RSS for the life of every runtime, for eleven options (bench/README.md, "The
 * Node layer out of the start-up").
 */
function readOptions(argv: readonly string[]): CliValues | string {
  const values: Record<string, string | boolean> = {};
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!;
    const long = /^--([^=]+)(=(.*))?$/s.exec(arg);
    const short = long ? null : /^-([^-])$/.exec(arg);
    if (!long && !short) {
      return `Unexpected argument '${arg}': this command takes no positional arguments`;
    }
    const name = long ? long[1]! : CLI_SHORT[short![1]!];
    const kind = name === undefined ? undefined : (CLI_OPTIONS as Record<string, string>)[name];
    if (name === undefined || kind === undefined) return `Unknown option '${arg.split("=")[0]}'`;
    if (kind === "boolean") {
      if (long?.[2] !== undefined) return `Option '--${name}' takes no value`;
      values[name] = true;
      continue;
    }
    if (long?.[2] !== undefined) {
      values[name] = long[3]!;
      continue;
    }
    const next = argv[i + 1];
    if (next === undefined) return `Option '--${name} <value>' argument missing`;
    if (next.startsWith("-") && next !== "-") {
      return `Option '--${name}' is followed by '${next}', not a value (a value that starts ` +
        `with a dash: --${name}=${next})`;
    }
    values[name] = next;
    i++;
  }
  return values as CliValues;
}

/** Parses the command line (no side effects). */
export function parseCli(argv: readonly string[]): CliCommand {
  const values = readOptions(argv);
  if (typeof values === "string") return { kind: "usage-error", message: values };
  if (values.help) return { kind: "help" };
  if (values.version) return { kind: "version" };
  const logLevel = values["log-level"];
  if (logLevel !== undefined && !(LOG_LEVELS as readonly string[]).includes(logLevel)) {
    return { kind: "usage-error", message: `--log-level must be one of ${LOG_LEVELS.join(", ")}` };
  }
  const fleet = values.fleet;
  if (fleet !== undefined) {
    if (values.config !== undefined || values["check-config"] !== undefined) {
      return { kind: "usage-error", message: "--fleet stands alone (no --config/--check-config)" };
    }
    const format = values.format ?? "text";
    if (format !== "text" && format !== "json") {
      return { kind: "usage-error", message: "--format must be text or json" };
    }
    const waitText = values["wait-ms"] ?? String(FLEET_DEFAULT_WAIT_MS);
    const waitMs = /^[0-9]{1,5}$/.test(waitText) ? Number(waitText) : NaN;
    if (!(waitMs >= 100 && waitMs <= 60000)) {
      return {
        kind: "usage-error",
        message: `--wait-ms must be 100 to 60000 milliseconds, got ${JSON.stringify(waitText)}`,
      };
    }
    const group = values.group ?? null;
    if (group !== null) {
      // One topic level, as sparkplug.group_id: `+` would be read as a group of that name.
      const problem = group === "" ? "must not be empty" : sparkplugIdProblem(group);
      if (problem !== null) {
        return {
          kind: "usage-error",
          message: `--group ${problem} (a Sparkplug group id; omit --group for every group)`,
        };
      }
    }
    return { kind: "fleet", url: fleet, group, waitMs, format };
  }
  if (values.group !== undefined || values["wait-ms"] !== undefined) {
    return { kind: "usage-error", message: "--group and --wait-ms apply to --fleet only" };
  }
  const check = values["check-config"];
  if (check !== undefined && values.config !== undefined) {
    return { kind: "usage-error", message: "use either --config or --check-config, not both" };
  }
  if (check !== undefined) {
    const format = values.format ?? "text";
    if (format !== "text" && format !== "json") {
      return { kind: "usage-error", message: "--format must be text or json" };
    }
    if (values.port !== undefined) {
      return { kind: "usage-error", message: "--port applies to --config only" };
    }
    return { kind: "check", file: check, format, strict: values.strict === true };
  }
  if (values.format !== undefined) {
    return { kind: "usage-error", message: "--format applies to --check-config only" };
  }
  if (values.strict !== undefined) {
    return { kind: "usage-error", message: "--strict applies to --check-config only" };
  }
  if (values.config === undefined) {
    return { kind: "usage-error", message: "missing --config FILE or --check-config FILE" };
  }
  let port: number | null = null;
  if (values.port !== undefined) {
    const parsed = parsePort("--port", values.port);
    if (typeof parsed === "string") return { kind: "usage-error", message: parsed };
    port = parsed;
  }
  return {
    kind: "start",
    file: values.config,
    logLevel: (logLevel ?? null) as LogLevel | null,
    port,
  };
}

/** How long `--fleet` listens for births, data and deaths by default. */
export const FLEET_DEFAULT_WAIT_MS = 3000;

/**
 * `runtime --fleet URL [--group G] [--wait-ms N] [--format json]`: the Sparkplug edge nodes on a
 * broker (docs/sparkplug.md), read from their births, data and deaths. Loads the Sparkplug code and
 * MQTT.js only here. Credentials: SPARKPLUG_USERNAME / SPARKPLUG_PASSWORD.
 */
async function fleetView(cli: Extract<CliCommand, { kind: "fleet" }>): Promise<number> {
  const url = URL.canParse(cli.url) ? new URL(cli.url) : null;
  if (url === null || (url.protocol !== "mqtt:" && url.protocol !== "mqtts:")) {
    console.error(`runtime: --fleet must be an mqtt:// or mqtts:// broker URL\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  if (url.username !== "" || url.password !== "") {
    console.error(
      "runtime: --fleet URL must not carry credentials: set SPARKPLUG_USERNAME and SPARKPLUG_PASSWORD",
    );
    return EXIT_USAGE;
  }
  const { collectFleet, fleetTable, MAX_FLEET_MESSAGE_BYTES } = await import("./sparkplug/mod.ts");
  // Ctrl-C or SIGTERM ends the window early: the view prints what it saw and discards its MQTT
  // session on the broker (bounded: FLEET_SESSION_DISCARD_MS) before exiting 0; the process ended
  // by the signal left that session queueing on the broker for good. The same signal again within
  // STOP_SIGNAL_REPEAT_WINDOW_MS is that one delivered twice (a terminal and `deno task`), ignored;
  // any later one exits at once.
  const interrupt = new AbortController();
  const signals = new StopSignalFilter();
  let interruptedBy = "";
  let clientId = "";
  const removers = (["SIGINT", "SIGTERM"] as const).map((sig) =>
    onSignal(sig, () => {
      const { meaning } = signals.classify(sig, systemClock.monoMs());
      if (meaning === "stop") {
        interruptedBy = sig;
        interrupt.abort();
      } else if (meaning === "hurry") {
        console.error(
          `runtime: fleet view: ${sig} after ${interruptedBy}: exiting now, nothing printed; its ` +
            `MQTT session (client id ${clientId}) may be left on the broker`,
        );
        exitProcess(EXIT_INTERNAL_ERROR);
      }
    })
  );
  try {
    const { nodes, truncated, interrupted, refusedOversize } = await collectFleet({
      url: cli.url,
      group: cli.group,
      waitMs: cli.waitMs,
      connect: connectMqttJs,
      clock: systemClock,
      username: secretFromEnvironment("SPARKPLUG_USERNAME"),
      password: secretFromEnvironment("SPARKPLUG_PASSWORD"),
      interrupt: interrupt.signal,
      onClientId: (id) => (clientId = id),
      // stderr: stdout is the table or the JSON. A node's messages refused for their size.
      log: createStderrLogger("info"),
    });
    if (cli.format === "json") {
      console.log(JSON.stringify({ nodes, truncated, interrupted, refusedOversize }, null, 2));
    } else {
      console.log(fleetTable(nodes));
      if (truncated) {
        console.log(
          "(more nodes, devices or metric aliases than the fleet view tracks; the list is cut)",
        );
      }
      if (refusedOversize > 0) {
        console.log(
          `(${refusedOversize} message${refusedOversize === 1 ? "" : "s"} over ` +
            `MAX_FLEET_MESSAGE_BYTES (${MAX_FLEET_MESSAGE_BYTES} bytes) refused unread: their ` +
            `nodes not listed or not changed by them; the WARN lines on stderr name the nodes)`,
        );
      }
      if (interrupted) {
        console.log(`(interrupted by ${interruptedBy}: the nodes seen until then)`);
      }
    }
    return 0;
  } catch (err) {
    console.error(`runtime: ${errorMessage(err)}`);
    return EXIT_STARTUP_FAILURE;
  } finally {
    for (const remove of removers) remove();
  }
}

/** Environment variable that overrides `http.port` when starting (the `--port` flag wins). */
export const PORT_ENV_VAR = "RUNTIME_HTTP_PORT";

/** The anolis runtime's API token variable: not read here (RUNTIME_API_TOKEN is), only named. */
export const ANOLIS_TOKEN_ENV_VAR = "ANOLIS_API_TOKEN" as const;
/**
 * The glibc malloc settings the start tasks and the systemd unit run the runtime under
 * (docs/deployment.md, "Memory: V8 and malloc settings"): at most two arenas. Read only to say
 * at start which are not set: a compiled binary cannot carry an environment.
 */
export const MALLOC_ENV: Readonly<Record<string, string>> = { MALLOC_ARENA_MAX: "2" };

/** A TCP port given on the command line or in the environment, or the message saying why not. */
export function parsePort(source: string, text: string): number | string {
  const port = /^[0-9]{1,5}$/.test(text.trim()) ? Number(text.trim()) : NaN;
  if (port >= 1 && port <= 65535) return port;
  return `${source} must be a TCP port from 1 to 65535, got ${JSON.stringify(text)}`;
}

/**
 * The port that replaces `http.port`: `--port`, else a non-empty RUNTIME_HTTP_PORT, else none.
 * Returns the port and where it came from, or a usage-error message.
 */
export function portOverride(
  flag: number | null,
  env: string | undefined,
): { port: number; source: string } | null | string {
  if (flag !== null) return { port: flag, source: "--port" };
  if (env === undefined || env.trim() === "") return null;
  const parsed = parsePort(PORT_ENV_VAR, env);
  return typeof parsed === "string" ? parsed : { port: parsed, source: PORT_ENV_VAR };
}

/** Runs the command and returns the process exit code. */
export async function main(argv: readonly string[]): Promise<number> {
  const cli = parseCli(argv);
  switch (cli.kind) {
    case "usage-error":
      console.error(`runtime: ${cli.message}\n\n${USAGE}`);
      return 2;
    case "help":
      console.log(USAGE);
      return 0;
    case "version":
      console.log(`runtime ${RUNTIME_VERSION}`);
      console.log(`HTTP contract ${HTTP_CONTRACT_VERSION}`);
      console.log(`ADPP protocol ${ADPP_PROTOCOL_VERSION} (schema ${ADPP_SCHEMA_VERSION})`);
      return 0;
    case "fleet":
      return await fleetView(cli);
    case "check":
    case "start":
      break;
  }
  const override = cli.kind === "start"
    ? portOverride(cli.port, readEnvironment(PORT_ENV_VAR))
    : null;
  if (typeof override === "string") {
    console.error(`runtime: ${override}\n\n${USAGE}`);
    return EXIT_USAGE;
  }
  const absPath = resolvePath(workingDirectory(), cli.file);
  const loaded = await readConfigFile(absPath, cli.kind, cli.kind === "check" && cli.strict);
  if (!loaded.readable) {
    console.error(`runtime: cannot read config file ${cli.file}: ${loaded.message}`);
    return EXIT_USAGE;
  }
  const { config, diagnostics } = loaded;
  // Diagnostics name the file as it was typed on the command line.
  const shown = diagnostics.map((d) => d.file === absPath ? { ...d, file: cli.file } : d);
  // The configured behavior tree (with its includes) is part of the configuration.
  const treeDiagnostics = config ? await behaviorTreeDiagnostics(config) : [];
  shown.push(...treeDiagnostics);
  const treeErrors = treeDiagnostics.some((d) => d.severity === "error");
  if (cli.kind === "check") {
    // What the start would refuse in the TLS files themselves (the same checks): an error under
    // --strict, a warning otherwise (the files may be the checking machine's, not the target's).
    const tls = config ? await tlsFileDiagnostics(config, loaded.positionOf, cli) : [];
    shown.push(...tls);
    const tlsErrors = tls.some((d) => d.severity === "error");
    if (cli.format === "json") {
      console.log(JSON.stringify(diagnosticsReport(cli.file, shown), null, 2));
    } else {
      printDiagnostics(shown, console.log);
      console.log(formatSummary(cli.file, shown));
    }
    return config === null || treeErrors || tlsErrors ? 1 : 0;
  }
  printDiagnostics(shown, console.error);
  if (config === null || treeErrors) {
    console.error(`runtime: refusing to start: ${formatSummary(cli.file, shown)}`);
    return 1;
  }
  // SIGHUP: the same file, loader and checks as this start (and the same overrides).
  const overrides = { port: override, logLevel: cli.logLevel };
  // One count for the process: the configuration file's checks and the kernel's own reads.
  const abandoned = new AbandonedReloadReads();
  const started = { logLevel: config.logging.level, automationEnabled: config.automation.enabled };
  const reload = configReload(absPath, cli, overrides, started, {
    ...HOST_RELOAD_PORTS,
    abandoned,
  });
  return await startWithConfig(withOverrides(config, overrides), override, reload, abandoned);
}

/**
 * What a reload asks of the host, each within RELOAD_FILE_READ_TIMEOUT_MS on `clock`: the host's
 * own off the event loop's thread (tests give a stat or a read that never answers).
 */
export interface ReloadPorts {
  readonly clock: Pick<Clock, "setTimer" | "clearTimer">;
  /** Reads a regular file (the configuration file, the behavior tree and its includes). */
  readonly readRegularFile: (path: string, maxBytes: number) => Promise<RegularFileRead>;
  /** What is at a path the file names. */
  readonly stat: (path: string) => Promise<PathStat>;
  /** Whether a bare provider command is on PATH (`asking` told each path before its stat). */
  readonly commandOnPath: (command: string, asking: (path: string) => void) => Promise<boolean>;
  /**
   * The questions of reloads left waiting, process-wide (shared with the kernel's own reads);
   * default: this reload's own count.
   */
  readonly abandoned?: AbandonedReloadReads;
  /**
   * The behavior tree's checks, one reload after another: a tree whose files and declared
   * parameters are unchanged is neither parsed nor verified again. Default: the reload's own
   * (tests count its parses and verifies through TreeCheckSteps).
   */
  readonly treeChecks?: TreeChecks;
}

/** The host's reload ports: every file-system question asked off the event loop's thread. */
const HOST_RELOAD_PORTS: ReloadPorts = {
  clock: systemClock,
  readRegularFile,
  stat: statPath,
  commandOnPath,
};

/**
 * The reload (SIGHUP) of the configuration file at `absPath` (named `cli.file` in what it says):
 * the start's loader and checks, and the start's overrides (`--port`, `--log-level`), over
 * `ports`. It runs while the providers are driven and the e-stop may be pressed, so nothing in it
 * waits for the file system on the event loop's thread: the file, the stat of every path it names
 * (provider commands, TLS files, the behavior tree), the PATH lookup of every bare command, the
 * tree and its includes are all asked off that thread, each within RELOAD_FILE_READ_TIMEOUT_MS.
 * One that does not answer is an error naming the key, its line and column and the path --
 * `cannot check /mnt/x: no answer within 2000 ms (a hung mount or a failing disk?)` -- and the
 * reload is refused, the configuration in force kept; but a tree file (the main one or an include)
 * that does not answer fails only the tree's section, naming it, and the rest applies. A question
 * left waiting holds one of Deno's worker threads until it returns: while
 * RELOAD_ABANDONED_READS_MAX are left waiting (`ports.abandoned`, process-wide), a reload asks
 * nothing and is refused at once, naming the paths that still hang. `started`: the file's
 * logging.level at start (an edit of it that --log-level overrides is said), and whether the
 * runtime runs automation (automation.enabled at start, a restart's business: while it runs, a
 * reload loads the file's tree whatever the file says of automation.enabled, so the tree is
 * checked and read for it all the same -- once, ReloadedConfig.treeFiles).
 */
export function configReload(
  absPath: string,
  cli: { readonly file: string; readonly logLevel: LogLevel | null },
  overrides: { readonly port: { port: number } | null; readonly logLevel: LogLevel | null },
  started: { readonly logLevel: LogLevel; readonly automationEnabled: boolean },
  ports: ReloadPorts = HOST_RELOAD_PORTS,
): () => Promise<ReloadedConfig> {
  let fileLevel = started.logLevel;
  const abandoned = ports.abandoned ?? new AbandonedReloadReads();
  const readFile = steadyFileReader(
    reloadRegularFileReader(ports.clock, ports.readRegularFile, abandoned),
  );
  const reloadRead = reloadFileReader(ports.clock, ports.readRegularFile, abandoned);
  const ask = reloadPathAnswers(ports.clock, ports.stat, ports.commandOnPath, abandoned);
  /** Made at the first check of a tree: a configuration without one never loads the engine. */
  const treeChecks = { current: ports.treeChecks ?? null };
  return async () => {
    const refused = abandoned.refusal();
    if (refused !== null) return { ok: false, errors: [`reload refused: ${refused}`] };
    const again = await loadConfigFileAsking({
      ...loaderOptions(absPath, "start", false),
      readFile,
      ask,
    });
    if (!again.readable) {
      return { ok: false, errors: [`cannot read ${cli.file}: ${again.message}`] };
    }
    const lines = again.diagnostics.map((d) => d.file === absPath ? { ...d, file: cli.file } : d);
    // Off the event loop's thread, bounded: the providers and the e-stop run meanwhile. Read
    // once: the kernel loads these files as checked (ReloadedConfig.treeFiles), not read again.
    const tree = again.config
      ? await checkBehaviorTree(again.config, reloadRead, started.automationEnabled, treeChecks)
      : { diagnostics: [] };
    lines.push(...tree.diagnostics);
    const errors = lines.filter((d) => d.severity === "error").map(formatDiagnostic);
    if (again.config === null || errors.length > 0) {
      const warnings = lines.filter((d) => d.severity !== "error").map(formatDiagnostic);
      if (again.skipped !== undefined) {
        warnings.push(
          `${cli.file}: ${again.skipped} more path(s) not checked: none is asked once one did ` +
            "not answer",
        );
      }
      return { ok: false, errors, warnings };
    }
    const level = again.config.logging.level;
    if (cli.logLevel !== null && level !== fileLevel) {
      lines.push({
        severity: "warning",
        path: "logging.level",
        message: `${fileLevel} -> ${level} in the file is not in effect: --log-level ` +
          `${cli.logLevel} overrides it for this run`,
        ...(again.positionOf?.(["logging", "level"]) ?? { line: 0, column: 0 }),
        file: cli.file,
      });
    }
    fileLevel = level;
    const warnings = lines.filter((d) => d.severity !== "error").map(formatDiagnostic);
    const config = withOverrides(again.config, overrides);
    return tree.files === undefined
      ? { ok: true, config, warnings }
      : { ok: true, config, warnings, treeFiles: tree.files };
  };
}

/**
 * Reads of the configuration file one reload makes, at most, to see two in a row with the same
 * bytes. An editor or a deploy tool that rewrites the file in place while SIGHUP comes can leave
 * it cut off mid-write for a moment, and a cut before a section (`safety:`) is still valid YAML:
 * it would load, the cut sections at their defaults. Two reads in a row that differ say it is
 * being written: it is read again, up to this many reads, then the reload is refused (nothing
 * applied). A file cut and left so (a writer that died) reads the same each time: only writing
 * it elsewhere and renaming it into place (README, "Reloading the configuration") prevents that.
 */
export const CONFIG_RELOAD_READS_MAX = 4;

/**
 * `read` until two reads in a row give the same bytes (CONFIG_RELOAD_READS_MAX reads at most):
 * the later read, or why the file was refused (one read refused, or no two alike).
 */
function steadyFileReader(
  read: (path: string, maxBytes: number) => Promise<RegularFileRead>,
): (path: string, maxBytes: number) => Promise<RegularFileRead> {
  return async (path, maxBytes) => {
    let last = await read(path, maxBytes);
    for (let reads = 1; reads < CONFIG_RELOAD_READS_MAX; reads++) {
      if (!last.ok) return last;
      const next = await read(path, maxBytes);
      if (next.ok && sameBytes(last.bytes, next.bytes)) return next;
      last = next;
    }
    if (!last.ok) return last;
    return {
      ok: false,
      message: `it changed while being read (${CONFIG_RELOAD_READS_MAX} reads, no two in a row ` +
        "alike): is it being written in place? Write the new file next to it, then rename it " +
        "into place",
    };
  };
}

/** Whether `a` and `b` hold the same bytes. */
function sameBytes(a: Uint8Array, b: Uint8Array): boolean {
  if (a.length !== b.length) return false;
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/**
 * Reads and validates the configuration file at start and `--check-config`, asking the file
 * system on this thread (nothing runs yet); a reload asks off it (configReload).
 */
function readConfigFile(absPath: string, mode: "check" | "start", strict: boolean) {
  return loadConfigFile({
    ...loaderOptions(absPath, mode, strict),
    readFile: readRegularFile,
    // Asked once per name: 30,000 providers naming one command must not cost 300,000 stats.
    fileExists: memoized(isFile),
    pathKind,
    fileMode: memoized(fileMode),
    commandExists: memoized(commandOnPathSync),
  });
}

/** The loader's options but for how it reads the file and asks the file system. */
function loaderOptions(absPath: string, mode: "check" | "start", strict: boolean) {
  return {
    path: absPath,
    mode,
    strict,
    // --check-config only: at start-up the runtime reviews the e-stop with the inventory.
    safetyReview: mode === "check",
    // Read through the host, which also keeps them out of the providers' environment.
    env: {
      RUNTIME_API_TOKEN: secretFromEnvironment("RUNTIME_API_TOKEN"),
      INFLUXDB_TOKEN: secretFromEnvironment("INFLUXDB_TOKEN"),
    },
    // The variables http.tokens name: read (and taken out of the environment) while checking;
    // kept by the host, so a reload reads the same values.
    secretEnv: secretFromEnvironment,
    cwd: workingDirectory(),
  };
}

/**
 * The configuration in effect: the file's, with `http.port` replaced by the port override and
 * `logging.level` by --log-level, if given (a reload re-applies them to the re-read file).
 */
function withOverrides(
  config: Config,
  o: { readonly port: { port: number } | null; readonly logLevel: LogLevel | null },
): Config {
  const http = o.port === null ? config.http : { ...config.http, port: o.port.port };
  const logging = o.logLevel === null ? config.logging : { ...config.logging, level: o.logLevel };
  return { ...config, http, logging };
}

/**
 * Diagnostics of automation.behavior_tree when automation is enabled and the file exists (a
 * missing file is already a config diagnostic: a warning under plain `--check-config`, an error
 * under `--strict` and at start). Files are named relative to the working directory when they lie
 * below it, else by absolute path. `--check-config` and the start read the tree and its includes
 * synchronously (nothing runs yet); a reload reads them through `reloadRead` (reloadFileReader:
 * off the event loop's thread, each file within RELOAD_FILE_READ_TIMEOUT_MS), as the providers
 * and the e-stop run meanwhile: a file that does not answer is no diagnostic (the kernel's load of
 * the files read fails the tree's section, naming it; the rest of the reload applies).
 */
export async function behaviorTreeDiagnostics(
  config: Config,
  reloadRead?: (path: string) => Promise<Uint8Array>,
): Promise<Diagnostic[]> {
  return (await checkBehaviorTree(config, reloadRead)).diagnostics;
}

/**
 * behaviorTreeDiagnostics, and with `reloadRead` the files it read (`files`, served from memory):
 * the kernel loads the tree from them (Kernel.reload), so a reload reads each file once.
 * `automationRuns`: the runtime runs automation (started with it), which loads the file's tree
 * even when the file turns automation.enabled off (a restart's business). `checks`: the reloads'
 * TreeChecks (made here at the first), which answer a tree unchanged since the last check (its
 * files' texts and the declared parameters) without parsing or verifying it again.
 */
async function checkBehaviorTree(
  config: Config,
  reloadRead?: (path: string) => Promise<Uint8Array>,
  automationRuns = false,
  checks: { current: TreeChecks | null } = { current: null },
): Promise<{ diagnostics: Diagnostic[]; files?: ReloadTreeFiles }> {
  const path = config.automation.behaviorTree;
  if ((!config.automation.enabled && !automationRuns) || path === null) return { diagnostics: [] };
  // Loaded only here: a configuration without automation never loads the tree engine.
  const { readUnanswered, TreeChecks, verifyBehaviorTreeFile } = await import(
    "./automation/bt/mod.ts"
  );
  const parameters = new Map(config.automation.parameters.map((p) => [p.name, p.type]));
  let verify = (readFile: (path: string) => Uint8Array | string) =>
    verifyBehaviorTreeFile(path, readFile, parameters);
  let readFile: (path: string) => Uint8Array | string = (p) => readFileBytes(p);
  let files: ReloadTreeFiles | undefined;
  if (reloadRead === undefined) {
    if (!isFile(path)) return { diagnostics: [] };
  } else {
    /** The tree files whose read did not answer (late, or not asked: too many left waiting). */
    const unanswered: string[] = [];
    checks.current ??= new TreeChecks();
    const read = await checks.current.read(path, async (p) => {
      try {
        return await reloadRead(p);
      } catch (error) {
        if (readUnanswered(error)) unanswered.push(p);
        throw error;
      }
    });
    readFile = read.readFile;
    verify = () => read.verify(parameters);
    files = { path, readFile };
    if (unanswered.length > 0) {
      // Not a fault of the configuration but of the file system, which may answer at the next
      // SIGHUP: the main file or an include alike, the tree's reload fails naming the file (the
      // kernel loads these files: its read's error), the tree in force runs on, and the rest of
      // the configuration applies (docs/deployment.md, the reload's reads of the tree).
      return { diagnostics: [], files };
    }
    try {
      readFile(path);
    } catch {
      // Not read: a missing file (or one not regular) is the configuration's diagnostic.
      return { diagnostics: [], files };
    }
  }
  const cwd = workingDirectory();
  const diagnostics = verify(readFile).map((d) => {
    return { ...d, file: pathBelow(cwd, d.file) ?? d.file };
  });
  return files === undefined ? { diagnostics } : { diagnostics, files };
}

/**
 * `--check-config`: the start's checks of the TLS files named by `http.tls_cert_path` and
 * `http.tls_key_path` when the HTTP server is enabled and both are there (a file that is not is
 * the loader's diagnostic):
 * readable PEM, the certificate's dates, the key belonging to the certificate. What the start
 * would refuse is an error under `--strict` and a warning otherwise; what it would warn of
 * (a certificate expiring within TLS_CERT_EXPIRY_WARNING_DAYS) is a warning.
 */
async function tlsFileDiagnostics(
  config: Config,
  positionOf: ((path: readonly string[]) => { line: number; column: number }) | undefined,
  cli: { file: string; strict: boolean },
): Promise<Diagnostic[]> {
  const { enabled, tlsCertPath, tlsKeyPath, tlsAllowExpiredCert } = config.http;
  // No HTTP server, no TLS file read: the start judges neither (kernel.ts #startFiles).
  if (!enabled || tlsCertPath === null || tlsKeyPath === null) return [];
  if (!isFile(tlsCertPath) || !isFile(tlsKeyPath)) return [];
  const check = await checkTlsFiles({ tlsCertPath, tlsKeyPath, tlsAllowExpiredCert });
  const diagnostic = (severity: "error" | "warning", text: string): Diagnostic => {
    // The start's messages begin with the key they are about.
    const key = text.startsWith("http.tls_key_path:") ? "tls_key_path" : "tls_cert_path";
    const message = text.replace(/^http\.tls_(cert|key)_path(?: \/ http\.tls_key_path)?: /, "");
    const at = positionOf?.(["http", key]) ?? { line: 0, column: 0 };
    return { severity, path: `http.${key}`, message, ...at, file: cli.file };
  };
  const out = check.warnings.map((w) => diagnostic("warning", w));
  if (check.refusal !== null) {
    out.push(diagnostic(cli.strict ? "error" : "warning", `${check.refusal} (a start refuses it)`));
  }
  return out;
}

/** One write for all lines: a write per line made printing 100k diagnostics take seconds. */
function printDiagnostics(diagnostics: readonly Diagnostic[], write: (text: string) => void): void {
  if (diagnostics.length > 0) write(diagnostics.map(formatDiagnostic).join("\n"));
}

/** `fn` with its answers kept per argument, for the duration of one command. */
function memoized<T>(fn: (arg: string) => T): (arg: string) => T {
  const answers = new Map<string, T>();
  return (arg) => {
    if (answers.has(arg)) return answers.get(arg) as T;
    const answer = fn(arg);
    answers.set(arg, answer);
    return answer;
  };
}

/** Whether a regular file is at a path (on this thread: the start and `--check-config`). */
function isFile(absPath: string): boolean {
  return statPathSync(absPath).kind === "file";
}

/** What is at a path that is not a regular file ("a directory", ...); null when nothing is. */
function pathKind(absPath: string): string | null {
  const stat = statPathSync(absPath);
  return stat.kind === "other" ? stat.what : null;
}

/** The permission bits of the regular file at a path; null when they cannot be read. */
function fileMode(absPath: string): number | null {
  const stat = statPathSync(absPath);
  return stat.kind === "file" ? stat.mode : null;
}

/** Starts the service with a valid configuration and resolves with the exit code. */
function startWithConfig(
  config: Config,
  portFrom: { port: number; source: string } | null,
  reload: () => Promise<ReloadedConfig>,
  abandonedReloadReads: AbandonedReloadReads,
): Promise<number> {
  // The level in effect: --log-level's when given (withOverrides put it in the configuration).
  const log = createStderrLogger(config.logging.level);
  if (portFrom) log.info(`http.port ${portFrom.port} (from ${portFrom.source})`);
  // Always said, on or off, with the setting that decides it (a misspelled key leaves it off).
  const auth = authenticationSummary(config.http, {
    envToken: (secretFromEnvironment("RUNTIME_API_TOKEN") ?? "") !== "",
  });
  log[auth.level](auth.message);
  // A deployment moved over from anolis may still set the anolis variable: say so, without
  // its value, rather than run without the token the operator meant.
  const anolisToken = secretFromEnvironment(ANOLIS_TOKEN_ENV_VAR) ?? "";
  if (anolisToken !== "" && !secretFromEnvironment("RUNTIME_API_TOKEN")) {
    log.warn(
      `${ANOLIS_TOKEN_ENV_VAR} is set but ignored: this runtime takes the API token from RUNTIME_API_TOKEN (else http.auth_token); set RUNTIME_API_TOKEN instead`,
    );
  }
  // A compiled binary cannot carry the malloc settings its start tasks and unit give it
  // (docs/deployment.md, "Memory: V8 and malloc settings"): started some other way, say so once.
  const mallocUnset = Object.keys(MALLOC_ENV).filter((k) => (readEnvironment(k) ?? "") === "");
  if (operatingSystem() === "linux" && mallocUnset.length > 0) {
    const settings = Object.entries(MALLOC_ENV).map(([k, v]) => `${k}=${v}`).join(" ");
    log.info(
      `malloc settings not set: ${
        mallocUnset.join(", ")
      }: glibc then gives each thread that allocates an arena of its own, kept at its high-water mark (~5-10 MiB more at 40 providers); set ${settings} as the systemd unit does`,
    );
  }
  // Deno exits 1 on an uncaught error, which would read as a configuration error (and systemd
  // would not restart us): a crash is logged on one line and exits with its own code.
  const crash = (what: unknown) => {
    const text = what instanceof Error ? (what.stack ?? what.message) : String(what);
    log.error(`crash: ${text}`);
    // Providers also see their stdin close when we exit; SIGTERM reaches their helpers too.
    terminateProviderProcesses();
    // The crash line is queued for stderr: wait for it (bounded: a stalled reader cannot keep a
    // crashed runtime from exiting, and systemd from restarting it).
    void flushStderrLog().finally(() => exitProcess(EXIT_INTERNAL_ERROR));
  };
  globalThis.addEventListener("error", (e) => {
    e.preventDefault();
    crash(e.error ?? e.message);
  });
  globalThis.addEventListener("unhandledrejection", (e) => {
    e.preventDefault();
    crash(e.reason);
  });
  // With --log-level, `config` and every reload's carry that level (withOverrides).
  return runService(config, log, { loadConfig: reload, abandonedReloadReads });
}

if (import.meta.main) {
  const code = await main(commandLineArguments());
  // The last log lines (the shutdown's) may still be queued for stderr: bounded.
  await flushStderrLog();
  exitProcess(code);
}
