import { internal } from "../common/mod.ts";

/**
 * Where the run registry's stop (RunRegistry.shutdown) is: one phase, each implying those before
 * it, in place of three flags that could disagree (asked, shutting down, why a late safety event
 * is not recorded).
 *
 * - `running`: shutdown() not called.
 * - `asked`: called; a first start under way (not in the serial chain) ends at its next step.
 *   Its turn in the serial chain has not come (a retry, an open, a close or a marker ahead of it).
 * - `saving`: its turn came: no save is tried again and no save timer armed from now on.
 * - `saved`: its last saves are made: a safety event between runs noted from now on is said in a
 *   WARN of its own, `lostWhy` saying why it is not recorded.
 *
 * The registry's `state` (new, ready, unavailable, stopped) is the start's, apart: `stopped` is
 * set once the stop closed its files, in phase `saved`.
 */
export type StopPhase =
  | { readonly kind: "running" }
  | { readonly kind: "asked" }
  | { readonly kind: "saving" }
  | { readonly kind: "saved"; readonly lostWhy: string };

/**
 * What moves the stop on: shutdown() called (`ask`, again for a call after one that failed), its
 * step in the serial chain beginning (`turn`), its last saves made (`lastSave`, with why a safety
 * event noted after them is not recorded).
 */
export type StopStep =
  | { readonly kind: "ask" }
  | { readonly kind: "turn" }
  | { readonly kind: "lastSave"; readonly lostWhy: string };

/** The stop's phase before shutdown() is called. */
export const STOP_RUNNING: StopPhase = { kind: "running" };

/**
 * The phase after `step` from `phase`. A step never moves the stop back: a shutdown() after one
 * that failed (`ask`, then its own `turn`) keeps the phase it finds, and its `lastSave` gives the
 * reason it says. (A second shutdown() while the first is under way takes no step: it waits for
 * the first, RunRegistry's #stopping.) Throws on a step the stop cannot take there (its turn or
 * last save before it was asked): a bug of the registry's, named.
 */
export function stopPhaseAfter(phase: StopPhase, step: StopStep): StopPhase {
  switch (step.kind) {
    case "ask":
      return phase.kind === "running" ? { kind: "asked" } : phase;
    case "turn":
      if (phase.kind === "running") break;
      return phase.kind === "asked" ? { kind: "saving" } : phase;
    case "lastSave":
      if (phase.kind === "running" || phase.kind === "asked") break;
      return { kind: "saved", lostWhy: step.lostWhy };
  }
  throw internal(`run registry stop: step '${step.kind}' in phase '${phase.kind}'`);
}
