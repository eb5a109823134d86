/**
 * Automation: the engine the runtime runs (mode gating, device-loss latch, status). The
 * behavior-tree engine itself is `./bt/mod.ts`, loaded on demand when a tree is loaded: a
 * runtime without automation does not load it (bench/README.md, "Footprint").
 */
export type {
  AutomationStatus,
  AutomationVersion,
  BtQuality,
  BtRunnerOptions,
  BtServices,
  NodeStatus,
  ReadFileAsyncFn,
  ReadFileFn,
  TickScheduler,
  TreeChecks,
  TreeCheckSteps,
} from "./bt/mod.ts";
export { AutomationEngine } from "./automation_engine.ts";
export type {
  AutomationEngineOptions,
  AutomationInventory,
  AutomationModes,
  DeviceOutage,
  EngineStatus,
  RefusedCalls,
  TreeReload,
} from "./automation_engine.ts";
export { DEVICE_OUTAGE_FAILURES, MAX_CALL_RECORDS, MAX_OUTAGE_DATES } from "./automation_engine.ts";
export {
  DeviceLossLatch,
  MAX_DEPARTED_PROVIDER_DATES,
  MAX_KEPT_LINES_PER_PROVIDER,
  MAX_LATCHED_DEVICES_PER_PROVIDER,
  type ProviderLossEntry,
} from "./device_loss_latch.ts";
