/**
 * Device handles and calls a tree names literally: written in the node, or through a
 * `{blackboard}` reference a SubTree's port sets to a literal (`<SubTree ID="m" dev="sim0/x"/>`
 * with `device_handle="{dev}"` inside) and nothing in the tree writes.
 */
import type { Diagnostic } from "../../config/mod.ts";
import { scopedBlackboardWrites, type ScopedWrites } from "./blackboard_keys.ts";
import type { ParsedTree } from "./parse.ts";
import { errorAt, pathName } from "./diagnostics.ts";
import { NODE_SPECS } from "./node_registry.ts";
import { blackboardKeyOf, nameLiteralProblem, type NamePort, subTreePortsOf } from "./ports.ts";
import { nodeTypeOf, pathSegment } from "./verify.ts";
import type { XmlElement } from "./xml_document.ts";

/**
 * How deep SubTrees are followed from the main tree to resolve their literal ports (verify refuses
 * SubTree recursion; this bounds the walk all the same).
 */
export const MAX_RESOLVED_SUBTREE_DEPTH = 32;

/** A SubTree instance's blackboard scope as the build makes it (build.ts). */
interface Scope {
  /** Ports the SubTree element sets to a literal. */
  readonly literals: ReadonlyMap<string, string>;
  /** Ports it remaps to a key of the parent scope. */
  readonly remaps: ReadonlyMap<string, string>;
  readonly autoremap: boolean;
  readonly parent: Scope | null;
  /** The tree definition this is an instance of. */
  readonly tree: string;
}

/**
 * The literal a key holds in `scope` before the tree runs (Blackboard.getEntry's lookup order),
 * or null: not set by a SubTree port, or written by the tree (`written`), so it varies.
 */
function resolveKey(key: string, scope: Scope, written: ScopedWrites): string | null {
  let s: Scope | null = scope;
  let k = key;
  // Each step goes one scope up: at most the depth of SubTrees followed.
  while (s !== null) {
    if (k.startsWith("@")) {
      while (s.parent !== null) s = s.parent;
      k = k.slice(1);
    }
    if (
      written.byTree.get(s.tree)?.has(k) || (s.parent === null && written.root.has(k))
    ) return null;
    const lit = s.literals.get(k);
    if (lit !== undefined) return lit;
    const remapped = s.remaps.get(k);
    if (remapped !== undefined) k = remapped;
    else if (!(s.autoremap && !k.startsWith("_"))) return null;
    s = s.parent;
  }
  return null;
}

/**
 * Calls `fn` with every element reached from the main tree, SubTrees expanded (to
 * MAX_RESOLVED_SUBTREE_DEPTH), with its scope: what the tree runs, ports resolved as it reads them.
 */
function forEachInstance(
  parsed: ParsedTree,
  fn: (el: XmlElement, scope: Scope, path: string) => void,
): void {
  const main = parsed.mainTreeId === undefined ? undefined : parsed.trees.get(parsed.mainTreeId);
  if (!main?.root) return;
  const visit = (el: XmlElement, scope: Scope, depth: number, path: string) => {
    fn(el, scope, path);
    if (nodeTypeOf(el) === "SubTree") {
      const target = parsed.trees.get(el.attributes.get("ID") ?? "");
      if (!target?.root || depth >= MAX_RESOLVED_SUBTREE_DEPTH) return;
      const scoped = { ...subTreePortsOf(el.attributes), parent: scope, tree: target.id };
      visit(
        target.root,
        scoped,
        depth + 1,
        `${path}/${pathName(target.id)}/${pathSegment(target.root, 0)}`,
      );
      return;
    }
    el.children.forEach((c, i) => visit(c, scope, depth, `${path}/${pathSegment(c, i)}`));
  };
  const rootScope = {
    literals: new Map(),
    remaps: new Map(),
    autoremap: false,
    parent: null,
    tree: main.id,
  };
  visit(main.root, rootScope, 0, `${pathName(main.id)}/${pathSegment(main.root, 0)}`);
}

/**
 * Calls `fn` with every element the main tree reaches (SubTrees expanded, each instance apart) and
 * its path, with a reader of its ports: the text a port holds before the tree writes anything --
 * written literally, or a reference a SubTree port sets to a literal -- exactly as written, or
 * null (absent, or a reference to an entry that varies).
 */
export function forEachReachedElement(
  parsed: ParsedTree,
  fn: (el: XmlElement, path: string, literalOf: (port: string) => string | null) => void,
): void {
  const written = scopedBlackboardWrites(parsed);
  forEachInstance(parsed, (el, scope, path) =>
    fn(el, path, (port) => {
      const value = el.attributes.get(port);
      if (value === undefined) return null;
      const key = blackboardKeyOf(value, port);
      return key === undefined ? value : resolveKey(key, scope, written);
    }));
}

/**
 * Port `name`'s value on `el` as the node reads it before the tree writes anything: written
 * literally, or a reference `scope` resolves to a literal; exactly as written (the node does not
 * trim it), not blank. Null otherwise.
 */
function resolved(
  el: XmlElement,
  name: string,
  scope: Scope,
  written: ScopedWrites,
): string | null {
  const value = el.attributes.get(name);
  if (value === undefined) return null;
  const key = blackboardKeyOf(value, name);
  const v = key === undefined ? value : resolveKey(key, scope, written);
  return v === null || v.trim() === "" ? null : v;
}

/**
 * Every `device_handle` the tree's nodes read before it writes anything -- written literally
 * (`sim0/motorctl0`, not `{motor}`) or a reference a SubTree port sets to a literal -- in the
 * order the main tree reaches them, without repeats. Only the main tree and the SubTrees it
 * reaches count: a tree of an included library nobody instantiates names nothing.
 */
export function literalDeviceHandles(parsed: ParsedTree): string[] {
  const out = new Set<string>();
  const written = scopedBlackboardWrites(parsed);
  forEachInstance(parsed, (el, scope) => {
    if (!el.attributes.has("device_handle") || nodeTypeOf(el) === "SubTree") return;
    const handle = resolved(el, "device_handle", scope, written);
    if (handle !== null) out.add(handle);
  });
  return [...out];
}

/** A call a tree makes with its device and function written literally. */
export interface LiteralDeviceCall {
  readonly deviceHandle: string;
  readonly functionName: string;
  /** Its `args` as written (`{}` when absent), or null when they come from the blackboard. */
  readonly args: string | null;
  /** Where the CallDevice node is: `FILE:LINE:COL`. */
  readonly at: string;
}

/**
 * Every CallDevice whose `device_handle` and `function_name` are both written literally (not
 * `{blackboard}` references) or set to a literal by a SubTree port, in the order the main tree
 * reaches them (only the trees it reaches), the first of each device, function and args: what a
 * gate can check before the tree runs.
 */
export function literalDeviceCalls(parsed: ParsedTree): LiteralDeviceCall[] {
  const out = new Map<string, LiteralDeviceCall>();
  const add = (el: XmlElement, deviceHandle: string, functionName: string, args: string | null) => {
    const key = `${deviceHandle}\n${functionName}\n${args ?? "\u0000"}`;
    if (!out.has(key)) {
      out.set(key, {
        deviceHandle,
        functionName,
        args,
        at: `${el.file}:${el.line}:${el.column}`,
      });
    }
  };
  // Device and function written literally or set to a literal by a SubTree port (args too).
  const written = scopedBlackboardWrites(parsed);
  forEachInstance(parsed, (el, scope) => {
    if (nodeTypeOf(el) !== "CallDevice") return;
    const deviceHandle = resolved(el, "device_handle", scope, written);
    const functionName = resolved(el, "function_name", scope, written);
    if (deviceHandle === null || functionName === null) return;
    const raw = el.attributes.get("args");
    const argsKey = raw === undefined ? undefined : blackboardKeyOf(raw, "args");
    // A resolved literal is the text the node reads (untrimmed, as written in the SubTree).
    const args = raw === undefined
      ? "{}"
      : argsKey === undefined
      ? raw
      : resolveKey(argsKey, scope, written);
    add(el, deviceHandle, functionName, args);
  });
  return [...out.values()];
}

/**
 * A `device_handle` (or CallDevice `function_name`) reference a SubTree port sets to a literal
 * that names nothing: the rule verify applies to one written in the node (ports.ts
 * nameLiteralProblem), since the node reads the literal exactly as the SubTree writes it. One
 * error per node and value, at the node, for the main tree's reach.
 */
export function subTreeLiteralProblems(parsed: ParsedTree): Diagnostic[] {
  const out = new Map<string, Diagnostic>();
  const written = scopedBlackboardWrites(parsed);
  const add = (el: XmlElement, path: string, message: string) => {
    const key = `${el.file}:${el.line}:${el.column}\n${message}`;
    if (!out.has(key)) out.set(key, errorAt(el, path, message));
  };
  forEachInstance(parsed, (el, scope, path) => {
    const type = nodeTypeOf(el);
    const spec = type === undefined ? undefined : NODE_SPECS.get(type);
    if (spec === undefined) return;
    const fromSubTree = (port: string): { ref: string; value: string } | null => {
      const ref = el.attributes.get(port);
      const key = ref === undefined ? undefined : blackboardKeyOf(ref, port);
      if (key === undefined) return null;
      const value = resolveKey(key, scope, written);
      return value === null ? null : { ref: ref!, value };
    };
    const judge = (port: NamePort) => {
      const v = fromSubTree(port);
      const problem = v === null ? null : nameLiteralProblem(port, v.value, v.ref);
      if (problem !== null) add(el, path, problem);
    };
    if (spec.ports.some((p) => p.name === "device_handle")) judge("device_handle");
    if (type === "CallDevice") judge("function_name");
  });
  return [...out.values()];
}
