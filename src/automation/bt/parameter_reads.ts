/**
 * The parameters a tree reads by a name written literally (`GetParameter*` with `param` not a
 * `{blackboard}` reference), checked against the declared parameters (automation.parameters):
 * a name nobody declares cannot be given a value (POST /v0/parameters refuses it) and a declared
 * parameter of a type the node does not read makes it fail, at every tick either way.
 */
import type { Diagnostic, ParameterType } from "../../config/mod.ts";
import { treesRun } from "./blackboard_keys.ts";
import { errorAt, type SourcePos } from "./diagnostics.ts";
import type { ParsedTree } from "./parse.ts";
import { blackboardKeyOf } from "./ports.ts";
import { nodeTypeOf, pathSegment, suggestion } from "./verify.ts";
import type { XmlElement } from "./xml_document.ts";

/** The declared parameters by name (automation.parameters). */
export type DeclaredParameters = ReadonlyMap<string, ParameterType>;

/** The parameter types each GetParameter* node reads (custom_nodes.ts GetParameterNode). */
const READS: Readonly<Record<string, readonly ParameterType[]>> = {
  GetParameter: ["double", "int64"],
  GetParameterBool: ["bool"],
  GetParameterInt64: ["int64"],
};

/** One GetParameter* node reading a literal name: what the check needs, not the parsed tree. */
export interface ParameterRead {
  readonly name: string;
  /** The node type (GetParameter, GetParameterBool, GetParameterInt64). */
  readonly node: string;
  /** The parameter types the node reads. */
  readonly wants: readonly ParameterType[];
  readonly at: SourcePos;
  /** The node's path in its tree (as diagnostics give it). */
  readonly path: string;
}

/**
 * Every GetParameter* node of the main tree and the SubTrees it reaches (an included library's
 * tree nobody instantiates reads nothing) whose `param` is a literal name (not a `{blackboard}` reference). Small: a loaded tree keeps this list, not itself.
 */
export function literalParameterReads(parsed: ParsedTree): ParameterRead[] {
  const out: ParameterRead[] = [];
  const visit = (el: XmlElement, path: string) => {
    const node = nodeTypeOf(el);
    const wants = node === undefined ? undefined : READS[node];
    const name = el.attributes.get("param");
    // The node looks the name up exactly as written (a string port is not trimmed).
    if (wants !== undefined && name !== undefined && blackboardKeyOf(name, "param") === undefined) {
      out.push({
        name,
        node: node!,
        wants,
        at: { line: el.line, column: el.column, file: el.file },
        path,
      });
    }
    el.children.forEach((c, i) => visit(c, `${path}/${pathSegment(c, i)}`));
  };
  // A tree nothing runs (one of an included library) reads nothing.
  const runs = treesRun(parsed);
  for (const tree of parsed.trees.values()) {
    if (tree.root && runs.has(tree.id)) visit(tree.root, `${tree.id}/${pathSegment(tree.root, 0)}`);
  }
  return out;
}

/**
 * One error per read whose name is not declared in `declared`, or is declared with a type the
 * node does not read.
 */
export function parameterReadProblems(
  reads: readonly ParameterRead[],
  declared: DeclaredParameters,
): Diagnostic[] {
  const out: Diagnostic[] = [];
  for (const { name, node, wants, at, path } of reads) {
    const has = declared.get(name);
    if (has === undefined) {
      out.push(errorAt(
        at,
        path,
        `port 'param': '${name}' is not a declared parameter (automation.parameters)` +
          suggestion(name, declared.keys()),
      ));
    } else if (!wants.includes(has)) {
      out.push(errorAt(
        at,
        path,
        `port 'param': '${name}' is a ${has} parameter; ${node} reads only ${
          wants.join(" or ")
        } parameters`,
      ));
    }
  }
  return out;
}
