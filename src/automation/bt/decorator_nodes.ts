/** BehaviorTree.CPP v4 decorators. Time-based ones poll the injected monotonic clock. */
import { quoteProviderText } from "../../common/mod.ts";
import { runScript, type ScriptProgram, scriptTruthy } from "./script.ts";
import { BtLogicError, DecoratorNode, type NodeInit, type NodeStatus } from "./tree_node.ts";
import { parseScript } from "./script.ts";
import { STATUS_NAMES } from "./ports.ts";

function completed(s: NodeStatus): boolean {
  return s === "SUCCESS" || s === "FAILURE";
}

/** Inverter: SUCCESS <-> FAILURE; RUNNING and SKIPPED pass through. */
export class InverterNode extends DecoratorNode {
  protected override tick(): NodeStatus {
    this.status = "RUNNING";
    const s = this.child.executeTick();
    if (s === "SUCCESS" || s === "FAILURE") {
      this.resetChild();
      return s === "SUCCESS" ? "FAILURE" : "SUCCESS";
    }
    return s;
  }
}

/** ForceSuccess / ForceFailure: a completed child becomes the forced status. */
export class ForceStatusNode extends DecoratorNode {
  constructor(init: NodeInit, readonly forced: "SUCCESS" | "FAILURE") {
    super(init);
  }

  protected override tick(): NodeStatus {
    this.status = "RUNNING";
    const s = this.child.executeTick();
    if (completed(s)) {
      this.resetChild();
      return this.forced;
    }
    return s;
  }
}

/**
 * Repeat (num_cycles, -1 = forever) and RetryUntilSuccessful (num_attempts, -1 = forever).
 * Like BT.CPP with a wake-up signal, a synchronous child completes one cycle per tick (the node
 * returns RUNNING between cycles), so `num_cycles="-1"` never spins inside one tick.
 */
export class LoopNode extends DecoratorNode {
  #count = 0;
  constructor(init: NodeInit, readonly retry: boolean) {
    super(init);
  }

  protected override tick(): NodeStatus {
    const port = this.retry ? "num_attempts" : "num_cycles";
    let limit = this.requireInt(port);
    // "again" is the child status that continues the loop; the other one ends it.
    const again: NodeStatus = this.retry ? "FAILURE" : "SUCCESS";
    let loop = this.#count < limit || limit === -1;
    this.status = "RUNNING";
    while (loop) {
      const prev = this.child.status;
      const s = this.child.executeTick();
      if (s === "RUNNING") return "RUNNING";
      if (s === "SKIPPED") {
        if (this.retry) this.resetChild();
        return "SKIPPED";
      }
      if (s === "IDLE") throw new BtLogicError(`${this.path}: a child should not return IDLE`);
      if (s !== again) {
        this.#count = 0;
        this.resetChild();
        return s;
      }
      this.#count++;
      if (this.retry) {
        // BT.CPP re-reads num_attempts here in case a child changed it.
        const r = this.getInt(port);
        if (r.ok) limit = r.value;
      }
      loop = this.#count < limit || limit === -1;
      this.resetChild();
      if (prev === "IDLE" && loop) return "RUNNING";
    }
    this.#count = 0;
    return this.retry ? "FAILURE" : "SUCCESS";
  }

  override halt(): void {
    this.#count = 0;
    super.halt();
  }
}

/** KeepRunningUntilFailure: child SUCCESS -> RUNNING (and reset), FAILURE -> FAILURE. */
export class KeepRunningUntilFailureNode extends DecoratorNode {
  protected override tick(): NodeStatus {
    this.status = "RUNNING";
    const s = this.child.executeTick();
    if (s === "FAILURE") {
      this.resetChild();
      return "FAILURE";
    }
    if (s === "SUCCESS") this.resetChild();
    return "RUNNING";
  }
}

/** Delay (delay_msec): RUNNING until the delay elapsed, then ticks the child. */
export class DelayNode extends DecoratorNode {
  #deadline: number | undefined;

  protected override tick(): NodeStatus {
    if (this.#deadline === undefined) {
      const ms = this.requireInt("delay_msec");
      this.#deadline = this.env.clock.monoMs() + Math.max(0, ms);
      this.status = "RUNNING";
    }
    if (this.env.clock.monoMs() < this.#deadline) return "RUNNING";
    const s = this.child.executeTick();
    if (completed(s)) {
      this.#deadline = undefined;
      this.resetChild();
    }
    return s;
  }

  override halt(): void {
    this.#deadline = undefined;
    super.halt();
  }
}

/** Timeout (msec): halts a child still RUNNING after msec and returns FAILURE. */
export class TimeoutNode extends DecoratorNode {
  #deadline: number | undefined;

  protected override tick(): NodeStatus {
    if (this.#deadline === undefined) {
      const ms = this.requireInt("msec");
      // msec 0 disables the timeout, as in BT.CPP (no timer is started).
      this.#deadline = ms > 0 ? this.env.clock.monoMs() + ms : Infinity;
      this.status = "RUNNING";
    } else if (this.env.clock.monoMs() >= this.#deadline && this.child.status === "RUNNING") {
      this.#deadline = undefined;
      this.resetChild();
      return "FAILURE";
    }
    const s = this.child.executeTick();
    if (completed(s)) {
      this.#deadline = undefined;
      this.resetChild();
    }
    return s;
  }

  override halt(): void {
    this.#deadline = undefined;
    super.halt();
  }
}

/** RunOnce (then_skip=true): runs the child to completion once, then SKIPPED (or its result). */
export class RunOnceNode extends DecoratorNode {
  #done: NodeStatus | undefined;

  protected override tick(): NodeStatus {
    const skipPort = this.getBool("then_skip");
    const skip = skipPort.ok ? skipPort.value : true;
    if (this.#done) return skip ? "SKIPPED" : this.#done;
    this.status = "RUNNING";
    const s = this.child.executeTick();
    if (completed(s)) {
      this.#done = s;
      this.resetChild();
    }
    return s;
  }
}

/**
 * Precondition (if, else=FAILURE): ticks the child while the `if` script is true (checked only
 * before the child starts), else returns `else`.
 */
export class PreconditionNode extends DecoratorNode {
  #running = false;
  #program: ScriptProgram | undefined;

  protected override tick(): NodeStatus {
    const code = this.getString("if");
    if (!code.ok) throw new BtLogicError(`Precondition: ${code.error}`);
    if (this.#program?.source !== code.value) this.#program = parseScript(code.value);
    const elseStatus = this.getString("else");
    if (!elseStatus.ok) throw new BtLogicError(`Precondition: ${elseStatus.error}`);
    if (this.#running || scriptTruthy(runScript(this.#program, this.blackboard))) {
      const s = this.child.executeTick();
      if (completed(s)) {
        this.resetChild();
        this.#running = false;
      } else {
        this.#running = s === "RUNNING";
      }
      return s;
    }
    const e = elseStatus.value.trim() as NodeStatus;
    // A literal is checked at load (checkPortValue); one read from the blackboard here.
    if (!(STATUS_NAMES as readonly string[]).includes(e)) {
      // A blackboard string (any length, any character): cut and quoted.
      throw new BtLogicError(
        `Precondition: 'else' must be a node status, not ${quoteProviderText(e)}`,
      );
    }
    return e;
  }

  override halt(): void {
    this.#running = false;
    super.halt();
  }
}

/** SubTree: a decorator over the referenced tree's root, with its own blackboard scope. */
export class SubTreeNode extends DecoratorNode {
  protected override tick(): NodeStatus {
    if (this.status === "IDLE") this.status = "RUNNING";
    const s = this.child.executeTick();
    if (completed(s)) this.resetChild();
    return s;
  }
}
