/**
 * Which blackboard keys a tree writes and reads. Only the tree writes its blackboard (output
 * ports, scripts, SubTree literal ports; parameters are not mirrored onto it and nothing outside
 * sets it: docs/automation.md), so a key it reads that nothing writes has no value at every read.
 * By name across every tree definition (scopes are not followed): a key counts as written when
 * any write names it, or names a key a SubTree remap joins it to -- never a false alarm, though a
 * write in another scope can hide a never-written read.
 */
import { quoteProviderText } from "../../common/mod.ts";
import type { Diagnostic } from "../../config/mod.ts";
import { errorAt, pathName, warningAt } from "./diagnostics.ts";
import { NODE_SPECS } from "./node_registry.ts";
import type { ParsedTree } from "./parse.ts";
import { blackboardKeyOf, subTreePortsOf } from "./ports.ts";
import { parseScript, type ScriptExpr, ScriptSyntaxError } from "./script.ts";
import { POST_CONDITIONS, PRE_CONDITIONS } from "./tree_node.ts";
import { nodeTypeOf, pathSegment } from "./verify.ts";
import type { XmlElement } from "./xml_document.ts";

/** Script-holding ports (their text is a script whose reads and writes count). */
const SCRIPT_PORTS: ReadonlySet<string> = new Set([
  "Script.code",
  "ScriptCondition.code",
  "Precondition.if",
]);

/**
 * Input ports whose node goes on without a value (a default, the clock, an empty slot): a read of
 * a never-written key there is a warning, not an error.
 */
function toleratesMissing(type: string, port: string): boolean {
  if (port === "now_ms") return type === "PeriodicPulseWindow" || type === "EmitOnChangeOrInterval";
  if (type === "RunOnce") return port === "then_skip";
  if (type === "CallDevice") return port === "reason";
  return type === "BuildArgsJson" && /^arg\d+_(name|type|num|bool|str)$/.test(port);
}

/** A blackboard key without `@` (the root scope's key is the same name, by name). */
const bare = (key: string): string => key.startsWith("@") ? key.slice(1) : key;

interface ScriptKeys {
  reads: string[];
  writes: string[];
}

/** The variables a script reads and assigns (an unparsable script: none; verify reports it). */
function scriptKeys(code: string): ScriptKeys {
  const out: ScriptKeys = { reads: [], writes: [] };
  let statements: readonly ScriptExpr[];
  try {
    statements = parseScript(code).statements;
  } catch (err) {
    if (err instanceof ScriptSyntaxError) return out;
    throw err;
  }
  const walk = (e: ScriptExpr): void => {
    switch (e.kind) {
      case "literal":
        return;
      case "var":
        out.reads.push(e.name);
        return;
      case "unary":
        return walk(e.arg);
      case "binary":
        walk(e.left);
        return walk(e.right);
      case "ternary":
        walk(e.cond);
        walk(e.then);
        return walk(e.else);
      case "assign":
        // `x += 1` reads x as well; `:=` and `=` only write it.
        if (e.op !== ":=" && e.op !== "=") out.reads.push(e.name);
        walk(e.value);
        out.writes.push(e.name);
        return;
    }
  };
  for (const s of statements) walk(s);
  return out;
}

/** One read of a blackboard key by a node. */
interface KeyRead {
  readonly key: string;
  readonly el: XmlElement;
  readonly path: string;
  /** `port 'x'` or `attribute _skipIf`. */
  readonly where: string;
  readonly tolerated: boolean;
  /** The tree definition the node is in. */
  readonly tree: string;
}

/** A SubTree element of a tree definition: how its ports link its scope to the definition's. */
interface SubTreeLink {
  /** The tree definition the element is in. */
  readonly tree: string;
  /** The definition it instantiates. */
  readonly target: string;
  /** Ports set to a literal: kept in the SubTree's own scope, written there or not. */
  readonly literals: ReadonlyMap<string, string>;
  /** Ports remapped to a key of the definition's scope (`@key`: the root's). */
  readonly remaps: ReadonlyMap<string, string>;
  readonly autoremap: boolean;
}

/** Every write and read of the tree's keys, and the SubTree remaps joining keys. */
function collect(parsed: ParsedTree): {
  writes: Set<string>;
  reads: KeyRead[];
  joins: [string, string][];
  /** The node writes of each tree definition, as written (`@key` for the root's). */
  nodeWritesByTree: Map<string, Set<string>>;
  links: SubTreeLink[];
} {
  const writes = new Set<string>();
  // Those of the nodes (what changes while the tree runs), per definition: `writes` less the
  // SubTree ports.
  const nodeWritesByTree = new Map<string, Set<string>>();
  const links: SubTreeLink[] = [];
  const write = (key: string) => {
    writes.add(bare(key));
    let own = nodeWritesByTree.get(tree);
    if (own === undefined) nodeWritesByTree.set(tree, own = new Set());
    own.add(key);
  };
  const reads: KeyRead[] = [];
  const joins: [string, string][] = [];
  let tree = "";
  const script = (code: string, el: XmlElement, path: string, where: string) => {
    const k = scriptKeys(code);
    for (const w of k.writes) write(w);
    for (const r of k.reads) reads.push({ key: bare(r), el, path, where, tolerated: false, tree });
  };
  const visit = (el: XmlElement, path: string) => {
    const type = nodeTypeOf(el) ?? "";
    for (const cond of [...PRE_CONDITIONS, ...POST_CONDITIONS]) {
      const code = el.attributes.get(cond);
      if (code !== undefined) script(code, el, path, `attribute ${cond}`);
    }
    const spec = NODE_SPECS.get(type);
    if (spec?.category === "subtree") {
      const ports = subTreePortsOf(el.attributes);
      // A literal port value is set in the SubTree's scope; a reference joins the two keys.
      for (const name of ports.literals.keys()) writes.add(name);
      for (const [name, key] of ports.remaps) joins.push([name, bare(key)]);
      links.push({ tree, target: el.attributes.get("ID") ?? "", ...ports });
    } else if (spec) {
      for (const port of spec.ports) {
        const raw = el.attributes.get(port.name);
        if (raw === undefined) continue;
        const key = blackboardKeyOf(raw, port.name);
        if (key === undefined) {
          // SetBlackboard's output_key names its key without braces too.
          if (type === "SetBlackboard" && port.name === "output_key") write(raw.trim());
          if (SCRIPT_PORTS.has(`${type}.${port.name}`)) {
            script(raw, el, path, `port '${port.name}'`);
          }
          continue;
        }
        if (port.direction === "input") {
          reads.push({
            key: bare(key),
            el,
            path,
            where: `port '${port.name}'`,
            tolerated: toleratesMissing(type, port.name),
            tree,
          });
        } else write(key);
      }
    }
    el.children.forEach((c, i) => visit(c, `${path}/${pathSegment(c, i)}`));
  };
  for (const def of parsed.trees.values()) {
    tree = def.id;
    if (def.root) visit(def.root, `${pathName(def.id)}/${pathSegment(def.root, 0)}`);
  }
  return { writes, reads, joins, nodeWritesByTree, links };
}

/** The tree definitions the main tree runs: itself and every SubTree it reaches. */
export function treesRun(parsed: ParsedTree): Set<string> {
  const out = new Set<string>();
  const pending = parsed.mainTreeId === undefined ? [] : [parsed.mainTreeId];
  // Each definition is expanded once: at most one pass per definition.
  for (let id = pending.pop(); id !== undefined; id = pending.pop()) {
    const def = parsed.trees.get(id);
    if (out.has(id) || def?.root === undefined) continue;
    out.add(id);
    const visit = (el: XmlElement) => {
      if (nodeTypeOf(el) === "SubTree") pending.push(el.attributes.get("ID") ?? "");
      el.children.forEach(visit);
    };
    visit(def.root);
  }
  return out;
}

/** The keys written by name, closed over SubTree remaps (a write to either name of a join). */
function closeOverJoins(writes: Set<string>, joins: readonly [string, string][]): Set<string> {
  const out = new Set(writes);
  // Each pass adds at least one key or stops: at most joins.length + 1 passes.
  for (let changed = true; changed;) {
    changed = false;
    for (const [a, b] of joins) {
      if (out.has(a) !== out.has(b)) {
        out.add(a);
        out.add(b);
        changed = true;
      }
    }
  }
  return out;
}

/**
 * The keys that vary while the tree runs, scope by scope: `byTree` those of each tree
 * definition's scope (an instance of it: what its own nodes write, and what a SubTree inside it
 * writes into it through a remap or `_autoremap`), `root` those of the root scope written by
 * `@key` anywhere. Blackboard's lookup order: a SubTree port set to a literal keeps a write inside
 * the SubTree in the SubTree's scope. So one instance mapping a port onto an entry the tree writes
 * leaves another instance's literal for that port a literal.
 */
export interface ScopedWrites {
  readonly byTree: ReadonlyMap<string, ReadonlySet<string>>;
  readonly root: ReadonlySet<string>;
}

export function scopedBlackboardWrites(parsed: ParsedTree): ScopedWrites {
  const { nodeWritesByTree, links } = collect(parsed);
  const byTree = new Map<string, Set<string>>();
  const root = new Set<string>();
  const of = (tree: string): Set<string> => {
    let set = byTree.get(tree);
    if (set === undefined) byTree.set(tree, set = new Set());
    return set;
  };
  // `key` as written in `tree` (`@key`: the root's); true when it was not known to vary.
  const add = (tree: string, key: string): boolean => {
    const [set, k] = key.startsWith("@") ? [root, key.slice(1)] : [of(tree), key];
    if (set.has(k)) return false;
    set.add(k);
    return true;
  };
  for (const [tree, keys] of nodeWritesByTree) for (const k of keys) add(tree, k);
  // What a SubTree writes flows up its remaps: each pass adds a key or stops (at most one pass
  // per key of every definition, plus one).
  for (let changed = true; changed;) {
    changed = false;
    for (const link of links) {
      for (const k of byTree.get(link.target) ?? []) {
        if (link.literals.has(k)) continue; // its own entry in the SubTree's scope
        const to = link.remaps.get(k) ?? (link.autoremap && !k.startsWith("_") ? k : undefined);
        if (to !== undefined && add(link.tree, to)) changed = true;
      }
    }
  }
  return { byTree, root };
}

/**
 * One diagnostic per read of a key that nothing in the tree writes: an error (the read fails at
 * every tick it is made: the tree is refused), a warning where the node goes on without it.
 */
export function unwrittenBlackboardReads(parsed: ParsedTree): Diagnostic[] {
  const { writes, reads, joins } = collect(parsed);
  const written = closeOverJoins(writes, joins);
  const runs = treesRun(parsed);
  const out: Diagnostic[] = [];
  for (const r of reads) {
    // A tree nothing runs (one of an included library) reads nothing.
    if (written.has(r.key) || !runs.has(r.tree)) continue;
    // The tree file's key, any length: cut and quoted, as config text is.
    const message =
      `${r.where}: blackboard entry ${quoteProviderText(r.key)} is read but nothing in the tree ` +
      `writes it (no output port, script or SubTree port sets it; parameters are read with ` +
      `GetParameter*)`;
    out.push(
      r.tolerated
        ? warningAt(r.el, r.path, `${message}; the node goes on without it`)
        : errorAt(r.el, r.path, `${message}, so it has no value at every read`),
    );
  }
  return out;
}
