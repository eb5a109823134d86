/**
 * The composition root (docs/architecture.md): the kernel that builds every subsystem from the
 * configuration and the host ports, the one owner of the running configuration, reload, and the
 * process lifecycle (signals, readiness, shutdown budget, exit codes). main.ts parses the command
 * line and hands over here.
 */
export { USAGE } from "./cli_usage.ts";
export * from "./exit_codes.ts";
export {
  RELOAD_FILE_READ_TIMEOUT_MS,
  reloadFileReader,
  reloadPathAnswers,
  reloadRegularFileReader,
} from "./kernel.ts";
export {
  AbandonedReloadReads,
  RELOAD_ABANDONED_PATHS_NAMED,
  RELOAD_ABANDONED_READS_MAX,
  type ReloadAnswer,
} from "./reload_reads.ts";
export { runService, type RunServiceOptions, StopSignalFilter } from "./process.ts";
export type { ReloadedConfig, ReloadTreeFiles } from "./reloader.ts";
export {
  priorityLine,
  type ProviderUpness,
  RUNTIME_AUTOGROUP_NICE,
  SESSION_PRIORITY_BUSY_RETRIES,
  SESSION_PRIORITY_BUSY_RETRY_MS,
  SessionPriority,
  SETTLED_AUTOGROUP_NICE,
} from "./session_priority.ts";
