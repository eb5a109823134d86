/**
 * Node base classes with BehaviorTree.CPP v4 tick/halt semantics: executeTick() applies the
 * `_skipIf/_successIf/_failureIf/_while` pre-conditions and `_onSuccess/_onFailure/_post`
 * post-conditions around tick(); haltNode() halts and runs `_onHalted`; SKIPPED is returned to the
 * parent but the node keeps IDLE.
 */
import { type Clock, errorMessage, type Logger, quoteProviderText } from "../../common/mod.ts";
import { type BbValue, type Blackboard, convertValue, valueToString } from "./blackboard.ts";
import { bbTypeOfPort, blackboardKeyOf, literalValue, type PortSpec } from "./ports.ts";
import { runScript, type ScriptProgram, scriptTruthy } from "./script.ts";

/** Status of a node (BT.CPP v4 NodeStatus). */
export type NodeStatus = "IDLE" | "RUNNING" | "SUCCESS" | "FAILURE" | "SKIPPED";

/** Pre-condition attributes, in BT.CPP's evaluation order. */
export const PRE_CONDITIONS = ["_failureIf", "_successIf", "_skipIf", "_while"] as const;
/** Post-condition attributes. */
export const POST_CONDITIONS = ["_onSuccess", "_onFailure", "_post", "_onHalted"] as const;

/** State shared by all nodes of one tree instance during ticks. */
export interface TickEnv {
  readonly clock: Clock;
  readonly log?: Logger | undefined;
  /** Path of the last leaf that returned FAILURE in the current tick ("" if none). */
  lastFailedLeaf: string;
}

/** Everything a node instance is built from. */
export interface NodeInit {
  readonly type: string;
  /** Instance name: the `name` attribute, else the type. */
  readonly name: string;
  /** Node path, e.g. `Main/Sequence[0]/CallDevice[2]`. */
  readonly path: string;
  /** Where the node is written, `FILE:LINE:COL` (absent for a node built without a document). */
  readonly at?: string;
  /** Raw attribute values of declared ports (defaults not included). */
  readonly ports: ReadonlyMap<string, string>;
  readonly portSpecs: readonly PortSpec[];
  readonly blackboard: Blackboard;
  readonly env: TickEnv;
  readonly conditions: ReadonlyMap<string, ScriptProgram>;
}

/** An exception thrown while ticking, tagged with the path of the node where it happened. */
export class BtTickError extends Error {
  constructor(readonly nodePath: string, readonly original: unknown) {
    super(errorMessage(original));
    this.name = "BtTickError";
  }
}

/** Thrown for broken tree logic (a child returning IDLE, impossible thresholds). */
export class BtLogicError extends Error {
  constructor(message: string) {
    super(message);
    this.name = "BtLogicError";
  }
}

/** Result of reading an input port. */
export type InputResult<T> = { ok: true; value: T } | { ok: false; error: string };

/** Base of every node. */
export abstract class TreeNode {
  status: NodeStatus = "IDLE";
  readonly children: TreeNode[] = [];

  constructor(readonly init: NodeInit) {}

  get path(): string {
    return this.init.path;
  }

  get blackboard(): Blackboard {
    return this.init.blackboard;
  }

  get env(): TickEnv {
    return this.init.env;
  }

  /** The node's own behaviour for one tick. */
  protected abstract tick(): NodeStatus;

  /** Stops a RUNNING node and resets it to IDLE (controls/decorators halt their children). */
  halt(): void {
    this.resetStatus();
  }

  /** Back to IDLE without halting. */
  resetStatus(): void {
    this.status = "IDLE";
  }

  /** Halts and runs the `_onHalted` script. */
  haltNode(): void {
    this.halt();
    const onHalted = this.init.conditions.get("_onHalted");
    if (onHalted) runScript(onHalted, this.blackboard);
  }

  /** Ticks with pre/post-conditions; exceptions are tagged with the innermost node path. */
  executeTick(): NodeStatus {
    try {
      const pre = this.#checkPreConditions();
      const s = pre ?? this.tick();
      if (s === "IDLE") throw new BtLogicError(`node ${this.path} returned IDLE`);
      this.#checkPostConditions(s);
      // SKIPPED is the parent's to know; the node is (back to) IDLE: a control node that set
      // itself RUNNING to tick children that were all skipped ran nothing, nor runs now (status
      // current_running_node, and its own pre-conditions are evaluated again next tick).
      this.status = s === "SKIPPED" ? "IDLE" : s;
      if (s === "FAILURE" && this.children.length === 0) this.env.lastFailedLeaf = this.path;
      return s;
    } catch (err) {
      if (err instanceof BtTickError) throw err;
      throw new BtTickError(this.path, err);
    }
  }

  #checkPreConditions(): NodeStatus | undefined {
    const c = this.init.conditions;
    if (c.size === 0) return undefined;
    for (const kind of PRE_CONDITIONS) {
      const program = c.get(kind);
      if (!program) continue;
      if (this.status === "IDLE" || this.status === "SKIPPED") {
        const v = scriptTruthy(runScript(program, this.blackboard));
        if (v) {
          if (kind === "_failureIf") return "FAILURE";
          if (kind === "_successIf") return "SUCCESS";
          if (kind === "_skipIf") return "SKIPPED";
        } else if (kind === "_while") {
          return "SKIPPED";
        }
      } else if (this.status === "RUNNING" && kind === "_while") {
        if (!scriptTruthy(runScript(program, this.blackboard))) {
          this.haltNode();
          return "SKIPPED";
        }
      }
    }
    return undefined;
  }

  #checkPostConditions(s: NodeStatus): void {
    const c = this.init.conditions;
    if (c.size === 0) return;
    const run = (kind: string) => {
      const p = c.get(kind);
      if (p) runScript(p, this.blackboard);
    };
    if (s === "SUCCESS") run("_onSuccess");
    else if (s === "FAILURE") run("_onFailure");
    if (s === "SUCCESS" || s === "FAILURE") run("_post");
  }

  #spec(name: string): PortSpec {
    const spec = this.init.portSpecs.find((p) => p.name === name);
    if (!spec) throw new BtLogicError(`node type ${this.init.type} has no port '${name}'`);
    return spec;
  }

  /** True when the port has an attribute or a default. */
  hasPort(name: string): boolean {
    return this.init.ports.has(name) || this.#spec(name).defaultValue !== undefined;
  }

  /** Raw port text (attribute, else default), undefined if neither. */
  rawPort(name: string): string | undefined {
    return this.init.ports.get(name) ?? this.#spec(name).defaultValue;
  }

  /** Reads an input port as a value of the port's type (blackboard reference or literal). */
  getInputValue(name: string): InputResult<BbValue> {
    const spec = this.#spec(name);
    const raw = this.rawPort(name);
    if (raw === undefined) return { ok: false, error: `port '${name}' is not set` };
    const key = blackboardKeyOf(raw, name);
    const target = bbTypeOfPort(spec.type);
    if (key === undefined) {
      const v = literalValue(spec, raw);
      // The tree file's literal and key, an entry's value (a device's text): any length and any
      // character, cut and quoted, as config text is.
      if (!v) {
        return { ok: false, error: `port '${name}': invalid literal ${quoteProviderText(raw)}` };
      }
      return { ok: true, value: v };
    }
    const entry = this.blackboard.getEntry(key);
    const entryName = quoteProviderText(key);
    if (!entry) {
      return { ok: false, error: `port '${name}': blackboard entry ${entryName} not found` };
    }
    if (!entry.value) {
      return { ok: false, error: `port '${name}': blackboard entry ${entryName} has no value yet` };
    }
    const v = convertValue(entry.value, target);
    if (!v) {
      return {
        ok: false,
        error: `port '${name}': entry ${entryName} holds ${entry.value.type} ` +
          `${quoteProviderText(valueToString(entry.value))}, not convertible to ${target}`,
      };
    }
    return { ok: true, value: v };
  }

  /** Typed input readers. */
  getString(name: string): InputResult<string> {
    const r = this.getInputValue(name);
    if (!r.ok) return r;
    return { ok: true, value: valueToString(r.value) };
  }

  getNumber(name: string): InputResult<number> {
    const r = this.getInputValue(name);
    if (!r.ok) return r;
    const v = convertValue(r.value, "double");
    if (!v || v.type !== "double") return { ok: false, error: `port '${name}': not a number` };
    return { ok: true, value: v.value };
  }

  getInt(name: string): InputResult<number> {
    const r = this.getInputValue(name);
    if (!r.ok) return r;
    const v = convertValue(r.value, "int64");
    if (!v || v.type !== "int64") return { ok: false, error: `port '${name}': not an integer` };
    return { ok: true, value: v.value };
  }

  getBool(name: string): InputResult<boolean> {
    const r = this.getInputValue(name);
    if (!r.ok) return r;
    const v = convertValue(r.value, "bool");
    if (!v || v.type !== "bool") return { ok: false, error: `port '${name}': not a boolean` };
    return { ok: true, value: v.value };
  }

  /** Like getX, but throws (BT.CPP "Missing parameter [x]") instead of returning an error. */
  requireInt(name: string): number {
    const r = this.getInt(name);
    if (!r.ok) throw new BtLogicError(`${this.init.type}: ${r.error}`);
    return r.value;
  }

  /**
   * Writes an output port. Returns false when the port is not connected to a blackboard key
   * (absent, or a literal): BT.CPP's setOutput reports that as an error the nodes ignore.
   */
  setOutput(name: string, value: BbValue): boolean {
    const raw = this.init.ports.get(name);
    if (raw === undefined) return false;
    const key = blackboardKeyOf(raw, name);
    if (key === undefined) return false;
    this.blackboard.set(key, value);
    return true;
  }
}

/** Control node: halting resets every child (halting the RUNNING ones). */
export abstract class ControlNode extends TreeNode {
  /** Halts child i if RUNNING, then resets it to IDLE. */
  haltChild(i: number): void {
    const child = this.children[i];
    if (child!.status === "RUNNING") child!.haltNode();
    child!.resetStatus();
  }

  resetChildren(): void {
    for (let i = 0; i < this.children.length; i++) this.haltChild(i);
  }

  override halt(): void {
    this.resetChildren();
    this.resetStatus();
  }
}

/** Decorator: exactly one child. */
export abstract class DecoratorNode extends TreeNode {
  get child(): TreeNode {
    return this.children[0]!;
  }

  resetChild(): void {
    if (this.child.status === "RUNNING") this.child.haltNode();
    this.child.resetStatus();
  }

  override halt(): void {
    this.resetChild();
    this.resetStatus();
  }
}

/** Synchronous action/condition: returns SUCCESS or FAILURE in the same tick. */
export abstract class SyncActionNode extends TreeNode {
  protected override tick(): NodeStatus {
    const s = this.tickSync();
    if (s === "RUNNING") throw new BtLogicError(`synchronous node ${this.path} returned RUNNING`);
    return s;
  }

  protected abstract tickSync(): NodeStatus;
}

/** Action with onStart/onRunning/onHalted (BT.CPP StatefulActionNode). */
export abstract class StatefulActionNode extends TreeNode {
  protected override tick(): NodeStatus {
    if (this.status === "IDLE") return this.onStart();
    if (this.status === "RUNNING") return this.onRunning();
    return this.status;
  }

  protected abstract onStart(): NodeStatus;
  protected abstract onRunning(): NodeStatus;
  protected abstract onHalted(): void;

  override halt(): void {
    if (this.status === "RUNNING") this.onHalted();
    this.resetStatus();
  }
}
