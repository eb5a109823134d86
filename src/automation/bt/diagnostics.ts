/** Builders for behavior-tree diagnostics (the config Diagnostic shape, one per problem). */
import type { Diagnostic } from "../../config/mod.ts";

/** Where a diagnostic points. */
export interface SourcePos {
  readonly file: string;
  readonly line: number;
  readonly column: number;
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
