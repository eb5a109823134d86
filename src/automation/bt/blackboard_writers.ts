/**
 * The blackboard entries a built tree's output ports write, and what each writes: a port's
 * declared type, or -- for ReadSignal's `value`, whose type is the signal's -- the signal it
 * reads. An entry is typed by its first write (BT.CPP v4), or by the input port that names it
 * first: a tick that writes it with another kind throws, which faults the runtime. Verify cannot
 * see that for ReadSignal (it does not know the devices' signals); the AUTO gate can, from this
 * list and the declared signals.
 */
import type { BbEntry, BbType } from "./blackboard.ts";
import type { BuiltTree } from "./build.ts";
import { bbTypeOfPort, blackboardKeyOf } from "./ports.ts";
import type { TreeNode } from "./tree_node.ts";

/** One output port of a built node that writes a blackboard entry. */
export interface EntryWriter {
  /** The entry as written in the port (`{x}` -> `x`). */
  readonly key: string;
  /** The entry it resolves to (SubTree remapping followed): writers of one entry share it. */
  readonly entry: BbEntry;
  /** The node's type. */
  readonly node: string;
  /** Where the node is written: `FILE:LINE:COL` ("" for a node built without a document). */
  readonly at: string;
  /** A declared type, or the signal a ReadSignal reads (its type is the device's). */
  readonly writes:
    | { readonly type: Exclude<BbType, "any"> }
    | { readonly deviceHandle: string; readonly signalId: string };
  /**
   * Set for an input port that writes nothing but declared the entry's type at build (the first
   * port naming it): the port's name. Its type holds as a write's would.
   */
  readonly declares?: string;
  /**
   * Set for a typed input port (double, int64, bool) that reads an entry another port named
   * first: the port's name. It writes nothing; `writes.type` is the type it reads the entry as,
   * and a value it cannot convert fails the read (a string port reads every value as text).
   */
  readonly reads?: string;
}

/**
 * Every output port of the tree that writes an entry with a known type or from a signal named
 * literally (or by a SubTree port set to a literal), in tree order; each input port that
 * declared its entry's type (`declares`: the first port naming an entry types it at build, and a
 * string entry refuses numbers written into it as a number entry refuses strings); and each typed
 * input port reading an entry named before it (`reads`: a signal's value it cannot convert, a
 * double read as an int64 or a bool, fails the read at every tick). Ports typed
 * `any` and ReadSignals whose device or signal comes from the blackboard are left out: what they
 * write is known only when the tree runs. Read at build time, before any tick writes an entry.
 */
export function blackboardWriters(tree: BuiltTree): EntryWriter[] {
  const out: EntryWriter[] = [];
  // Entries a port named already, in the build's order (a node's ports, then its children).
  const named = new Set<BbEntry>();
  const visit = (node: TreeNode) => {
    const { init } = node;
    for (const spec of init.portSpecs) {
      const raw = init.ports.get(spec.name);
      const key = raw === undefined ? undefined : blackboardKeyOf(raw, spec.name);
      if (key === undefined) continue;
      const entry = node.blackboard.getEntry(key);
      if (entry === undefined) continue;
      const first = !named.has(entry);
      named.add(entry);
      const base = { key, entry, node: init.type, at: init.at ?? "" };
      if (spec.direction === "input") {
        const type = bbTypeOfPort(spec.type);
        if (first && type !== "any" && entry.declared === type) {
          out.push({ ...base, writes: { type }, declares: spec.name });
        } else if (!first && (type === "double" || type === "int64" || type === "bool")) {
          out.push({ ...base, writes: { type }, reads: spec.name });
        }
        continue;
      }
      if (init.type === "ReadSignal" && spec.name === "value") {
        const deviceHandle = node.getString("device_handle");
        const signalId = node.getString("signal_id");
        if (deviceHandle.ok && signalId.ok) {
          out.push({
            ...base,
            writes: { deviceHandle: deviceHandle.value, signalId: signalId.value },
          });
        }
        continue;
      }
      const type = bbTypeOfPort(spec.type);
      if (type !== "any") out.push({ ...base, writes: { type } });
    }
    for (const child of node.children) visit(child);
  };
  visit(tree.root);
  return out;
}
