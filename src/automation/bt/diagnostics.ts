/** Builders for behavior-tree diagnostics (the config Diagnostic shape, one per problem). */
import {
  escapeControl,
  MAX_NAMED_IN_WARNING,
  providerText,
  providerTextWithin,
} from "../../common/mod.ts";
import type { Diagnostic } from "../../config/mod.ts";

/** Where a diagnostic points. */
export interface SourcePos {
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/**
 * A tree's ID or a node's type as a node path (a diagnostic's `path`, a tick's error, the node a
 * call names: `Main/Sequence[0]/CallDevice[2]`) or a SubTree cycle names it, unquoted: the tree
 * file's text, any length and any character, cut to PROVIDER_TEXT_CHARS and its control
 * characters escaped, as a message lists a file's tree IDs. A node's path stays unique: each
 * segment carries its index among its siblings.
 */
export function pathName(text: string): string {
  return escapeControl(providerText(text));
}

/**
 * Longest file path a diagnostic's message names (an `<include path>` resolved: the tree file's
 * text, any length); longer is cut, marked with an ellipsis. Room for a deep install path.
 */
export const TREE_FILE_SHOWN_CHARS = 200;

/**
 * Longest reason a file was not read (the host's error, which may repeat the path) a diagnostic
 * quotes; longer is cut, marked with an ellipsis.
 */
export const TREE_READ_ERROR_SHOWN_CHARS = 300;

/**
 * A file path as a diagnostic's message names it (an included file, an include cycle), unquoted as
 * a diagnostic's position names its file: cut to TREE_FILE_SHOWN_CHARS and its control characters
 * escaped, so that a 10 kB `<include path>` (or a line break in it) makes no line of that length.
 */
export function fileName(path: string): string {
  return escapeControl(providerTextWithin(path, TREE_FILE_SHOWN_CHARS));
}

/** Why a file was not read, in a diagnostic: cut to TREE_READ_ERROR_SHOWN_CHARS, escaped. */
export function readErrorText(why: string): string {
  return escapeControl(providerTextWithin(why, TREE_READ_ERROR_SHOWN_CHARS));
}

/**
 * A cycle (of SubTrees, of includes) as its error names it, `A -> B -> A`: each item named by
 * `show`, up to MAX_NAMED_IN_WARNING of them, then how many more and the first one again (a chain
 * of thousands makes no line of that length).
 */
export function cycleText(items: readonly string[], show: (item: string) => string): string {
  if (items.length <= MAX_NAMED_IN_WARNING + 1) return items.map(show).join(" -> ");
  const shown = items.slice(0, MAX_NAMED_IN_WARNING).map(show).join(" -> ");
  return `${shown} -> (${items.length - 1 - MAX_NAMED_IN_WARNING} more) -> ${show(items[0]!)}`;
}

/** An error diagnostic at a position. */
export function errorAt(at: SourcePos, path: string, message: string): Diagnostic {
  return { severity: "error", path, message, line: at.line, column: at.column, file: at.file };
}

/** A warning diagnostic at a position. */
export function warningAt(at: SourcePos, path: string, message: string): Diagnostic {
  return { severity: "warning", path, message, line: at.line, column: at.column, file: at.file };
}

/** True when any diagnostic is an error. */
export function hasErrors(diagnostics: readonly Diagnostic[]): boolean {
  return diagnostics.some((d) => d.severity === "error");
}
