/** BehaviorTree.CPP v4 control nodes, ported rule for rule (see each class). */
import { BtLogicError, ControlNode, type NodeStatus } from "./tree_node.ts";

function idleChild(node: ControlNode): never {
  throw new BtLogicError(`${node.path}: a child should not return IDLE`);
}

/**
 * Sequence: ticks children in order; RUNNING keeps the position (earlier children are not
 * re-ticked); FAILURE resets everything; SKIPPED children count as done.
 * SequenceWithMemory: like Sequence but a FAILURE keeps the position, so the next tick resumes at
 * the failed child.
 */
export class SequenceNode extends ControlNode {
  #current = 0;
  #skipped = 0;
  constructor(init: ConstructorParameters<typeof ControlNode>[0], readonly memory: boolean) {
    super(init);
  }

  protected override tick(): NodeStatus {
    const n = this.children.length;
    if (this.status !== "RUNNING") this.#skipped = 0;
    this.status = "RUNNING";
    while (this.#current < n) {
      const s = this.children[this.#current]!.executeTick();
      switch (s) {
        case "RUNNING":
          return "RUNNING";
        case "FAILURE":
          if (this.memory) {
            for (let i = this.#current; i < n; i++) this.haltChild(i);
          } else {
            this.resetChildren();
            this.#current = 0;
          }
          return "FAILURE";
        case "SUCCESS":
          this.#current++;
          break;
        case "SKIPPED":
          this.#current++;
          this.#skipped++;
          break;
        case "IDLE":
          idleChild(this);
      }
    }
    const allSkipped = this.#skipped === n;
    if (this.#current === n) {
      this.resetChildren();
      this.#current = 0;
      this.#skipped = 0;
    }
    return allSkipped ? "SKIPPED" : "SUCCESS";
  }

  override halt(): void {
    // BT.CPP's SequenceWithMemory keeps its position across a halt; Sequence restarts.
    if (!this.memory) this.#current = 0;
    this.#skipped = 0;
    super.halt();
  }
}

/**
 * Fallback: ticks children in order until one succeeds; RUNNING keeps the position; all FAILURE
 * -> FAILURE.
 */
export class FallbackNode extends ControlNode {
  #current = 0;
  #skipped = 0;

  protected override tick(): NodeStatus {
    const n = this.children.length;
    if (this.status !== "RUNNING") this.#skipped = 0;
    this.status = "RUNNING";
    while (this.#current < n) {
      const s = this.children[this.#current]!.executeTick();
      switch (s) {
        case "RUNNING":
          return "RUNNING";
        case "SUCCESS":
          this.resetChildren();
          this.#current = 0;
          return "SUCCESS";
        case "FAILURE":
          this.#current++;
          break;
        case "SKIPPED":
          this.#current++;
          this.#skipped++;
          break;
        case "IDLE":
          idleChild(this);
      }
    }
    const allSkipped = this.#skipped === n;
    if (this.#current === n) {
      this.resetChildren();
      this.#current = 0;
      this.#skipped = 0;
    }
    return allSkipped ? "SKIPPED" : "FAILURE";
  }

  override halt(): void {
    this.#current = 0;
    this.#skipped = 0;
    super.halt();
  }
}

/**
 * ReactiveSequence / ReactiveFallback: every tick starts again from the first child; a RUNNING
 * child halts all the others (so a condition turning false halts the running action).
 */
export class ReactiveNode extends ControlNode {
  constructor(init: ConstructorParameters<typeof ControlNode>[0], readonly fallback: boolean) {
    super(init);
  }

  protected override tick(): NodeStatus {
    let allSkipped = true;
    this.status = "RUNNING";
    const stop: NodeStatus = this.fallback ? "SUCCESS" : "FAILURE";
    for (let i = 0; i < this.children.length; i++) {
      const s = this.children[i]!.executeTick();
      allSkipped &&= s === "SKIPPED";
      switch (s) {
        case "RUNNING":
          for (let j = 0; j < this.children.length; j++) if (j !== i) this.haltChild(j);
          return "RUNNING";
        case "SKIPPED":
          this.haltChild(i);
          break;
        case "IDLE":
          idleChild(this);
          break;
        default:
          if (s === stop) {
            this.resetChildren();
            return s;
          }
      }
    }
    this.resetChildren();
    if (allSkipped) return "SKIPPED";
    return this.fallback ? "FAILURE" : "SUCCESS";
  }
}

/**
 * Parallel: ticks every not-yet-completed child each tick. SUCCESS once success_count children
 * succeeded; FAILURE once failure_count failed or success became impossible. Negative thresholds
 * count from the number of children (-1 = all).
 */
export class ParallelNode extends ControlNode {
  readonly #completed = new Set<number>();
  #successes = 0;
  #failures = 0;

  #threshold(t: number): number {
    return t < 0 ? Math.max(this.children.length + t + 1, 0) : t;
  }

  protected override tick(): NodeStatus {
    const successSetting = this.requireInt("success_count");
    const failureSetting = this.requireInt("failure_count");
    const n = this.children.length;
    const needSuccess = this.#threshold(successSetting);
    const needFailure = this.#threshold(failureSetting);
    if (n < needSuccess) {
      throw new BtLogicError(
        `${this.path}: ${n} children but success_count ${successSetting}: can never succeed`,
      );
    }
    if (n < needFailure) {
      throw new BtLogicError(
        `${this.path}: ${n} children but failure_count ${failureSetting}: can never fail`,
      );
    }
    this.status = "RUNNING";
    let skipped = 0;
    for (let i = 0; i < n; i++) {
      if (!this.#completed.has(i)) {
        const s = this.children[i]!.executeTick();
        switch (s) {
          case "SKIPPED":
            skipped++;
            break;
          case "SUCCESS":
            this.#completed.add(i);
            this.#successes++;
            break;
          case "FAILURE":
            this.#completed.add(i);
            this.#failures++;
            break;
          case "RUNNING":
            break;
          case "IDLE":
            idleChild(this);
        }
      }
      if (
        this.#successes >= needSuccess ||
        (successSetting < 0 && this.#successes + skipped >= needSuccess)
      ) {
        this.#clear();
        this.resetChildren();
        return "SUCCESS";
      }
      if (n - this.#failures < needSuccess || this.#failures === needFailure) {
        this.#clear();
        this.resetChildren();
        return "FAILURE";
      }
    }
    return skipped === n ? "SKIPPED" : "RUNNING";
  }

  #clear(): void {
    this.#completed.clear();
    this.#successes = 0;
    this.#failures = 0;
  }

  override halt(): void {
    this.#clear();
    super.halt();
  }
}

/**
 * IfThenElse: child 0 is the condition (ticked once per branch run), then child 1 on SUCCESS or
 * child 2 on FAILURE (FAILURE without a third child). The chosen branch keeps running. A failed
 * condition without a third child is reset at once (BT.CPP leaves it FAILURE, and a stateful
 * condition -- a CallDevice -- then answers FAILURE at every later run without calling).
 */
export class IfThenElseNode extends ControlNode {
  #branch = 0;

  protected override tick(): NodeStatus {
    const n = this.children.length;
    this.status = "RUNNING";
    if (this.#branch === 0) {
      const c = this.children[0]!.executeTick();
      if (c === "RUNNING") return "RUNNING";
      if (c === "SKIPPED") return "SKIPPED";
      if (c === "SUCCESS") this.#branch = 1;
      else if (n === 3) this.#branch = 2;
      else {
        this.resetChildren();
        return "FAILURE";
      }
    }
    const s = this.children[this.#branch]!.executeTick();
    if (s === "RUNNING") return "RUNNING";
    this.resetChildren();
    this.#branch = 0;
    return s;
  }

  override halt(): void {
    this.#branch = 0;
    super.halt();
  }
}

/**
 * WhileDoElse: reactive if/else. The condition is ticked every tick; when it flips, the other
 * branch is halted.
 */
export class WhileDoElseNode extends ControlNode {
  protected override tick(): NodeStatus {
    const n = this.children.length;
    this.status = "RUNNING";
    const c = this.children[0]!.executeTick();
    if (c === "RUNNING") return "RUNNING";
    let s: NodeStatus;
    if (c === "SUCCESS") {
      if (n === 3) this.haltChild(2);
      s = this.children[1]!.executeTick();
    } else if (c === "FAILURE") {
      this.haltChild(1);
      s = n === 3 ? this.children[2]!.executeTick() : "FAILURE";
    } else {
      s = c;
    }
    if (s === "RUNNING") return "RUNNING";
    this.resetChildren();
    return s;
  }
}
