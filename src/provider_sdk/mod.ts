/**
 * Provider SDK: write ADPP v1 providers in TypeScript (README.md in this folder). A provider
 * declares devices (signals, functions with ArgSpecs) in a DeviceProvider, or implements
 * ProviderHandler directly, and runs it with `runStdioProvider()`. A provider that declares its
 * safe state (`applySafeState`, per device in a DeviceDefinition) goes safe on its own: on stdin
 * EOF, SIGTERM/SIGINT and, with a lease (`leaseMs`), when the runtime stops sending requests.
 * `runProviderCli()` gives a provider with a configuration file the anolis executable profile's
 * command line: `--config`, `--check-config`, `--config-schema`, `--check-host`, `--version`.
 *
 * This module is the package's `./provider-sdk` export (deno.json): everything a provider author
 * uses, and nothing of the serve loop's machinery. The runtime never imports this folder.
 */
export * from "./provider_error.ts";
export * from "./wire_values.ts";
export * from "./capability.ts";
export * from "./call_args.ts";
export * from "./serve.ts";
export {
  type ApplySafeState,
  MAX_LEASE_MS,
  type ProviderClock,
  SAFE_STATE_TIMEOUT_MS,
  type SafeStateReason,
  type SafeStateSummary,
} from "./safe_state.ts";
export * from "./device_provider.ts";
export * from "./stderr_logger.ts";
export * from "./run_stdio_provider.ts";
export * from "./executable_profile.ts";
export * from "./provider_cli.ts";
export { ADPP_PROTOCOL_VERSION } from "../common/mod.ts";
export type { FunctionCategory, Logger, LogLevel, ValueType } from "../common/mod.ts";
export {
  MAX_DEVICES_PER_PROVIDER,
  MAX_FRAME_BYTES,
  MAX_HEALTH_METRICS,
  PROVIDER_STATUS_MESSAGE_CHARS,
  StatusCode as WireStatusCode,
  WireCategory,
  WireDeviceState,
  WireProviderState,
  WireQuality,
  WireValueType,
} from "../adpp/mod.ts";
export type {
  RequestPayloads,
  ResponsePayloads,
  WireDeviceHealth,
  WireProviderHealth,
  WireValue,
} from "../adpp/mod.ts";
