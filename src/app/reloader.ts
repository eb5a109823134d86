/**
 * Configuration reload (SIGHUP, `systemctl reload`): re-reads the file given by --config with the
 * start-up loader and validator, and applies what changed (app/live_config.ts decides what changed
 * and who applies it; Kernel.reload applies it, section by section). An invalid file changes
 * nothing: every diagnostic is logged (one line each, as --check-config prints them), the failure
 * is counted (GET /metrics) and a `config_reload` event says so. Every reload, applied or not,
 * is logged as ONE summary line and published as a `config_reload` event.
 *
 * Reloads are serialized: a request during a reload is coalesced into one more reload after it
 * (however many arrive meanwhile), which reads the file as it is then.
 *
 * Nothing here touches Deno.*: the file reading and the signal come from the composition root.
 */
import {
  type Clock,
  errorMessage,
  type Logger,
  namedProviderId,
  neverThrowing,
  transitionDate,
} from "../common/mod.ts";
import type { ReadFileFn } from "../automation/mod.ts";
import type { Config } from "../config/mod.ts";
import type { EventBus } from "../events/mod.ts";
import { failedStartText } from "../providers/mod.ts";
import { namedFailedStarts, RELOAD_STOPPING, type ReloadReport } from "./reload_report.ts";

/**
 * The behavior tree's files as a reload's checks read them (main.ts configReload): the tree at
 * `path` and its includes, served from memory by `readFile` (a file that could not be read, as its
 * error). The kernel loads the tree from these, never reading the files a second time: what was
 * checked is what runs, and a read that hung is reported naming its file.
 */
export interface ReloadTreeFiles {
  /** automation.behavior_tree of the configuration they were read for. */
  readonly path: string;
  readonly readFile: ReadFileFn;
}

/** A re-read configuration: valid (with warnings) or the diagnostics that make it invalid. */
export type ReloadedConfig =
  | {
    readonly ok: true;
    readonly config: Config;
    readonly warnings: readonly string[];
    /** The tree's files as the checks read them; absent when they read none. */
    readonly treeFiles?: ReloadTreeFiles;
  }
  | {
    readonly ok: false;
    readonly errors: readonly string[];
    /** The file's warnings, logged with its errors (every diagnostic is). */
    readonly warnings?: readonly string[];
  };

/** Reloads since start, by outcome (GET /metrics). */
export interface ReloadCounts {
  readonly success: number;
  readonly failure: number;
  /** Wall-clock time of the last applied reload in seconds; null before the first. */
  readonly lastSuccessEpochSeconds: number | null;
}

/** What a reload is applied to (the Kernel). */
export interface ReloadTarget {
  /** The configuration in effect. */
  readonly config: Config;
  readonly bus: EventBus;
  readonly host: { readonly clock: Pick<Clock, "nowMs"> };
  /**
   * Applies what differs from the configuration in effect (Kernel.reload), loading the tree from
   * `read.treeFiles` when given.
   */
  reload(next: Config, read?: { readonly treeFiles?: ReloadTreeFiles }): Promise<ReloadReport>;
}

/** What the reloader needs. */
export interface ConfigReloaderOptions {
  readonly runtime: ReloadTarget;
  /** Reads and validates the --config file as start-up does (behavior tree included). */
  readonly load: () => Promise<ReloadedConfig>;
  readonly log: Logger;
}

/** Serializes, applies and reports configuration reloads. */
export class ConfigReloader {
  readonly #o: ConfigReloaderOptions;
  /**
   * The reloader's lines: they never throw. One that throws (a custom logger) must not skip the
   * reload, its count or its `config_reload` event, nor reject request() (SIGHUP does not await
   * it): the line is lost then, never what it reports.
   */
  readonly #log: Logger;
  #running: Promise<void> | null = null;
  #again = false;
  #success = 0;
  #failure = 0;
  #lastSuccessMs: number | null = null;
  /** The date of the last `config_reload` event (null before the first): see #date. */
  #lastEventMs: number | null = null;

  constructor(options: ConfigReloaderOptions) {
    this.#o = options;
    this.#log = neverThrowing(options.log);
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
          try {
            await this.#reloadOnce();
          } catch (err) {
            // What #reloadOnce did not foresee (it handles its file, the kernel's answer, its
            // clock and its lines): said, never left to reject SIGHUP's `void` call; a reload
            // asked meanwhile still runs.
            this.#log.error(`config reload failed unexpectedly: ${errorMessage(err)}`);
          }
        } while (this.#again);
      } finally {
        this.#running = null;
      }
    })();
    return this.#running;
  }

  async #reloadOnce(): Promise<void> {
    const { runtime } = this.#o;
    const log = this.#log;
    log.debug("config reload: re-reading the configuration file");
    let loaded: ReloadedConfig;
    try {
      loaded = await this.#o.load();
    } catch (err) {
      loaded = { ok: false, errors: [errorMessage(err)] };
    }
    if (!loaded.ok) {
      for (const line of loaded.errors) log.error(`config reload: ${line}`);
      for (const line of loaded.warnings ?? []) log.warn(`config reload: ${line}`);
      this.#fail(
        `config reload failed: ${loaded.errors.length} error(s) in the file; still running on the previous configuration`,
        loaded.errors,
      );
      return;
    }
    for (const line of loaded.warnings) log.warn(`config reload: ${line}`);
    let report: ReloadReport;
    try {
      // The tree's files as the checks read them: loaded as checked, not read again.
      report = await runtime.reload(
        loaded.config,
        loaded.treeFiles === undefined ? {} : { treeFiles: loaded.treeFiles },
      );
    } catch (err) {
      this.#fail(`config reload failed: ${errorMessage(err)}`, [errorMessage(err)]);
      return;
    }
    const refused = [
      ...report.refused.map((r) => `${r.section}: ${r.why}`),
      ...report.failed.map((f) => `${f.section}: ${f.why}`),
    ];
    // Cut short by stop(): not applied as a whole, so not a success (what did apply is listed).
    const interrupted = report.interrupted;
    const summary = summarize(report);
    const at = this.#date();
    if (interrupted) {
      this.#failure++;
      log.error(summary);
    } else {
      this.#success++;
      if (at !== null) this.#lastSuccessMs = at;
      // Anything refused, failed, weakened or left for a restart is never said at INFO.
      const warn = refused.length > 0 || report.providers.failed.length > 0 ||
        report.needsRestart.length > 0 || report.weakened.length > 0 ||
        report.estopFailures.length > 0;
      if (warn) log.warn(summary);
      else log.info(summary);
    }
    if (at === null) return;
    runtime.bus.publish({
      kind: "config_reload",
      result: interrupted ? "failed" : "applied",
      summary,
      providers_added: [...report.providers.added],
      providers_removed: [...report.providers.removed],
      providers_restarted: [...report.providers.restarted],
      providers_retried: [...report.providers.retried],
      providers_updated: report.providers.updated.map((u) => `${u.id}: ${u.fields.join(", ")}`),
      providers_unchanged: [...report.providers.unchanged],
      providers_failed: report.providers.failed.map(failedStartText),
      refused,
      needs_restart: [...report.needsRestart],
      errors: interrupted ? [RELOAD_STOPPING] : [],
      timestamp_ms: at,
    });
  }

  #fail(summary: string, errors: readonly string[]): void {
    const { runtime } = this.#o;
    const log = this.#log;
    this.#failure++;
    log.error(summary);
    const at = this.#date();
    if (at === null) return;
    runtime.bus.publish({
      kind: "config_reload",
      result: "failed",
      summary,
      providers_added: [],
      providers_removed: [],
      providers_restarted: [],
      providers_retried: [],
      providers_updated: [],
      providers_unchanged: runtime.config.providers.map((p) => p.id),
      providers_failed: [],
      refused: [],
      needs_restart: [],
      errors: [...errors],
      timestamp_ms: at,
    });
  }

  /**
   * A reload's date, for its event (and, applied, for GET /metrics): the wall clock's, never
   * before the reload before it (transitionDate), so a step back of the wall clock (NTP) never
   * dates a later reload before an earlier one. Null when the clock throws (one ERROR line): no
   * time is invented, so the reload's event is not published and GET /metrics keeps the last
   * success time it had; the reload itself, its count and its summary line stand.
   */
  #date(): number | null {
    let wall: number;
    try {
      wall = this.#o.runtime.host.clock.nowMs();
    } catch (err) {
      this.#log.error(
        `config reload: reading the wall clock failed: ${errorMessage(err)}; its config_reload ` +
          "event is not published (no time to date it) and its counts stand",
      );
      return null;
    }
    const at = transitionDate(wall, this.#lastEventMs);
    this.#lastEventMs = at;
    return at;
  }
}

/**
 * The reload's one summary line, e.g. `config reload: providers +1 -0 ~1 =3; providers retried
 * (circuit open): sim3; providers updated in place: sim2 (restart_policy); polling 100->200 ms;
 * applied: telemetry; refused: safety (...); needs restart: http.port`. Cut short by stop()
 * (`interrupted`), it says so once, in its head, and names the sections that did not apply for
 * that reason (`not applied: polling, logging`; a providers section cut short after it added,
 * removed, restarted, retried or updated some: `applied in part: providers`) and the providers
 * whose start it never began, or whose start the stop cut (its host stopped under its Hello)
 * (`not started: sim2`): `config reload interrupted (the runtime is stopping): providers ...`.
 */
export function summarize(r: ReloadReport): string {
  const p = r.providers;
  const changed = r.applied.length + r.refused.length + r.failed.length +
      r.needsRestart.length > 0;
  if (!changed && !r.interrupted) return "config reload: no change";
  const head = r.interrupted ? `config reload interrupted (${RELOAD_STOPPING})` : "config reload";
  // Interrupted: "the runtime is stopping" is said in the head, not again for each section.
  const stopped = (why: string) =>
    r.interrupted && (why === RELOAD_STOPPING || why.startsWith(`${RELOAD_STOPPING} (`));
  // A providers section cut short after it added, removed, restarted, retried or updated some
  // (those stay in effect) applied in part: not said "not applied".
  const providersDone = p.added.length + p.removed.length + p.restarted.length +
      p.retried.length + p.updated.length > 0;
  const inPart = (x: { section: string; why: string }) =>
    x.section === "providers" && x.why === RELOAD_STOPPING && providersDone;
  const appliedInPart = r.failed.filter((x) => stopped(x.why) && inPart(x)).map((x) => x.section);
  const notApplied = r.failed.filter((x) => stopped(x.why) && !inPart(x)).map((x) =>
    `${x.section}${x.why.slice(RELOAD_STOPPING.length)}`
  );
  // A start the stop cut short (why: the runtime is stopping): named in `not started`.
  const startStopped = (f: { why: string }) => r.interrupted && f.why === RELOAD_STOPPING;
  const notStarted = p.failed.filter(startStopped).map((f) => namedProviderId(f.id));
  const failedStarts = namedFailedStarts(p.failed.filter((f) => !startStopped(f)));
  // An added or changed provider that did not come up is counted all the same (`+`, `~`: the
  // reload added it, or stopped its old process), and named in `failed to start` below.
  const added = p.added.length + p.addFailed.length;
  const restarted = p.restarted.length + p.restartFailed.length;
  const parts = [
    `providers +${added} -${p.removed.length} ~${restarted} =${p.unchanged.length}`,
  ];
  if (p.retried.length > 0) {
    // Not counted in `~` (not restarted: the same host): up again, their circuit was open.
    parts.push(`providers retried (circuit open): ${p.retried.map(namedProviderId).join(", ")}`);
  }
  if (p.updated.length > 0) {
    // Not counted in `~` (restarted) nor `=` (untouched): the process runs on, its entry changed.
    parts.push(
      `providers updated in place: ${
        p.updated.map((u) => `${namedProviderId(u.id)} (${u.fields.join(", ")})`).join(", ")
      }`,
    );
  }
  parts.push(...r.notes);
  const sections = r.applied.filter((s) => s !== "providers" && s !== "polling");
  if (sections.length > 0) parts.push(`applied: ${sections.join(", ")}`);
  for (const w of r.weakened) parts.push(`weakened (${w.section}): ${w.what}`);
  for (const x of r.refused) parts.push(`refused ${x.section}: ${x.why}`);
  for (const x of r.failed) if (!stopped(x.why)) parts.push(`failed ${x.section}: ${x.why}`);
  if (appliedInPart.length > 0) parts.push(`applied in part: ${appliedInPart.join(", ")}`);
  if (notApplied.length > 0) parts.push(`not applied: ${notApplied.join(", ")}`);
  if (!r.refused.some((x) => x.section === "providers")) {
    if (failedStarts.length > 0) parts.push(`failed to start: ${failedStarts.join("; ")}`);
    if (notStarted.length > 0) parts.push(`not started: ${notStarted.join(", ")}`);
  }
  if (r.estopActions > 0) parts.push(`e-stop latched: ${r.estopActions} safe-state call(s) run`);
  parts.push(...r.estopFailures);
  if (r.needsRestart.length > 0) parts.push(`needs restart: ${r.needsRestart.join(", ")}`);
  return `${head}: ${parts.join("; ")}`;
}
