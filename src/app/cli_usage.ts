import { MAX_CONFIG_FILE_BYTES } from "../config/mod.ts";
import { EXIT_CODE_DESCRIPTIONS } from "./exit_codes.ts";

const LIMIT_MIB = MAX_CONFIG_FILE_BYTES / (1024 * 1024);

/** One line per exit code, from src/exit_codes.ts, so the help cannot miss one. */
const EXIT_CODES = Object.entries(EXIT_CODE_DESCRIPTIONS)
  .map(([code, text]) => `  ${code}  ${text}`)
  .join("\n");

/** The `runtime --help` text (also printed, on stderr, after a usage error). */
export const USAGE = `Usage:
  runtime --config FILE [--port PORT] [--log-level LEVEL]
                                              start the runtime with a YAML configuration
  runtime --check-config FILE [--format text|json] [--strict]
                                              validate a configuration and exit
  runtime --fleet URL [--group G] [--wait-ms N] [--format text|json]
                                              list the Sparkplug edge nodes on an MQTT broker
  runtime --version                           print the runtime and protocol versions
  runtime --help                              print this help

Options:
  --config FILE          configuration file (also --config=FILE)
  --port PORT            serve the API on this TCP port (1-65535) instead of http.port
  --check-config FILE    print every diagnostic as FILE:LINE:COL: error|warning: key: message,
                         then a summary; exit 0 when valid (warnings allowed), 1 on errors,
                         2 when the file cannot be read
  --format text|json     output of --check-config (default text)
  --strict               --check-config on the target: a behavior tree, TLS file or provider
                         command this machine lacks, or a missing API token, is an error (by
                         default a warning, so configurations can be checked anywhere)
  --log-level LEVEL      debug, info, warn or error; overrides logging.level
  --fleet URL            mqtt:// or mqtts:// broker: listen --wait-ms (default 3000, 100-60000)
                         and print every edge node seen (reachable, dead or unknown, mode, latch,
                         alarms, providers, devices), of group --group only when given (one group
                         id, no wildcard: omit it for every group; docs/sparkplug.md); Ctrl-C
                         ends the wait early and prints what was seen

Configuration file: a regular file of at most ${LIMIT_MIB} MiB, UTF-8. Anything else (a FIFO,
a device, a larger file) is refused before it is read, with exit code 2.

Environment:
  RUNTIME_API_TOKEN      bearer token for http.auth_enabled (preferred over http.auth_token)
  INFLUXDB_TOKEN         InfluxDB token when telemetry.influxdb.token is empty
  RUNTIME_HTTP_PORT      like --port (which wins over it); ignored when empty
  SPARKPLUG_USERNAME, SPARKPLUG_PASSWORD
                         the MQTT broker's credentials (sparkplug:, --fleet)
  http.tokens[].token_env
                         each names a variable holding a named token; like the two
                         tokens above, it is kept out of the providers' environment
  ANOLIS_API_TOKEN       not read (the anolis runtime's variable); set without
                         RUNTIME_API_TOKEN, a warning at start says to use RUNTIME_API_TOKEN
  MALLOC_ARENA_MAX       glibc's malloc arenas (2, as the systemd unit sets it); unset,
                         a line at start says so (docs/deployment.md)

Exit codes:
${EXIT_CODES}
Exit code 2 also covers a configuration file that is missing, not a regular file, or larger
than ${LIMIT_MIB} MiB. The example systemd unit restarts 3 and 4, never 1 or 2.`;
