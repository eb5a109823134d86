/**
 * The behavior-tree engine (parse -> verify -> build -> tick). Loaded on demand: the automation
 * engine imports it when it loads a tree, and `--check-config` when the configuration names one,
 * so a runtime without automation never loads it (nor its XML parser).
 */
export {
  loadBehaviorTree,
  readTreeFiles,
  readUnanswered,
  TreeChecks,
  type TreeCheckSteps,
  type TreeParse,
  verifyBehaviorTreeFile,
  verifyParsedTreeFile,
} from "./load.ts";
export type { ParsedTree, TreeDefinition } from "./parse.ts";
export { parseBehaviorTree } from "./parse.ts";
export { TREE_FILE_SHOWN_CHARS, TREE_READ_ERROR_SHOWN_CHARS } from "./diagnostics.ts";
export { MAX_TREE_DEPTH, verifyParsedTree } from "./verify.ts";
export {
  type DeclaredParameters,
  literalParameterReads,
  type ParameterRead,
  parameterReadProblems,
} from "./parameter_reads.ts";
export { buildTree } from "./build.ts";
export type { BuildOptions, BuiltTree } from "./build.ts";
export {
  BtRunner,
  computeAutomationVersion,
  computeTreeContentDigest,
  rereadContentDigest,
  STALL_FAILURE_TICKS,
} from "./bt_runner.ts";
export type {
  AutomationStatus,
  AutomationVersion,
  BtRunnerOptions,
  TickScheduler,
} from "./bt_runner.ts";
export type { BtQuality, BtServices, ReadFileAsyncFn, ReadFileFn } from "./services.ts";
export type { NodeStatus } from "./tree_node.ts";
export { NODE_SPECS } from "./node_registry.ts";
export type { NodeSpec } from "./node_registry.ts";
export { parseCallArgs } from "../call_args.ts";
export { blackboardWriters, type EntryWriter } from "./blackboard_writers.ts";
export { SERVICE_CONTEXT_KEY } from "./custom_nodes.ts";
export {
  type LiteralDeviceCall,
  literalDeviceCalls,
  literalDeviceHandles,
} from "./device_handles.ts";
