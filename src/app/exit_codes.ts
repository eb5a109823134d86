/**
 * Process exit codes of the `runtime` command. Each failure class has its own code so that a
 * supervisor can react differently: systemd's `RestartPreventExitStatus=1 2` stops a bad
 * configuration from restart-looping, while start-up failures (3) and crashes (4) are retried by
 * `Restart=on-failure`. Documented in docs/deployment.md and examples/systemd/README.md; the
 * numbers are part of the deployment contract, so never renumber them.
 */

/** Clean shutdown (SIGTERM/SIGINT handled), or a successful `--check-config`/`--version`/`--help`. */
export const EXIT_OK = 0;

/** The configuration has errors (`--check-config` found errors, or start-up refused the config). */
export const EXIT_CONFIG_ERROR = 1;

/** Usage error (unknown flag, missing `--config`) or the configuration file cannot be read. */
export const EXIT_USAGE = 2;

/**
 * Start-up failure with a valid configuration: a provider did not come up within
 * `runtime.startup_timeout_ms`, `runtime.data_dir` or a TLS file was not read within it (a hung
 * disk), a TLS file could not be read, or the HTTP listener could not bind. Worth retrying: the
 * hardware, the disk or the port may be back a moment later.
 */
export const EXIT_STARTUP_FAILURE = 3;

/** The running service crashed: an unexpected internal error after start-up. */
export const EXIT_INTERNAL_ERROR = 4;

/** Every exit code of the `runtime` command. */
export type ExitCode =
  | typeof EXIT_OK
  | typeof EXIT_CONFIG_ERROR
  | typeof EXIT_USAGE
  | typeof EXIT_STARTUP_FAILURE
  | typeof EXIT_INTERNAL_ERROR;

/** One line per exit code, for `--help` text and documentation tests. */
export const EXIT_CODE_DESCRIPTIONS: Readonly<Record<ExitCode, string>> = {
  [EXIT_OK]:
    "clean shutdown after SIGTERM/SIGINT; --check-config found no errors; --version, --help",
  [EXIT_CONFIG_ERROR]: "configuration errors (--check-config, or a start refused for them)",
  [EXIT_USAGE]: "usage error (unknown flag, missing --config), or the file cannot be read",
  [EXIT_STARTUP_FAILURE]:
    "start-up failure: a provider not up, or its first poll unanswered, within\n" +
    "     runtime.startup_timeout_ms; runtime.data_dir or a TLS file not read within it (a\n" +
    "     hung disk); a TLS file that cannot be read; the HTTP listener cannot bind; an expired\n" +
    "     TLS certificate; runtime.data_dir in use by another runtime; a resource claim held by\n" +
    "     two devices (anolis.claim)",
  [EXIT_INTERNAL_ERROR]:
    "crash or internal error while running; a shutdown that overran its budget, in which a\n" +
    "     stage failed, or that left a provider process running (killed at exit)",
};
