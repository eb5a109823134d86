import { MAX_CONFIG_FILE_BYTES } from "./config/mod.ts";

const LIMIT_MIB = MAX_CONFIG_FILE_BYTES / (1024 * 1024);

/** The `runtime --help` text (also printed, on stderr, after a usage error). */
export const USAGE = `Usage:
  runtime --config FILE [--log-level LEVEL]   start the runtime with a YAML configuration
  runtime --check-config FILE [--format text|json]
                                              validate a configuration and exit
  runtime --version                           print the runtime and protocol versions
  runtime --help                              print this help

Options:
  --config FILE          configuration file (also --config=FILE)
  --check-config FILE    print every diagnostic as FILE:LINE:COL: error|warning: key: message,
                         then a summary; exit 0 when valid (warnings allowed), 1 on errors,
                         2 when the file cannot be read
  --format text|json     output of --check-config (default text)
  --log-level LEVEL      debug, info, warn or error; overrides logging.level

Configuration file: a regular file of at most ${LIMIT_MIB} MiB, UTF-8. Anything else (a FIFO,
a device, a larger file) is refused before it is read, with exit code 2.

Environment:
  RUNTIME_API_TOKEN      bearer token for http.auth_enabled (preferred over http.auth_token)
  INFLUXDB_TOKEN         InfluxDB token when telemetry.influxdb.token is empty

Exit codes: 0 ok, 1 configuration errors, 2 usage error or unreadable configuration file
(missing, not a regular file, or larger than ${LIMIT_MIB} MiB).`;
