/**
 * Configuration reload (SIGHUP, `systemctl reload`): re-reads the file given by --config with the
 * start-up loader and validator, and applies what changed (config/diff.ts decides what changed;
 * Runtime.applyConfig applies the kernel's part, the service the rest). An invalid file changes
 * nothing: every diagnostic is logged (one line each, as --check-config prints them), the failure
 * is counted (GET /metrics) and a `config_reload` event says so. Every reload, applied or not,
 * is logged as ONE summary line and published as a `config_reload` event.
 *
 * Reloads are serialized: a request during a reload is coalesced into one more reload after it
 * (however many arrive meanwhile), which reads the file as it is then.
 *
 * Nothing here touches Deno.*: the file reading and the signal come from the composition root.
 */
import type { Logger, LogLevel } from "../common/mod.ts";
import { type Config, type ConfigDiff, diffConfig, isEmptyDiff } from "../config/mod.ts";
import type { KernelReloadReport, Runtime } from "./kernel.ts";

/** A re-read configuration: valid (with warnings) or the diagnostics that make it invalid. */
export type ReloadedConfig =
  | { readonly ok: true; readonly config: Config; readonly warnings: readonly string[] }
  | { readonly ok: false; readonly errors: readonly string[] };

/** Reloads since start, by outcome (GET /metrics). */
export interface ReloadCounts {
  readonly success: number;
  readonly failure: number;
  /** Wall-clock time of the last applied reload in seconds; null before the first. */
  readonly lastSuccessEpochSeconds: number | null;
}

/** What the reloader needs. */
export interface ConfigReloaderOptions {
  readonly runtime: Runtime;
  /** Reads and validates the --config file as start-up does (behavior tree included). */
  readonly load: () => Promise<ReloadedConfig>;
  readonly log: Logger;
  /** Sets the process log level (logging.level); absent: --log-level fixed it for the run. */
  readonly setLogLevel?: (level: LogLevel) => void;
  /**
   * The service's part of a reload (telemetry); resolves with notes for the summary. Called
   * after the kernel's part with the configuration now in effect.
   */
  readonly applyService?: (next: Config, diff: ConfigDiff) => Promise<string[]>;
}

/** Serializes, applies and reports configuration reloads. */
export class ConfigReloader {
  readonly #o: ConfigReloaderOptions;
  #running: Promise<void> | null = null;
  #again = false;
  #success = 0;
  #failure = 0;
  #lastSuccessMs: number | null = null;

  constructor(options: ConfigReloaderOptions) {
    this.#o = options;
  }

  /** Reloads since start (GET /metrics). */
  counts(): ReloadCounts {
    return {
      success: this.#success,
      failure: this.#failure,
      lastSuccessEpochSeconds: this.#lastSuccessMs === null ? null : this.#lastSuccessMs / 1000,
    };
  }

  /**
   * Asks for a reload. During one, it is coalesced into a single further reload after it.
   * Resolves once no reload is running or pending; never rejects (failures are reported).
   */
  request(): Promise<void> {
    if (this.#running) {
      this.#again = true;
      return this.#running;
    }
    this.#running = (async () => {
      try {
        do {
          this.#again = false;
          await this.#reloadOnce();
        } while (this.#again);
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  async #reloadOnce(): Promise<void> {
    const { runtime, log } = this.#o;
    log.debug("config reload: re-reading the configuration file");
    let loaded: ReloadedConfig;
    try {
      loaded = await this.#o.load();
    } catch (err) {
      loaded = { ok: false, errors: [errText(err)] };
    }
    if (!loaded.ok) {
      for (const line of loaded.errors) log.error(`config reload: ${line}`);
      this.#fail(
        `config reload failed: ${loaded.errors.length} error(s) in the file; still running on the previous configuration`,
        loaded.errors,
      );
      return;
    }
    for (const line of loaded.warnings) log.warn(`config reload: ${line}`);
    const before = runtime.config;
    const diff = diffConfig(before, loaded.config);
    let kernel: KernelReloadReport;
    try {
      kernel = await runtime.applyConfig(loaded.config, diff);
    } catch (err) {
      this.#fail(`config reload failed: ${errText(err)}`, [errText(err)]);
      return;
    }
    const notes: string[] = [];
    if (diff.loggingLevel) {
      if (this.#o.setLogLevel) {
        this.#o.setLogLevel(diff.loggingLevel.to);
        notes.push(`log level ${diff.loggingLevel.from}->${diff.loggingLevel.to}`);
      } else {
        notes.push("logging.level not applied: --log-level fixes it for this run");
      }
    }
    try {
      notes.push(...(await this.#o.applyService?.(runtime.config, diff) ?? []));
    } catch (err) {
      notes.push(`service part failed: ${errText(err)}`);
    }
    const summary = summarize(diff, kernel, notes);
    this.#success++;
    this.#lastSuccessMs = runtime.host.clock.nowMs();
    const refused = [
      ...kernel.providers.refusedInAuto.map((id) => `provider ${id}: mode is AUTO`),
      ...(kernel.tree === "refused_auto" ? ["behavior tree: mode is AUTO"] : []),
      ...(kernel.tree === "failed" ? [`behavior tree: ${kernel.treeError}`] : []),
    ];
    const warn = refused.length > 0 || kernel.providers.failed.length > 0 ||
      diff.needsRestart.length > 0;
    if (warn) log.warn(summary);
    else log.info(summary);
    runtime.bus.publish({
      kind: "config_reload",
      result: "applied",
      summary,
      providers_added: kernel.providers.added,
      providers_removed: kernel.providers.removed,
      providers_restarted: kernel.providers.restarted,
      providers_unchanged: kernel.providers.unchanged,
      providers_failed: kernel.providers.failed,
      refused,
      needs_restart: [...diff.needsRestart],
      errors: [],
      timestamp_ms: runtime.host.clock.nowMs(),
    });
  }

  #fail(summary: string, errors: readonly string[]): void {
    const { runtime, log } = this.#o;
    this.#failure++;
    log.error(summary);
    runtime.bus.publish({
      kind: "config_reload",
      result: "failed",
      summary,
      providers_added: [],
      providers_removed: [],
      providers_restarted: [],
      providers_unchanged: runtime.config.providers.map((p) => p.id),
      providers_failed: [],
      refused: [],
      needs_restart: [],
      errors: [...errors],
      timestamp_ms: runtime.host.clock.nowMs(),
    });
  }
}

/**
 * The reload's one summary line, e.g. `config reload: providers +1 -0 ~1 =3; polling 100->200
 * ms; telemetry changed; needs restart: http.port`.
 */
export function summarize(
  diff: ConfigDiff,
  k: KernelReloadReport,
  notes: readonly string[],
): string {
  const p = k.providers;
  if (isEmptyDiff(diff) && notes.length === 0) return "config reload: no change";
  const parts = [
    `providers +${p.added.length} -${p.removed.length} ~${p.restarted.length} =${p.unchanged.length}`,
  ];
  if (diff.pollingIntervalMs) {
    parts.push(`polling ${diff.pollingIntervalMs.from}->${diff.pollingIntervalMs.to} ms`);
  }
  parts.push(...notes);
  const sections = k.applied.filter((s) => s !== "polling");
  if (sections.length > 0) parts.push(`applied: ${sections.join(", ")}`);
  if (k.tree === "replaced") parts.push("behavior tree reloaded");
  if (k.tree === "refused_auto") parts.push("behavior tree refused: mode is AUTO");
  if (k.tree === "failed") parts.push(`behavior tree refused: ${k.treeError}`);
  if (p.refusedInAuto.length > 0) {
    parts.push(`refused in AUTO: ${p.refusedInAuto.join(", ")} (provider removal/change)`);
  }
  if (p.failed.length > 0) parts.push(`failed to start: ${p.failed.join("; ")}`);
  if (k.estopActions > 0) parts.push(`e-stop latched: ${k.estopActions} safe-state call(s) run`);
  if (diff.needsRestart.length > 0) parts.push(`needs restart: ${diff.needsRestart.join(", ")}`);
  return `config reload: ${parts.join("; ")}`;
}

function errText(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
