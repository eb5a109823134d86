/**
 * Test doubles for the behavior-tree engine: a manual clock, an in-memory BtServices (a stand-in
 * for the state cache/call router until the runtime is wired), in-memory files and a scriptable
 * stub leaf for control-node tables.
 */
import type { Clock, TypedValue } from "../../../src/common/mod.ts";
import { RuntimeError } from "../../../src/common/mod.ts";
import type { Diagnostic } from "../../../src/config/mod.ts";
import {
  type BtQuality,
  type BtServices,
  buildTree,
  type BuiltTree,
  NODE_SPECS,
  type NodeSpec,
  type NodeStatus,
  parseBehaviorTree,
  type ReadFileFn,
  verifyParsedTree,
} from "../../../src/automation/bt/mod.ts";
import { TreeNode } from "../../../src/automation/bt/tree_node.ts";
import { realClearTimer, realSetTimer } from "../../helpers/clock.ts";

/** Clock moved by hand. */
export class ManualClock implements Clock {
  mono = 1_000;
  wall = 1_700_000_000_000;
  nowMs(): number {
    return this.wall;
  }
  monoMs(): number {
    return this.mono;
  }
  advance(ms: number): void {
    this.mono += ms;
    this.wall += ms;
  }
  /** Timers run for real (the runner's tick grid is counted by the timer ledger). */
  setTimer = realSetTimer;
  clearTimer = realClearTimer;
}

/** One recorded CallDevice invocation with controls to settle it. */
export interface RecordedCall {
  handle: string;
  fn: string;
  args: Record<string, TypedValue>;
  signal: AbortSignal;
  resolve(): void;
  reject(err: unknown): void;
}

/** In-memory BtServices: signals and parameters set by the test, calls recorded and held. */
export class FakeServices implements BtServices {
  readonly clock = new ManualClock();
  readonly signals = new Map<string, { value: TypedValue | null; quality: BtQuality }>();
  readonly params = new Map<
    string,
    { type: "double" | "int64" | "bool" | "string"; value: number | boolean | string }
  >();
  readonly calls: RecordedCall[] = [];
  /** When set, calls settle immediately with this outcome instead of being held. */
  autoSettle: "resolve" | Error | undefined;

  setSignal(
    handle: string,
    signal: string,
    value: TypedValue | null,
    quality: BtQuality = "OK",
  ): void {
    this.signals.set(`${handle}|${signal}`, { value, quality });
  }

  readSignal(handle: string, signal: string) {
    return this.signals.get(`${handle}|${signal}`) ?? null;
  }

  getParameter(name: string) {
    return this.params.get(name) ?? null;
  }

  callDevice(
    handle: string,
    fn: string,
    args: Record<string, TypedValue>,
    signal: AbortSignal,
  ): Promise<void> {
    if (this.autoSettle === "resolve") {
      this.calls.push({ handle, fn, args, signal, resolve() {}, reject() {} });
      return Promise.resolve();
    }
    if (this.autoSettle instanceof Error) {
      this.calls.push({ handle, fn, args, signal, resolve() {}, reject() {} });
      return Promise.reject(this.autoSettle);
    }
    return new Promise<void>((resolve, reject) => {
      const rec: RecordedCall = { handle, fn, args, signal, resolve, reject };
      signal.addEventListener("abort", () => reject(new RuntimeError("UNAVAILABLE", "aborted")));
      this.calls.push(rec);
    });
  }
}

/** Lets pending promise callbacks run (a settled call is seen by the next tick). */
export async function flush(): Promise<void> {
  for (let i = 0; i < 3; i++) await Promise.resolve();
}

/** ReadFileFn over a map of absolute path -> text; unknown paths throw like a missing file. */
export function memFiles(files: Record<string, string>): ReadFileFn {
  return (path) => {
    const text = files[path];
    if (text === undefined) throw new Error(`No such file: ${path}`);
    return text;
  };
}

/** Wraps tree XML in a v4 <root>. */
export function xmlRoot(body: string, main?: string): string {
  const attr = main ? ` main_tree_to_execute="${main}"` : "";
  return `<root BTCPP_format="4"${attr}>\n${body}\n</root>\n`;
}

/** Shared log and behaviour table of the Stub test leaf. */
export class StubWorld {
  readonly log: string[] = [];
  readonly plans = new Map<string, NodeStatus[]>();
  /** Statuses returned by stub `id`, one per tick; the last one repeats. */
  plan(id: string, ...statuses: NodeStatus[]): void {
    this.plans.set(id, statuses);
  }
  next(id: string): NodeStatus {
    const p = this.plans.get(id) ?? ["SUCCESS"];
    return p.length > 1 ? p.shift()! : p[0]!;
  }
}

class StubNode extends TreeNode {
  constructor(init: ConstructorParameters<typeof TreeNode>[0], readonly world: StubWorld) {
    super(init);
  }
  get id(): string {
    return this.init.ports.get("id") ?? "?";
  }
  protected override tick(): NodeStatus {
    this.world.log.push(`tick ${this.id}`);
    return this.world.next(this.id);
  }
  override halt(): void {
    this.world.log.push(`halt ${this.id}`);
    super.halt();
  }
}

/** The built-in registry plus `<Stub id="x"/>`. */
export function registryWithStub(world: StubWorld): Map<string, NodeSpec> {
  const reg = new Map(NODE_SPECS);
  reg.set("Stub", {
    type: "Stub",
    category: "action",
    ports: [{ name: "id", direction: "input", type: "string", required: true }],
    minChildren: 0,
    maxChildren: 0,
    create: (init) => new StubNode(init, world),
  });
  return reg;
}

/** Parses, verifies and builds XML; fails the test on any error diagnostic. */
export function buildXml(
  xml: string,
  options: { services?: FakeServices | undefined; world?: StubWorld; clock?: Clock } = {},
): BuiltTree {
  const path = "/bt/main.xml";
  const registry = options.world ? registryWithStub(options.world) : NODE_SPECS;
  const { parsed, diagnostics } = parseBehaviorTree(path, memFiles({ [path]: xml }));
  const all: Diagnostic[] = [...diagnostics];
  if (parsed) all.push(...verifyParsedTree(parsed, registry));
  const errors = all.filter((d) => d.severity === "error");
  if (!parsed || errors.length > 0) {
    throw new Error(`tree has errors: ${errors.map((d) => `${d.line}: ${d.message}`).join("; ")}`);
  }
  const clock = options.clock ?? options.services?.clock ?? new ManualClock();
  const built = buildTree(parsed, { clock, services: options.services, registry });
  if (!built.tree) {
    throw new Error(`build failed: ${built.diagnostics.map((d) => d.message).join("; ")}`);
  }
  return built.tree;
}

/** Ticks n times and returns the statuses. */
export function tickN(tree: BuiltTree, n: number): NodeStatus[] {
  const out: NodeStatus[] = [];
  for (let i = 0; i < n; i++) out.push(tree.tickRoot());
  return out;
}
