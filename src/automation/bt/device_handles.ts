/** Device handles a tree names literally (not through a `{blackboard}` reference). */
import type { ParsedTree } from "./parse.ts";
import { nodeTypeOf } from "./verify.ts";
import type { XmlElement } from "./xml_document.ts";

/**
 * Every `device_handle` attribute value of every tree definition (included files too) that is
 * written literally -- `sim0/motorctl0`, not `{motor}` -- in document order, without repeats.
 */
export function literalDeviceHandles(parsed: ParsedTree): string[] {
  const out = new Set<string>();
  const visit = (el: XmlElement) => {
    const v = el.attributes.get("device_handle");
    if (v !== undefined && v !== "" && !v.includes("{")) out.add(v.trim());
    for (const child of el.children) visit(child);
  };
  for (const def of parsed.trees.values()) visit(def.element);
  return [...out];
}

/** A call a tree makes with its device and function written literally. */
export interface LiteralDeviceCall {
  readonly deviceHandle: string;
  readonly functionName: string;
}

/**
 * Every CallDevice whose `device_handle` and `function_name` are both written literally (not
 * `{blackboard}` references), in document order, without repeats: what a gate can check before
 * the tree runs.
 */
export function literalDeviceCalls(parsed: ParsedTree): LiteralDeviceCall[] {
  const out = new Map<string, LiteralDeviceCall>();
  const literal = (v: string | undefined) =>
    v !== undefined && v.trim() !== "" && !v.includes("{") ? v.trim() : null;
  const visit = (el: XmlElement) => {
    if (nodeTypeOf(el) === "CallDevice") {
      const deviceHandle = literal(el.attributes.get("device_handle"));
      const functionName = literal(el.attributes.get("function_name"));
      if (deviceHandle !== null && functionName !== null) {
        out.set(`${deviceHandle}\n${functionName}`, { deviceHandle, functionName });
      }
    }
    for (const child of el.children) visit(child);
  };
  for (const def of parsed.trees.values()) visit(def.element);
  return [...out.values()];
}
