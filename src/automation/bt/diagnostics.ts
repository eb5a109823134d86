/** Builders for behavior-tree diagnostics (the config Diagnostic shape, one per problem). */
import { escapeControl, providerText } from "../../common/mod.ts";
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
