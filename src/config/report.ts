/** Rendering of loader diagnostics for `--check-config` (text for people, JSON for CI tools). */
import { escapeControl } from "../common/mod.ts";
import type { Diagnostic } from "./types.ts";

/**
 * `FILE:LINE:COL: error|warning: path.to.key: message`, always one line: a newline or control
 * character a key or a quoted value brings along (`bind: |` keeps its line break) is escaped, so
 * tools reading the output line by line see every diagnostic whole and a terminal runs nothing.
 */
export function formatDiagnostic(d: Diagnostic): string {
  const where = d.line > 0 ? `${d.file}:${d.line}:${d.column}` : d.file;
  const key = d.path === "" ? "" : `${d.path}: `;
  return escapeControl(`${where}: ${d.severity}: ${key}${d.message}`);
}

/** One-line summary, e.g. `examples/x.yaml: 2 errors, 1 warning`. */
export function formatSummary(file: string, diagnostics: readonly Diagnostic[]): string {
  const { errors, warnings } = countDiagnostics(diagnostics);
  const plural = (n: number, word: string) => `${n} ${word}${n === 1 ? "" : "s"}`;
  return `${file}: ${plural(errors, "error")}, ${plural(warnings, "warning")}`;
}

/** Number of errors and warnings. */
export function countDiagnostics(
  diagnostics: readonly Diagnostic[],
): { errors: number; warnings: number } {
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  return { errors, warnings: diagnostics.length - errors };
}

/** The `--format json` document. */
export interface DiagnosticsReport {
  readonly file: string;
  readonly valid: boolean;
  readonly errors: number;
  readonly warnings: number;
  readonly diagnostics: readonly {
    severity: "error" | "warning";
    path: string;
    line: number;
    column: number;
    message: string;
    file: string;
  }[];
}

/** Builds the `--format json` document. */
export function diagnosticsReport(
  file: string,
  diagnostics: readonly Diagnostic[],
): DiagnosticsReport {
  const { errors, warnings } = countDiagnostics(diagnostics);
  return {
    file,
    valid: errors === 0,
    errors,
    warnings,
    diagnostics: diagnostics.map((d) => ({
      severity: d.severity,
      path: d.path,
      line: d.line,
      column: d.column,
      message: d.message,
      file: d.file,
    })),
  };
}
