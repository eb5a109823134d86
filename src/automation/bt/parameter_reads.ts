/**
 * The parameters a tree reads by a literal name (`GetParameter*` with `param` written in the node
 * or set by a SubTree port, not a `{blackboard}` entry the tree writes), checked against the declared parameters (automation.parameters):
 * a name nobody declares cannot be given a value (POST /v0/parameters refuses it) and a declared
 * parameter of a type the node does not read makes it fail, at every tick either way.
 */
import { quoteProviderText } from "../../common/mod.ts";
import type { Diagnostic, ParameterType } from "../../config/mod.ts";
import { forEachReachedElement } from "./device_handles.ts";
import { errorAt, type SourcePos } from "./diagnostics.ts";
import type { ParsedTree } from "./parse.ts";
import { nodeTypeOf, suggestion } from "./verify.ts";

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
 * Every GetParameter* node the main tree runs (an included library's tree nobody instantiates
 * reads nothing) whose `param` is a literal name: written in the node, or a `{blackboard}`
 * reference a SubTree port sets to a literal (`<SubTree ID="Hold" which="temp"/>`, as a device
 * handle: device_handles.ts); once per node and name. Small: a loaded tree keeps this list, not
 * itself.
 */
export function literalParameterReads(parsed: ParsedTree): ParameterRead[] {
  const out = new Map<string, ParameterRead>();
  forEachReachedElement(parsed, (el, path, literalOf) => {
    const node = nodeTypeOf(el);
    const wants = node === undefined ? undefined : READS[node];
    // The node looks the name up exactly as written (a string port is not trimmed).
    const name = wants === undefined ? null : literalOf("param");
    if (name === null) return;
    const key = `${el.file}:${el.line}:${el.column}\n${name}`;
    if (out.has(key)) return;
    out.set(key, {
      name,
      node: node!,
      wants: wants!,
      at: { line: el.line, column: el.column, file: el.file },
      path,
    });
  });
  return [...out.values()];
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
        // The tree file's name, any length: cut and quoted, as config text is.
        `port 'param': ${
          quoteProviderText(name)
        } is not a declared parameter (automation.parameters)` +
          suggestion(name, declared.keys()),
      ));
    } else if (!wants.includes(has)) {
      out.push(errorAt(
        at,
        path,
        `port 'param': ${quoteProviderText(name)} is a ${has} parameter; ${node} reads only ${
          wants.join(" or ")
        } parameters`,
      ));
    }
  }
  return out;
}
