/** Device handles and calls a tree names literally (not through a `{blackboard}` reference). */
import type { ParsedTree } from "./parse.ts";
import { blackboardKeyOf } from "./ports.ts";
import { nodeTypeOf } from "./verify.ts";
import type { XmlElement } from "./xml_document.ts";

/**
 * Port `name`'s value on `el`, trimmed, when it is written literally: present, not blank, not a
 * blackboard reference (blackboardKeyOf: the test verify and the nodes use). Null otherwise.
 */
function literal(el: XmlElement, name: string): string | null {
  const value = el.attributes.get(name);
  if (value === undefined || blackboardKeyOf(value, name) !== undefined) return null;
  const v = value.trim();
  return v === "" ? null : v;
}

/** Calls `fn` with every element of every tree definition (included files too), in document order. */
function forEachElement(parsed: ParsedTree, fn: (el: XmlElement) => void): void {
  const visit = (el: XmlElement) => {
    fn(el);
    for (const child of el.children) visit(child);
  };
  for (const def of parsed.trees.values()) visit(def.element);
}

/**
 * Every `device_handle` attribute value of every tree definition (included files too) that is
 * written literally -- `sim0/motorctl0`, not `{motor}` -- in document order, without repeats.
 */
export function literalDeviceHandles(parsed: ParsedTree): string[] {
  const out = new Set<string>();
  forEachElement(parsed, (el) => {
    const handle = literal(el, "device_handle");
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
 * `{blackboard}` references), in document order, the first of each device, function and args:
 * what a gate can check before the tree runs.
 */
export function literalDeviceCalls(parsed: ParsedTree): LiteralDeviceCall[] {
  const out = new Map<string, LiteralDeviceCall>();
  forEachElement(parsed, (el) => {
    if (nodeTypeOf(el) !== "CallDevice") return;
    const deviceHandle = literal(el, "device_handle");
    const functionName = literal(el, "function_name");
    if (deviceHandle === null || functionName === null) return;
    // The node reads args as written (a string port, default `{}`).
    const raw = el.attributes.get("args");
    const args = raw === undefined ? "{}" : blackboardKeyOf(raw, "args") !== undefined ? null : raw;
    const key = `${deviceHandle}\n${functionName}\n${args ?? "\u0000"}`;
    if (!out.has(key)) {
      out.set(key, {
        deviceHandle,
        functionName,
        args,
        at: `${el.file}:${el.line}:${el.column}`,
      });
    }
  });
  return [...out.values()];
}
