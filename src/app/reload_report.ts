/**
 * What a configuration reload did, and the contract between the kernel and a section's owner
 * (app/live_config.ts has the table of sections; Kernel.reload applies them; the reloader reports
 * them in one summary line and a `config_reload` event).
 */
import { namedProviderId } from "../common/mod.ts";
import type { Config } from "../config/mod.ts";
import type { FailedStart } from "../providers/mod.ts";
import type { SectionKey } from "./live_config.ts";
import type { Weakening } from "./run_gate.ts";

/** The why of what a reload's stop cut short: one text, owned by providers (its failed starts). */
export { RELOAD_STOPPING } from "../providers/mod.ts";

/**
 * The entries of ReloadReport.providers.failed as a line or a refusal names them, `id: why`: each
 * id (configured: any length, ": " in it too) cut as namedProviderId; the why as it is.
 */
export function namedFailedStarts(failed: readonly FailedStart[]): string[] {
  return failed.map((f) => `${namedProviderId(f.id)}: ${f.why}`);
}

/** What a reload did (the reloader's summary line and `config_reload` event). */
export interface ReloadReport {
  readonly providers: {
    /** Started (added, or restarted because their entry changed). */
    readonly added: readonly string[];
    readonly restarted: readonly string[];
    /**
     * Unchanged (or updated: also in `updated`) entries whose restart circuit was open, up again
     * after a retry with the failure streak reset (a reload is the operator asking to try them
     * again; one that did not come up is in `failed`).
     */
    readonly retried: readonly string[];
    /**
     * Entries that differ only in supervision or start settings (restart_policy,
     * hello_timeout_ms, ready_timeout_ms), applied to the running provider in place: its
     * process runs on. Id and the fields that changed (YAML names).
     */
    readonly updated: readonly { readonly id: string; readonly fields: readonly string[] }[];
    readonly removed: readonly string[];
    readonly unchanged: readonly string[];
    /**
     * Added, changed or retried providers that did not come up, and why (they are not running;
     * a retried one is under its supervisor again). Said as text where it is printed
     * (namedFailedStarts, failedStartText).
     */
    readonly failed: readonly FailedStart[];
    /**
     * Of `failed`, the added ones (ids): counted with `added` in the summary's `+` (the reload
     * added them; they are not running).
     */
    readonly addFailed: readonly string[];
    /**
     * Of `failed`, the changed ones (ids): their old process was stopped, the restart did not come
     * up (it failed, or stop() cut it short); counted with `restarted` in the summary's `~`.
     */
    readonly restartFailed: readonly string[];
    /** Removals and changes held back while the mode is AUTO (ids; they run as before). */
    readonly held: readonly string[];
  };
  /** Live sections that took effect, in table order. */
  readonly applied: readonly SectionKey[];
  /**
   * What applied sections say (`polling 100->200 ms`, `behavior tree reloaded`), then the alarms
   * and interlocks in force on providers the reload left not running (their input bad).
   */
  readonly notes: readonly string[];
  /** Sections refused (they keep their old value): a protection, the recipe, AUTO. */
  readonly refused: readonly { readonly section: string; readonly why: string }[];
  /** Sections whose owner failed to apply them (they keep their old value). */
  readonly failed: readonly { readonly section: string; readonly why: string }[];
  /** Changed keys that need a restart, in YAML spelling. */
  readonly needsRestart: readonly string[];
  /** Protections weakened by sections that applied (outside AUTO; each on the audit trail). */
  readonly weakened: readonly Weakening[];
  /** Ladder calls the latched e-stop ran for providers the reload started. */
  readonly estopActions: number;
  /**
   * Securing runs of providers the reload started that failed, as the e-stop says them (its ERROR
   * line; it secures the provider again at its next return). The providers did start.
   */
  readonly estopFailures: readonly string[];
  /**
   * stop() cut the reload short: a section was not applied, or applied only in part (a provider
   * start cut by the stop). Not a successful reload.
   */
  readonly interrupted: boolean;
}

export interface MutableReloadReport {
  providers: ReloadReport["providers"];
  applied: SectionKey[];
  notes: string[];
  refused: { section: string; why: string }[];
  failed: { section: string; why: string }[];
  needsRestart: string[];
  weakened: Weakening[];
  estopActions: number;
  estopFailures: string[];
  interrupted: boolean;
}

/**
 * A reload's report before any section applies: every provider of the file `unchanged`, nothing
 * applied, refused, failed nor weakened; `needsRestart` the changed keys a restart takes.
 */
export function startedReloadReport(
  unchanged: string[],
  needsRestart: string[],
): MutableReloadReport {
  return {
    providers: {
      added: [],
      restarted: [],
      retried: [],
      updated: [],
      removed: [],
      unchanged,
      failed: [],
      addFailed: [],
      restartFailed: [],
      held: [],
    },
    applied: [],
    notes: [],
    refused: [],
    failed: [],
    needsRestart,
    weakened: [],
    estopActions: 0,
    estopFailures: [],
    interrupted: false,
  };
}

/** What an owner is told when its section changed. */
export interface SectionContext {
  /** The mode is AUTO: nothing that weakens a protection or changes the recipe may apply. */
  readonly auto: boolean;
  /** The protections this section's change would weaken (app/run_gate.ts). */
  readonly weakens: readonly Weakening[];
  readonly report: MutableReloadReport;
  /** The section differs in the file (false: offered because it reads a file, app/live_config.ts). */
  readonly changed: boolean;
  /**
   * The live sections this reload changes (its diff from the configuration in effect when it
   * began): a section that must know whether a later one will apply (the hooks into FAULT wait
   * for the `safety` section's ladder) reads it here, never by comparing sections itself.
   */
  readonly changedSections: readonly SectionKey[];
}

/** What an owner did: nothing to say (applied), a note, a refusal, or the effective config. */
export interface SectionResult {
  /** Nothing changed (a section offered because it reads a file whose content is the same). */
  readonly unchanged?: boolean;
  readonly note?: string;
  /** Why it was refused: the section keeps its old value (unless `effective` says otherwise). */
  readonly refused?: string;
  /**
   * What refused it (audit `refused_by`): `run_gate`, the AUTO rule of reloads, unless the owner
   * says otherwise (`validation`: the new value is refused whatever the mode).
   */
  readonly refusedBy?: string;
  /** The configuration in effect now, when the section applied only in part. */
  readonly effective?: Config;
  /**
   * Why the section failed part-way (the runtime is stopping): reported failed, with `effective`
   * (when given) in effect -- what it already changed stays.
   */
  readonly failed?: string;
}

/** Applies one section of `next` in place; throws when it cannot (the old value stays). */
export type SectionApply = (
  next: Config,
  ctx: SectionContext,
) => SectionResult | void | Promise<SectionResult | void>;
