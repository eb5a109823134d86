/** Automation: behavior-tree engine (parse -> verify -> build -> tick) and its runner. */
export { loadBehaviorTree, verifyBehaviorTreeFile } from "./bt/load.ts";
export type { ParsedTree, TreeDefinition } from "./bt/parse.ts";
export { parseBehaviorTree } from "./bt/parse.ts";
export { verifyParsedTree } from "./bt/verify.ts";
export { buildTree } from "./bt/build.ts";
export type { BuildOptions, BuiltTree } from "./bt/build.ts";
export { BtRunner, computeAutomationVersion, STALL_FAILURE_TICKS } from "./bt/bt_runner.ts";
export type {
  AutomationStatus,
  AutomationVersion,
  BtRunnerOptions,
  TickScheduler,
} from "./bt/bt_runner.ts";
export type { BtQuality, BtServices, ReadFileFn } from "./bt/services.ts";
export type { NodeStatus } from "./bt/tree_node.ts";
export { NODE_SPECS } from "./bt/node_registry.ts";
export type { NodeSpec } from "./bt/node_registry.ts";
export { parseCallArgs, SERVICE_CONTEXT_KEY } from "./bt/custom_nodes.ts";
export { AutomationEngine } from "./automation_engine.ts";
export type {
  AutomationEngineOptions,
  AutomationInventory,
  AutomationModes,
  DeviceOutage,
  EngineStatus,
} from "./automation_engine.ts";
export { DEVICE_OUTAGE_FAILURES } from "./automation_engine.ts";
export { DeviceLossLatch } from "./device_loss_latch.ts";
export { literalDeviceHandles } from "./bt/device_handles.ts";
