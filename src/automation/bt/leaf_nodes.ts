/** BehaviorTree.CPP v4 built-in leaves. */
import { blackboardKeyOf } from "./ports.ts";
import { parseScript, runScript, type ScriptProgram, scriptTruthy } from "./script.ts";
import {
  BtLogicError,
  type NodeInit,
  type NodeStatus,
  StatefulActionNode,
  SyncActionNode,
} from "./tree_node.ts";

/** AlwaysSuccess / AlwaysFailure. */
export class ConstantNode extends SyncActionNode {
  constructor(init: NodeInit, readonly result: "SUCCESS" | "FAILURE") {
    super(init);
  }

  protected override tickSync(): NodeStatus {
    return this.result;
  }
}

/** Sleep (msec): RUNNING until msec elapsed on the monotonic clock; msec 0 succeeds at once. */
export class SleepNode extends StatefulActionNode {
  #deadline = 0;

  protected override onStart(): NodeStatus {
    const ms = this.requireInt("msec");
    if (ms <= 0) return "SUCCESS";
    this.#deadline = this.env.clock.monoMs() + ms;
    return "RUNNING";
  }

  protected override onRunning(): NodeStatus {
    return this.env.clock.monoMs() >= this.#deadline ? "SUCCESS" : "RUNNING";
  }

  protected override onHalted(): void {
    this.#deadline = 0;
  }
}

/**
 * SetBlackboard (value, output_key): copies a literal (stored as a string, converted on read like
 * BT.CPP) or another entry (`value="{src}"`) into the entry named by output_key. output_key is a
 * key name; `{key}` is accepted too.
 */
export class SetBlackboardNode extends SyncActionNode {
  protected override tickSync(): NodeStatus {
    const rawKey = this.rawPort("output_key");
    if (rawKey === undefined) throw new BtLogicError("SetBlackboard: missing port [output_key]");
    const outKey = blackboardKeyOf(rawKey, "output_key") ?? rawKey.trim();
    const rawValue = this.rawPort("value");
    if (rawValue === undefined) throw new BtLogicError("SetBlackboard: missing port [value]");
    const srcKey = blackboardKeyOf(rawValue, "value");
    if (srcKey !== undefined) {
      const src = this.blackboard.getEntry(srcKey);
      if (!src) throw new BtLogicError(`SetBlackboard: can't find the entry [${srcKey}]`);
      if (!src.value) return "FAILURE";
      if (!this.blackboard.getEntry(outKey)) this.blackboard.createEntry(outKey, src.declared);
      this.blackboard.set(outKey, src.value);
      return "SUCCESS";
    }
    this.blackboard.set(outKey, { type: "string", value: rawValue });
    return "SUCCESS";
  }
}

/** Script (code) always SUCCESS; ScriptCondition (code) SUCCESS when the result is true. */
export class ScriptNode extends SyncActionNode {
  #program: ScriptProgram | undefined;
  constructor(init: NodeInit, readonly condition: boolean) {
    super(init);
  }

  protected override tickSync(): NodeStatus {
    const code = this.getString("code");
    if (!code.ok) throw new BtLogicError(`${this.init.type}: ${code.error}`);
    // The code is usually a literal parsed once; a `{key}` code is re-parsed when it changes.
    if (this.#program?.source !== code.value) this.#program = parseScript(code.value);
    const v = runScript(this.#program, this.blackboard);
    if (!this.condition) return "SUCCESS";
    return scriptTruthy(v) ? "SUCCESS" : "FAILURE";
  }
}
