/** The node types the engine knows: BT.CPP v4 built-ins and the anolis custom nodes. */
import {
  FallbackNode,
  IfThenElseNode,
  ParallelNode,
  ReactiveNode,
  SequenceNode,
  WhileDoElseNode,
} from "./control_nodes.ts";
import {
  BUILD_ARGS_SLOTS,
  BuildArgsJsonNode,
  CallDeviceNode,
  CheckBoolNode,
  CheckQualityNode,
  EmitOnChangeOrIntervalNode,
  GetParameterNode,
  PeriodicPulseWindowNode,
  ReadSignalNode,
} from "./custom_nodes.ts";
import {
  DelayNode,
  ForceStatusNode,
  InverterNode,
  KeepRunningUntilFailureNode,
  LoopNode,
  PreconditionNode,
  RunOnceNode,
  SubTreeNode,
  TimeoutNode,
} from "./decorator_nodes.ts";
import { ConstantNode, ScriptNode, SetBlackboardNode, SleepNode } from "./leaf_nodes.ts";
import type { PortSpec } from "./ports.ts";
import type { NodeInit, TreeNode } from "./tree_node.ts";

/** Kind of node: decides the allowed number of children. */
export type NodeCategory = "control" | "decorator" | "action" | "condition" | "subtree";

/** A registered node type: its ports, child count bounds and factory. */
export interface NodeSpec {
  readonly type: string;
  readonly category: NodeCategory;
  readonly ports: readonly PortSpec[];
  readonly minChildren: number;
  readonly maxChildren: number;
  /** Services-dependent custom node (FAILURE when the services are out of reach). */
  readonly needsServices?: boolean;
  readonly create: (init: NodeInit) => TreeNode;
}

const inStr = (name: string, extra: Partial<PortSpec> = {}): PortSpec => ({
  name,
  direction: "input",
  type: "string",
  ...extra,
});
const input = (name: string, type: PortSpec["type"], extra: Partial<PortSpec> = {}): PortSpec => ({
  name,
  direction: "input",
  type,
  ...extra,
});
const output = (name: string, type: PortSpec["type"]): PortSpec => ({
  name,
  direction: "output",
  type,
});

function control(
  type: string,
  create: (init: NodeInit) => TreeNode,
  ports: PortSpec[] = [],
  max = Infinity,
  min = 1,
): NodeSpec {
  return { type, category: "control", ports, minChildren: min, maxChildren: max, create };
}

function decorator(
  type: string,
  create: (init: NodeInit) => TreeNode,
  ports: PortSpec[] = [],
): NodeSpec {
  return { type, category: "decorator", ports, minChildren: 1, maxChildren: 1, create };
}

function leaf(
  type: string,
  category: "action" | "condition",
  create: (init: NodeInit) => TreeNode,
  ports: PortSpec[] = [],
  needsServices = false,
): NodeSpec {
  return { type, category, ports, minChildren: 0, maxChildren: 0, create, needsServices };
}

const buildArgsPorts: PortSpec[] = [];
for (let i = 1; i <= BUILD_ARGS_SLOTS; i++) {
  buildArgsPorts.push(
    inStr(`arg${i}_name`, { defaultValue: "" }),
    inStr(`arg${i}_type`, { defaultValue: "" }),
    input(`arg${i}_num`, "double"),
    input(`arg${i}_bool`, "bool"),
    inStr(`arg${i}_str`),
  );
}
buildArgsPorts.push(output("json", "string"));

const SPECS: NodeSpec[] = [
  control("Sequence", (i) => new SequenceNode(i, false)),
  control("SequenceWithMemory", (i) => new SequenceNode(i, true)),
  control("ReactiveSequence", (i) => new ReactiveNode(i, false)),
  control("Fallback", (i) => new FallbackNode(i)),
  control("ReactiveFallback", (i) => new ReactiveNode(i, true)),
  control("Parallel", (i) => new ParallelNode(i), [
    input("success_count", "int64", { defaultValue: "-1" }),
    input("failure_count", "int64", { defaultValue: "1" }),
  ]),
  control("IfThenElse", (i) => new IfThenElseNode(i), [], 3, 2),
  control("WhileDoElse", (i) => new WhileDoElseNode(i), [], 3, 2),
  decorator("Inverter", (i) => new InverterNode(i)),
  decorator("ForceSuccess", (i) => new ForceStatusNode(i, "SUCCESS")),
  decorator("ForceFailure", (i) => new ForceStatusNode(i, "FAILURE")),
  decorator("Repeat", (i) => new LoopNode(i, false), [
    input("num_cycles", "int64", { required: true }),
  ]),
  decorator("RetryUntilSuccessful", (i) => new LoopNode(i, true), [
    input("num_attempts", "int64", { required: true }),
  ]),
  decorator("KeepRunningUntilFailure", (i) => new KeepRunningUntilFailureNode(i)),
  decorator("Delay", (i) => new DelayNode(i), [
    input("delay_msec", "int64", { required: true, nonNegative: true }),
  ]),
  decorator("Timeout", (i) => new TimeoutNode(i), [
    input("msec", "int64", { required: true, nonNegative: true }),
  ]),
  decorator("RunOnce", (i) => new RunOnceNode(i), [
    input("then_skip", "bool", { defaultValue: "true" }),
  ]),
  decorator("Precondition", (i) => new PreconditionNode(i), [
    input("if", "script", { required: true }),
    input("else", "status", { defaultValue: "FAILURE" }),
  ]),
  leaf("AlwaysSuccess", "action", (i) => new ConstantNode(i, "SUCCESS")),
  leaf("AlwaysFailure", "action", (i) => new ConstantNode(i, "FAILURE")),
  leaf("Sleep", "action", (i) => new SleepNode(i), [
    input("msec", "int64", { required: true, nonNegative: true }),
  ]),
  leaf("SetBlackboard", "action", (i) => new SetBlackboardNode(i), [
    input("value", "any", { required: true }),
    { name: "output_key", direction: "inout", type: "any", required: true },
  ]),
  leaf("Script", "action", (i) => new ScriptNode(i, false), [
    input("code", "script", { required: true }),
  ]),
  leaf("ScriptCondition", "condition", (i) => new ScriptNode(i, true), [
    input("code", "script", { required: true }),
  ]),
  leaf("ReadSignal", "action", (i) => new ReadSignalNode(i), [
    inStr("device_handle", { required: true }),
    inStr("signal_id", { required: true }),
    // Weakly typed: a double, or the string of a string signal (the entry takes either).
    output("value", "any"),
    output("quality", "string"),
  ], true),
  leaf("CheckQuality", "condition", (i) => new CheckQualityNode(i), [
    inStr("device_handle", { required: true }),
    inStr("signal_id", { required: true }),
    inStr("expected_quality", { defaultValue: "OK" }),
  ], true),
  leaf("CallDevice", "action", (i) => new CallDeviceNode(i), [
    inStr("device_handle", { required: true }),
    inStr("function_name", { required: true }),
    inStr("args", { defaultValue: "{}" }),
    inStr("reason"),
    output("success", "bool"),
    output("error", "string"),
  ], true),
  leaf("GetParameter", "action", (i) => new GetParameterNode(i, "number"), [
    inStr("param", { required: true }),
    output("value", "double"),
  ], true),
  leaf("GetParameterBool", "action", (i) => new GetParameterNode(i, "bool"), [
    inStr("param", { required: true }),
    output("value", "bool"),
  ], true),
  leaf("GetParameterInt64", "action", (i) => new GetParameterNode(i, "int64"), [
    inStr("param", { required: true }),
    output("value", "int64"),
  ], true),
  leaf("CheckBool", "condition", (i) => new CheckBoolNode(i), [
    input("value", "bool", { required: true }),
    input("expected", "bool", { defaultValue: "true" }),
  ]),
  leaf("PeriodicPulseWindow", "action", (i) => new PeriodicPulseWindowNode(i), [
    input("enabled", "bool", { defaultValue: "true" }),
    input("startup_delay_s", "int64", { defaultValue: "0" }),
    input("interval_s", "int64", { defaultValue: "60" }),
    input("pulse_s", "int64", { defaultValue: "1" }),
    input("max_pulses_per_hour", "int64", { defaultValue: "0" }),
    input("now_ms", "int64"),
    output("active", "bool"),
    output("pulse_index", "int64"),
    output("elapsed_ms", "int64"),
  ]),
  leaf("EmitOnChangeOrInterval", "action", (i) => new EmitOnChangeOrIntervalNode(i), [
    inStr("key", { required: true }),
    input("keepalive_s", "int64", { defaultValue: "30" }),
    input("min_spacing_ms", "int64", { defaultValue: "0" }),
    input("force", "bool", { defaultValue: "false" }),
    input("now_ms", "int64"),
    output("emit", "bool"),
    output("reason", "string"),
  ]),
  leaf("BuildArgsJson", "action", (i) => new BuildArgsJsonNode(i), buildArgsPorts),
  {
    type: "SubTree",
    category: "subtree",
    ports: [],
    minChildren: 0,
    maxChildren: 0,
    create: (i) => new SubTreeNode(i),
  },
];

/** Every registered node type by name. */
export const NODE_SPECS: ReadonlyMap<string, NodeSpec> = new Map(SPECS.map((s) => [s.type, s]));

/** XML wrapper elements of BT.CPP v3 style (`<Action ID="X"/>`), still accepted by v4. */
export const GENERIC_NODE_ELEMENTS = new Set(["Action", "Condition", "Control", "Decorator"]);
