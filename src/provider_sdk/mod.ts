/**
 * Provider SDK: write ADPP v1 providers in TypeScript. A provider declares devices (signals,
 * functions with ArgSpecs) in a DeviceProvider, or implements ProviderHandler directly, and runs
 * it with `runStdioProvider()`. The runtime never imports this folder.
 */
export * from "./provider_error.ts";
export * from "./wire_values.ts";
export * from "./capability.ts";
export * from "./call_args.ts";
export * from "./serve.ts";
export * from "./device_provider.ts";
export * from "./stderr_logger.ts";
export * from "./run_stdio_provider.ts";
export {
  MAX_FRAME_BYTES,
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
