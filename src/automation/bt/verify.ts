/**
 * Verify step: checks every tree definition against the registered node types and reports every
 * problem at once, each with its file, line and node path: unknown node types, wrong child counts,
 * unknown/missing ports, bad literals, device handles that are not `provider/device`, script
 * syntax, unknown SubTree IDs and SubTree recursion.
 */
import { providerText, quoteProviderText } from "../../common/mod.ts";
import type { Diagnostic } from "../../config/mod.ts";
import { parseCallArgs } from "../call_args.ts";
import { BT_QUALITY_NAMES, BUILD_ARGS_SLOTS, BUILD_ARGS_TYPES } from "./custom_nodes.ts";
import { cycleText, errorAt, pathName, warningAt } from "./diagnostics.ts";
import { GENERIC_NODE_ELEMENTS, NODE_SPECS, type NodeSpec } from "./node_registry.ts";
import type { ParsedTree, TreeDefinition } from "./parse.ts";
import { blackboardKeyOf, checkPortValue, nameLiteralProblem, type PortSpec } from "./ports.ts";
import { parseScript, ScriptSyntaxError } from "./script.ts";
import { POST_CONDITIONS, PRE_CONDITIONS } from "./tree_node.ts";
import type { XmlElement } from "./xml_document.ts";
import { parseScalar } from "./blackboard.ts";

const CONDITION_ATTRS: ReadonlySet<string> = new Set([...PRE_CONDITIONS, ...POST_CONDITIONS]);

/** The node type an element instantiates (`<Action ID="X">` -> X). */
export function nodeTypeOf(el: XmlElement): string | undefined {
  return GENERIC_NODE_ELEMENTS.has(el.name) ? el.attributes.get("ID") : el.name;
}

/** Path segment of a node: `Type[indexAmongSiblings]`, the type named as pathName names it. */
export function pathSegment(el: XmlElement, index: number): string {
  return `${pathName(nodeTypeOf(el) ?? el.name)}[${index}]`;
}

function editDistance(a: string, b: string): number {
  const dp = Array.from({ length: b.length + 1 }, (_, j) => j);
  for (let i = 1; i <= a.length; i++) {
    let prev = dp[0];
    dp[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const tmp = dp[j];
      dp[j] = Math.min(dp[j]! + 1, dp[j - 1]! + 1, prev! + (a[i - 1] === b[j - 1] ? 0 : 1));
      prev = tmp;
    }
  }
  return dp[b.length]!;
}

/** ` (did you mean ...?)` for the candidate nearest to `name` (edit distance 2 at most), else "". */
export function suggestion(name: string, candidates: Iterable<string>): string {
  let best: string | undefined;
  let bestD = Infinity;
  for (const c of candidates) {
    const d = c.toLowerCase() === name.toLowerCase() ? 0 : editDistance(name, c);
    if (d < bestD) {
      best = c;
      bestD = d;
    }
  }
  // A tree's ID is the tree file's text, any length: cut and quoted, as the name it is near.
  return best !== undefined && bestD <= 2 ? ` (did you mean ${quoteProviderText(best)}?)` : "";
}

/** Checks a script attribute; returns an error message or undefined. */
function scriptProblem(code: string): string | undefined {
  try {
    parseScript(code);
    return undefined;
  } catch (err) {
    if (err instanceof ScriptSyntaxError) {
      return `script error at offset ${err.offset}: ${err.message}`;
    }
    throw err;
  }
}

/**
 * How many nodes deep the main tree may nest, from its root to its deepest leaf, SubTrees
 * expanded: the build and every tick recurse once per level, so a deeper tree is refused with a
 * diagnostic instead of overflowing the call stack (at start-up, in --check-config, at a reload
 * or at a tick). Hand-written and Groot trees nest a few dozen levels.
 */
export const MAX_TREE_DEPTH = 256;

/** Verifies every tree of a parsed file against the node types (default: all built-ins); returns all diagnostics (errors and warnings). */
export function verifyParsedTree(
  parsed: ParsedTree,
  registry: ReadonlyMap<string, NodeSpec> = NODE_SPECS,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  // Tree ID -> SubTree references (for the recursion check), with each one's depth in its tree.
  const references = new Map<
    string,
    { target: string; el: XmlElement; path: string; depth: number }[]
  >();
  // Tree ID -> the depth of its deepest node within its own definition (its root is 1).
  const heights = new Map<string, number>();

  const checkConditions = (el: XmlElement, path: string) => {
    for (const [name, value] of el.attributes) {
      if (!CONDITION_ATTRS.has(name)) continue;
      const problem = scriptProblem(value);
      if (problem) out.push(errorAt(el, path, `attribute ${name}: ${problem}`));
    }
  };

  const checkPorts = (el: XmlElement, spec: NodeSpec, path: string) => {
    for (const [name, value] of el.attributes) {
      if (name === "name" || name === "ID" || name.startsWith("_")) continue;
      const port = spec.ports.find((p) => p.name === name);
      if (!port) {
        const known = spec.ports.map((p) => p.name);
        out.push(
          errorAt(
            el,
            path,
            // The tree file's text (a name, a value, an ID), any length and any character, cut
            // and quoted as config text is, here and in every message below.
            `unknown port ${quoteProviderText(name)} for node type ${spec.type}` +
              (known.length > 0 ? suggestion(name, known) : " (it has no ports)"),
          ),
        );
        continue;
      }
      const problem = checkPortValue(port, value);
      if (problem) {
        out.push(
          problem.severity === "error"
            ? errorAt(el, path, problem.message)
            : warningAt(el, path, problem.message),
        );
      }
    }
    for (const port of spec.ports) {
      if (port.required && !el.attributes.has(port.name)) {
        out.push(errorAt(el, path, `missing required port '${port.name}' of ${spec.type}`));
      }
    }
  };

  const literalInt = (el: XmlElement, port: PortSpec): number | undefined => {
    const raw = el.attributes.get(port.name) ?? port.defaultValue;
    if (raw === undefined || blackboardKeyOf(raw, port.name) !== undefined) return undefined;
    const v = parseScalar(raw, "int64");
    return v?.type === "int64" ? v.value : undefined;
  };

  const checkSpecific = (el: XmlElement, spec: NodeSpec, path: string) => {
    // A literal handle is looked up as written at every tick, and the AUTO gates judge the
    // device it names: one that names none (blank, no '/', spaces around) can only fail.
    const handle = el.attributes.get("device_handle");
    if (
      handle !== undefined && spec.ports.some((p) => p.name === "device_handle") &&
      blackboardKeyOf(handle, "device_handle") === undefined
    ) {
      const problem = nameLiteralProblem("device_handle", handle);
      if (problem !== null) out.push(errorAt(el, path, problem));
    }
    if (spec.type === "Parallel") {
      const n = el.children.length;
      for (const port of spec.ports) {
        const t = literalInt(el, port);
        if (t === undefined) continue;
        const need = t < 0 ? Math.max(n + t + 1, 0) : t;
        if (need > n) {
          out.push(
            errorAt(el, path, `${port.name}=${t} exceeds the number of children (${n})`),
          );
        }
      }
    }
    if (spec.type === "CheckQuality") {
      // Compared as written with the signal's quality: a literal none can have never succeeds, so
      // a check of a bad quality (under an Inverter) never fires.
      const expected = el.attributes.get("expected_quality");
      if (
        expected !== undefined && blackboardKeyOf(expected, "expected_quality") === undefined &&
        !BT_QUALITY_NAMES.includes(expected)
      ) {
        out.push(
          errorAt(
            el,
            path,
            `port 'expected_quality': ${quoteProviderText(expected)} is none of ${
              BT_QUALITY_NAMES.join(", ")
            } ` +
              `(a signal the HTTP API shows UNAVAILABLE is UNKNOWN here): the check could never ` +
              `succeed`,
          ),
        );
      }
    }
    if (spec.type === "BuildArgsJson") {
      // A named slot of a type the node does not know fails it at every tick (a slot named ""
      // is skipped; a name or type from the blackboard is judged there).
      const literal = (port: string) => {
        const raw = el.attributes.get(port);
        return raw === undefined || blackboardKeyOf(raw, port) !== undefined ? undefined : raw;
      };
      for (let i = 1; i <= BUILD_ARGS_SLOTS; i++) {
        const name = literal(`arg${i}_name`);
        const type = literal(`arg${i}_type`);
        if (!name || !type || BUILD_ARGS_TYPES.includes(type)) continue;
        out.push(
          errorAt(
            el,
            path,
            `port 'arg${i}_type': ${quoteProviderText(type)} is none of ${
              BUILD_ARGS_TYPES.join(", ")
            }: the node ` +
              `would fail at every tick`,
          ),
        );
      }
    }
    if (spec.type === "CallDevice") {
      // Called as written, while the AUTO policy gate judges the function it names: a blank name
      // or one with spaces around names none the device declares, so the call can only fail.
      const fn = el.attributes.get("function_name");
      if (fn !== undefined && blackboardKeyOf(fn, "function_name") === undefined) {
        const problem = nameLiteralProblem("function_name", fn);
        if (problem !== null) out.push(errorAt(el, path, problem));
      }
      const raw = el.attributes.get("args");
      if (raw !== undefined && blackboardKeyOf(raw, "args") === undefined) {
        const r = parseCallArgs(raw);
        if (!r.ok) {
          out.push(
            warningAt(el, path, `port 'args': ${r.error}; the node will return FAILURE`),
          );
        }
      }
    }
  };

  const checkSubTree = (el: XmlElement, tree: TreeDefinition, path: string, depth: number) => {
    const id = el.attributes.get("ID");
    if (id === undefined || id.trim() === "") {
      out.push(errorAt(el, path, "SubTree needs an ID attribute naming a BehaviorTree"));
    } else if (!parsed.trees.has(id)) {
      out.push(
        errorAt(
          el,
          path,
          `unknown SubTree ID ${quoteProviderText(id)}${suggestion(id, parsed.trees.keys())}`,
        ),
      );
    } else {
      const list = references.get(tree.id) ?? [];
      list.push({ target: id, el, path, depth });
      references.set(tree.id, list);
    }
    const auto = el.attributes.get("_autoremap");
    if (auto !== undefined && !parseScalar(auto, "bool")) {
      out.push(
        errorAt(el, path, `_autoremap must be true or false, not ${quoteProviderText(auto)}`),
      );
    }
    for (const [name, value] of el.attributes) {
      if (name.startsWith("_") || name === "ID" || name === "name") continue;
      const key = blackboardKeyOf(value, name);
      if (key !== undefined && !/^@?[A-Za-z_][A-Za-z0-9_.\-]*$/.test(key)) {
        out.push(
          errorAt(
            el,
            path,
            `port ${quoteProviderText(name)}: ${
              quoteProviderText(value)
            } is not a valid blackboard reference`,
          ),
        );
      }
    }
  };

  const visit = (el: XmlElement, tree: TreeDefinition, path: string, depth: number) => {
    heights.set(tree.id, Math.max(heights.get(tree.id) ?? 0, depth));
    const type = nodeTypeOf(el);
    checkConditions(el, path);
    let spec: NodeSpec | undefined;
    if (type === undefined || type.trim() === "") {
      // An XML name (no quote, no '>', no control character in it) of any length: cut.
      out.push(
        errorAt(el, path, `<${providerText(el.name)}> needs an ID attribute naming the node type`),
      );
    } else {
      spec = registry.get(type);
      if (!spec) {
        out.push(
          errorAt(
            el,
            path,
            `unknown node type ${quoteProviderText(type)}${suggestion(type, registry.keys())}`,
          ),
        );
      }
    }
    if (spec) {
      const n = el.children.length;
      if (spec.category === "decorator" && n !== 1) {
        out.push(errorAt(el, path, `decorator ${spec.type} must have exactly 1 child (has ${n})`));
      } else if (spec.category === "control" && (n < spec.minChildren || n > spec.maxChildren)) {
        const want = spec.maxChildren === Infinity
          ? `at least ${spec.minChildren} child${spec.minChildren === 1 ? "" : "ren"}`
          : `${spec.minChildren} to ${spec.maxChildren} children`;
        out.push(errorAt(el, path, `control node ${spec.type} needs ${want} (has ${n})`));
      } else if (spec.maxChildren === 0 && n > 0) {
        out.push(
          errorAt(el, path, `${spec.type} is a leaf node and cannot have children (has ${n})`),
        );
      }
      if (spec.category === "subtree") checkSubTree(el, tree, path, depth);
      else {
        checkPorts(el, spec, path);
        checkSpecific(el, spec, path);
      }
    }
    el.children.forEach((c, i) => visit(c, tree, `${path}/${pathSegment(c, i)}`, depth + 1));
  };

  for (const tree of parsed.trees.values()) {
    if (tree.root) visit(tree.root, tree, `${pathName(tree.id)}/${pathSegment(tree.root, 0)}`, 1);
  }

  // SubTree recursion would instantiate forever: report each back edge once. Depth first with a
  // stack of its own (a chain of thousands of SubTrees must not exhaust the call stack); a tree
  // is done once every tree it runs is, so its expanded height is known then.
  const state = new Map<string, "visiting" | "done">();
  const expanded = new Map<string, number>();
  let recursion = false;
  for (const start of parsed.trees.keys()) {
    if (state.has(start)) continue;
    state.set(start, "visiting");
    const stack = [{ id: start, next: 0 }];
    while (stack.length > 0) {
      const top = stack[stack.length - 1]!;
      const refs = references.get(top.id) ?? [];
      if (top.next === refs.length) {
        state.set(top.id, "done");
        stack.pop();
        let height = heights.get(top.id) ?? 0;
        for (const ref of refs) {
          height = Math.max(height, ref.depth + (expanded.get(ref.target) ?? 0));
        }
        expanded.set(top.id, height);
        continue;
      }
      const ref = refs[top.next++]!;
      const s = state.get(ref.target);
      if (s === "visiting") {
        recursion = true;
        const chain = stack.map((f) => f.id);
        // Each tree ID named as pathName names it (cycleText bounds the chain).
        const cycle = cycleText([...chain.slice(chain.indexOf(ref.target)), ref.target], pathName);
        out.push(errorAt(ref.el, ref.path, `SubTree recursion: ${cycle}`));
      } else if (s === undefined) {
        state.set(ref.target, "visiting");
        stack.push({ id: ref.target, next: 0 });
      }
    }
  }
  // Without recursion, how deep the main tree runs (the trees nothing runs run nowhere).
  const main = parsed.mainTreeId === undefined ? undefined : parsed.trees.get(parsed.mainTreeId);
  const height = main === undefined ? 0 : expanded.get(main.id) ?? 0;
  if (!recursion && main?.root !== undefined && height > MAX_TREE_DEPTH) {
    out.push(
      errorAt(
        main.root,
        `${pathName(main.id)}/${pathSegment(main.root, 0)}`,
        `the main tree nests ${height} nodes deep (SubTrees expanded), more than ` +
          `MAX_TREE_DEPTH (${MAX_TREE_DEPTH})`,
      ),
    );
  }
  return out;
}
