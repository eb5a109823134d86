export * from "./types.ts";
export { loadConfig } from "./loader.ts";
export type { LoadConfigOptions, LoadConfigResult } from "./loader.ts";
export { countDiagnostics, diagnosticsReport, formatDiagnostic, formatSummary } from "./report.ts";
export type { DiagnosticsReport } from "./report.ts";
export { isLoopback } from "./loopback.ts";
export { RUNTIME_CONFIG_SCHEMA } from "./_schema.ts";
