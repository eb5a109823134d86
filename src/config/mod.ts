export * from "./types.ts";
export {
  loadConfig,
  loadConfigFile,
  loadConfigFileAsking,
  MAX_CONFIG_FILE_BYTES,
  PATH_QUESTIONS_IN_FLIGHT,
} from "./loader.ts";
export type {
  BoundedFileRead,
  CommandAnswer,
  LoadConfigFileAskingOptions,
  LoadConfigFileOptions,
  LoadConfigFileResult,
  LoadConfigOptions,
  LoadConfigResult,
  PathAnswer,
  PathQuestions,
} from "./loader.ts";
export { countDiagnostics, diagnosticsReport, formatDiagnostic, formatSummary } from "./report.ts";
export type { DiagnosticsReport } from "./report.ts";
export {
  ESTOP_COMMANDS_NOTHING,
  ESTOP_DEVICE_UNVERIFIED,
  ESTOP_VERIFIES_NOTHING,
} from "./_safety_review.ts";
export { RUNTIME_CONFIG_SCHEMA } from "./_schema.ts";
export { MIN_FLUSH_INTERVAL_MS, sparkplugIdProblem } from "./_semantic.ts";
export { MAX_YAML_DEPTH } from "./_source.ts";
export { unsendableToken } from "./_tokens.ts";
export * from "./condition.ts";
export { atSourcePosition, sourcePosition } from "./source_positions.ts";
export {
  differsOnlyInPlace,
  diffParameters,
  diffProviders,
  IN_PLACE_PROVIDER_FIELDS,
  inPlaceFieldsChanged,
} from "./diff.ts";
export type { ParameterDiff, ProviderDiff, ProviderUpdate } from "./diff.ts";
