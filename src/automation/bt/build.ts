/**
 * Build step: instantiates the main tree (SubTrees expanded, each with its own blackboard scope),
 * declares the blackboard entry of every `{key}` port with the port's type (a conflicting type is a
 * load error, as in BT.CPP) and returns a tickable tree.
 */
import { type Clock, type Logger, quoteProviderText } from "../../common/mod.ts";
import type { Diagnostic } from "../../config/mod.ts";
import { type BbEntry, Blackboard } from "./blackboard.ts";
import { SERVICE_CONTEXT_KEY } from "./custom_nodes.ts";
import { errorAt, hasErrors, pathName, warningAt } from "./diagnostics.ts";
import { NODE_SPECS, type NodeSpec } from "./node_registry.ts";
import type { ParsedTree, TreeDefinition } from "./parse.ts";
import { bbTypeOfPort, blackboardKeyOf, NOT_A_SCALAR, subTreePortsOf } from "./ports.ts";
import { parseScript, type ScriptProgram } from "./script.ts";
import type { BtServices } from "./services.ts";
import {
  type NodeStatus,
  POST_CONDITIONS,
  PRE_CONDITIONS,
  type TickEnv,
  type TreeNode,
} from "./tree_node.ts";
import { nodeTypeOf, pathSegment } from "./verify.ts";
import type { XmlElement } from "./xml_document.ts";
import { parseScalar } from "./blackboard.ts";

/** What a built tree needs from the host. */
export interface BuildOptions {
  readonly clock: Clock;
  /** Runtime services for custom nodes; omitted for a check-only build. */
  readonly services?: BtServices | undefined;
  readonly log?: Logger | undefined;
  /** Node types (default: all built-ins); tests add their own. */
  readonly registry?: ReadonlyMap<string, NodeSpec>;
}

/** An instantiated, tickable tree. */
export interface BuiltTree {
  readonly root: TreeNode;
  /** The root blackboard scope. */
  readonly blackboard: Blackboard;
  readonly env: TickEnv;
  /** One tick of the root (BT.CPP tickOnce): a finished root is reset so it restarts next tick. */
  tickRoot(): NodeStatus;
  /**
   * Halts every RUNNING node (cancelling asynchronous actions) and resets every node to IDLE; an
   * _onHalted script that throws does not stop it (its first error is thrown at the end).
   */
  haltTree(): void;
  /** Path of the deepest RUNNING node, or null when nothing runs. */
  runningPath(): string | null;
}

const CONDITIONS: readonly string[] = [...PRE_CONDITIONS, ...POST_CONDITIONS];

/** The scalar types a literal must parse as for a typed port to read or write it (NOT_A_SCALAR). */
type ScalarType = "double" | "int64" | "bool";

/** A typed port naming a blackboard entry (what a SetBlackboard literal must parse as). */
interface TypedUse {
  readonly type: ScalarType;
  readonly port: string;
  readonly node: string;
  readonly at: string;
  readonly reads: boolean;
}

/**
 * A literal stored as text into an entry, converted where it is read: a SetBlackboard's value, or
 * a SubTree port's literal (the subtree instance's own entry of that name).
 */
interface LiteralWrite {
  readonly el: XmlElement;
  readonly path: string;
  /** The port the literal is written in: `value` of SetBlackboard, the SubTree port's name. */
  readonly port: string;
  readonly bb: Blackboard;
  readonly key: string;
  readonly literal: string;
}

/** Instantiates the main tree of a verified parse; type conflicts come back as diagnostics. */
export function buildTree(
  parsed: ParsedTree,
  options: BuildOptions,
): { tree?: BuiltTree; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const seen = new Set<string>();
  const report = (d: Diagnostic) => {
    // A SubTree used twice reports the same problem twice: keep one.
    const k = `${d.file}:${d.line}:${d.message}`;
    if (!seen.has(k)) {
      seen.add(k);
      diagnostics.push(d);
    }
  };
  const main = parsed.mainTreeId === undefined ? undefined : parsed.trees.get(parsed.mainTreeId);
  if (!main?.root) {
    return {
      diagnostics: [
        errorAt({ file: parsed.path, line: 0, column: 0 }, "", "no main tree to build"),
      ],
    };
  }
  const registry = options.registry ?? NODE_SPECS;
  const env: TickEnv = { clock: options.clock, log: options.log, lastFailedLeaf: "" };
  const rootBb = new Blackboard();
  // Always present (empty for a check-only build) so reachability from SubTrees can be checked.
  rootBb.createEntry(SERVICE_CONTEXT_KEY, "any");
  if (options.services) {
    rootBb.set(SERVICE_CONTEXT_KEY, { type: "object", value: options.services });
  }

  // Typed ports by the entry they name, and SetBlackboard and SubTree port literals: a literal no
  // typed port of its entry can convert faults the tick that stores or reads it (BT.CPP throws).
  const typedUses = new Map<BbEntry, TypedUse[]>();
  const literalWrites: LiteralWrite[] = [];

  const instantiate = (
    el: XmlElement,
    tree: TreeDefinition,
    bb: Blackboard,
    path: string,
  ): TreeNode | undefined => {
    const type = nodeTypeOf(el) ?? "";
    const spec = registry.get(type);
    if (!spec) {
      // The tree file's text (an element's name, a node's ID), any length: cut and quoted, as
      // config text is -- as are the blackboard keys, literals and SubTree port names below.
      report(errorAt(el, path, `unknown node type ${quoteProviderText(type)}`));
      return undefined;
    }
    const conditions = new Map<string, ScriptProgram>();
    for (const name of CONDITIONS) {
      const code = el.attributes.get(name);
      if (code !== undefined) conditions.set(name, parseScript(code));
    }
    const ports = new Map<string, string>();
    let nodeBb = bb;
    let children: XmlElement[] = el.children;
    let childTree = tree;
    let childBase = path;
    if (spec.category === "subtree") {
      const id = el.attributes.get("ID") ?? "";
      const target = parsed.trees.get(id);
      if (!target?.root) return undefined;
      const child = new Blackboard(bb);
      const { literals, remaps, autoremap } = subTreePortsOf(el.attributes);
      for (const [name, key] of remaps) child.addSubtreeRemapping(name, key);
      for (const [name, value] of literals) {
        // Set before auto-remapping is on, whatever the attribute order: the literal is this
        // instance's own entry (BT.CPP), not one of the parent every instance would share.
        child.set(name, { type: "string", value });
        literalWrites.push({ el, path, port: name, bb: child, key: name, literal: value });
      }
      child.enableAutoRemapping(autoremap);
      nodeBb = child;
      children = [target.root];
      childTree = target;
      childBase = `${path}/${pathName(id)}`;
    } else {
      for (const port of spec.ports) {
        const raw = el.attributes.get(port.name);
        if (raw === undefined) continue;
        ports.set(port.name, raw);
        const key = blackboardKeyOf(raw, port.name);
        if (type === "SetBlackboard" && port.name === "value" && key === undefined) {
          const out = el.attributes.get("output_key");
          const outKey = out === undefined ? undefined : blackboardKeyOf(out, "output_key") ??
            out.trim();
          if (outKey) {
            literalWrites.push({ el, path, port: "value", bb, key: outKey, literal: raw });
          }
        }
        if (key === undefined) continue;
        const declared = bbTypeOfPort(port.type);
        const { conflict } = bb.declare(key, declared, port.direction !== "input");
        const entry = bb.getEntry(key);
        if (entry && (declared === "double" || declared === "int64" || declared === "bool")) {
          const uses = typedUses.get(entry) ?? [];
          typedUses.set(entry, uses);
          uses.push({
            type: declared,
            port: port.name,
            node: spec.type,
            at: `${el.file}:${el.line}:${el.column}`,
            reads: port.direction === "input",
          });
        }
        if (conflict) {
          report(
            errorAt(
              el,
              path,
              `port type conflict: blackboard entry ${
                quoteProviderText(key)
              } was declared as ${conflict} ` +
                `and port '${port.name}' of ${spec.type} uses it as ${declared}`,
            ),
          );
        }
      }
      if (spec.needsServices && !bb.getEntry(SERVICE_CONTEXT_KEY)) {
        report(
          warningAt(
            el,
            path,
            `${spec.type} inside a SubTree without _autoremap="true" cannot reach the runtime ` +
              `services and will always return FAILURE`,
          ),
        );
      }
    }
    const node = spec.create({
      type,
      name: el.attributes.get("name") ?? type,
      path,
      at: `${el.file}:${el.line}:${el.column}`,
      ports,
      portSpecs: spec.ports,
      blackboard: nodeBb,
      env,
      conditions,
    });
    children.forEach((c, i) => {
      const childPath = childTree === tree
        ? `${path}/${pathSegment(c, i)}`
        : `${childBase}/${pathSegment(c, 0)}`;
      const built = instantiate(c, childTree, nodeBb, childPath);
      if (built) node.children.push(built);
    });
    return node;
  };

  const root = instantiate(
    main.root,
    main,
    rootBb,
    `${pathName(main.id)}/${pathSegment(main.root, 0)}`,
  );
  // Judged once every port is declared: a reader after the SetBlackboard counts as one before it.
  for (const w of literalWrites) {
    const entry = w.bb.getEntry(w.key);
    const use = entry && typedUses.get(entry)?.find((u) => !parseScalar(w.literal, u.type));
    if (!use) continue;
    report(
      errorAt(
        w.el,
        w.path,
        `port ${quoteProviderText(w.port)}: ${quoteProviderText(w.literal)} is not ${
          NOT_A_SCALAR[use.type]
        }, and blackboard entry ` +
          `${quoteProviderText(w.key)} is ${
            use.reads ? "read" : "written"
          } as ${use.type} by port ` +
          `'${use.port}' of ${use.node} at ${use.at} (the tick would throw converting it)`,
      ),
    );
  }
  if (!root || hasErrors(diagnostics)) return { diagnostics };
  return { tree: makeBuiltTree(root, rootBb, env), diagnostics };
}

function makeBuiltTree(root: TreeNode, blackboard: Blackboard, env: TickEnv): BuiltTree {
  // Every node still RUNNING is halted, not only those below a RUNNING root: a tick that threw
  // leaves them under an ancestor that never marked itself RUNNING (Precondition), and BT.CPP's
  // haltTree halts every node for the same reason ("just in case"). An _onHalted script that
  // throws stops its parent's halt there: the walk goes on (the nodes it left RUNNING are halted
  // in turn) and the first error is thrown once every node is halted.
  const haltAll = (n: TreeNode, failed: { first?: { err: unknown } }) => {
    if (n.status === "RUNNING") {
      try {
        n.haltNode();
      } catch (err) {
        failed.first ??= { err };
      }
    }
    n.resetStatus();
    for (const c of n.children) haltAll(c, failed);
  };
  return {
    root,
    blackboard,
    env,
    tickRoot() {
      env.lastFailedLeaf = "";
      const s = root.executeTick();
      if (s === "SUCCESS" || s === "FAILURE") root.resetStatus();
      return s;
    },
    haltTree() {
      const failed: { first?: { err: unknown } } = {};
      haltAll(root, failed);
      if (failed.first) throw failed.first.err;
    },
    runningPath() {
      if (root.status !== "RUNNING") return null;
      let node = root;
      for (;;) {
        const next = node.children.find((c) => c.status === "RUNNING");
        if (!next) return node.path;
        node = next;
      }
    },
  };
}
