/** Device handles a tree names literally (not through a `{blackboard}` reference). */
import type { ParsedTree } from "./parse.ts";
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
