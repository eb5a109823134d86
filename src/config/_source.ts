/**
 * The parsed YAML file: plain data for validation plus the syntax tree, so every diagnostic can
 * point at the line and column of the key (or value) it is about.
 */
import {
  type Document,
  isAlias,
  isMap,
  isPair,
  isScalar,
  isSeq,
  LineCounter,
  type Node,
  parseDocument,
  type Scalar,
} from "yaml";
import type { Diagnostic } from "./types.ts";

/** One step of a key path: a mapping key or a sequence index. */
export type Segment = string | number;
/** A key path from the root, e.g. `["providers", 1, "restart_policy", "backoff_ms"]`. */
export type Path = readonly Segment[];

/** Bound on alias expansion so a hostile file cannot blow up memory ("billion laughs"). */
const MAX_ALIAS_COUNT = 100;

/** Formats a key path the way diagnostics print it: `providers[1].restart_policy.backoff_ms`. */
export function formatPath(path: Path): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? seg : `.${seg}`;
  }
  return out;
}

/** A position in the file, 1-based. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** The parsed document, its plain data and a way back from key paths to positions. */
export class YamlSource {
  readonly #doc: Document.Parsed;
  readonly #lines: LineCounter;

  private constructor(doc: Document.Parsed, lines: LineCounter) {
    this.#doc = doc;
    this.#lines = lines;
  }

  /**
   * Parses `text`. Returns the source, or only diagnostics when the YAML itself is broken (syntax
   * errors make the tree unreliable, so no further validation is attempted).
   */
  static parse(
    text: string,
    file: string,
  ): { source: YamlSource | null; data: unknown; diagnostics: Diagnostic[] } {
    const lines = new LineCounter();
    // uniqueKeys off: duplicates are found by our own walk, which knows the key path.
    const doc = parseDocument(text, { lineCounter: lines, uniqueKeys: false, prettyErrors: false });
    const diagnostics: Diagnostic[] = [];
    const at = (offset: number): Position => {
      const { line, col } = lines.linePos(offset);
      return { line: Math.max(line, 1), column: Math.max(col, 1) };
    };
    for (const e of doc.errors) {
      diagnostics.push({
        severity: "error",
        path: "",
        message: `YAML syntax error: ${firstLine(e.message)}`,
        ...at(e.pos[0]),
        file,
      });
    }
    if (diagnostics.length > 0) return { source: null, data: undefined, diagnostics };
    for (const w of doc.warnings) {
      diagnostics.push({
        severity: "warning",
        path: "",
        message: `YAML: ${firstLine(w.message)}`,
        ...at(w.pos[0]),
        file,
      });
    }
    const source = new YamlSource(doc, lines);
    let data: unknown;
    try {
      data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT });
    } catch (e) {
      diagnostics.push({
        severity: "error",
        path: "",
        message: `YAML error: ${e instanceof Error ? firstLine(e.message) : String(e)}`,
        line: 1,
        column: 1,
        file,
      });
      return { source: null, data: undefined, diagnostics };
    }
    source.#findDuplicateKeys(doc.contents, [], file, diagnostics);
    return { source, data, diagnostics };
  }

  /**
   * Position of the deepest node on `path`: the key of a mapping entry, or the item of a sequence.
   * When the path leads to a missing key, the position of its closest existing parent.
   */
  position(path: Path): Position {
    let node: unknown = this.#doc.contents;
    let offset = rangeStart(node) ?? 0;
    for (const seg of path) {
      node = this.#deref(node);
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && keyText(p.key) === String(seg));
        if (!pair) break;
        offset = rangeStart(pair.key) ?? offset;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === "number" && seg < node.items.length) {
        node = node.items[seg];
        offset = rangeStart(node) ?? offset;
      } else {
        break;
      }
    }
    const { line, col } = this.#lines.linePos(offset);
    return { line: Math.max(line, 1), column: Math.max(col, 1) };
  }

  /** The scalar node at `path` (aliases followed), or null when the node is not a scalar. */
  scalarAt(path: Path): Scalar | null {
    let node: unknown = this.#doc.contents;
    for (const seg of path) {
      node = this.#deref(node);
      if (isMap(node)) {
        const pair = node.items.find((p) => isPair(p) && keyText(p.key) === String(seg));
        if (!pair) return null;
        node = pair.value;
      } else if (isSeq(node) && typeof seg === "number") {
        node = node.items[seg];
      } else {
        return null;
      }
    }
    node = this.#deref(node);
    return isScalar(node) ? node : null;
  }

  #deref(node: unknown): unknown {
    return isAlias(node) ? node.resolve(this.#doc) : node;
  }

  /** Duplicate keys are always an error (project rule), reported at the repeated key. */
  #findDuplicateKeys(node: unknown, path: Segment[], file: string, out: Diagnostic[]): void {
    if (isMap(node)) {
      const seen = new Map<string, number>();
      for (const pair of node.items) {
        const key = keyText(pair.key);
        if (key === null) continue;
        const offset = rangeStart(pair.key) ?? 0;
        const first = seen.get(key);
        if (first !== undefined) {
          const here = this.#lines.linePos(offset);
          out.push({
            severity: "error",
            path: formatPath([...path, key]),
            message: `duplicate key (first defined on line ${this.#lines.linePos(first).line})`,
            line: here.line,
            column: here.col,
            file,
          });
        } else {
          seen.set(key, offset);
        }
        this.#findDuplicateKeys(pair.value, [...path, key], file, out);
      }
    } else if (isSeq(node)) {
      node.items.forEach((item, i) => this.#findDuplicateKeys(item, [...path, i], file, out));
    }
  }
}

function keyText(key: unknown): string | null {
  if (isScalar(key)) return String(key.value);
  return null;
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as Node | null | undefined)?.range;
  return range ? range[0] : undefined;
}

function firstLine(message: string): string {
  return message.split("\n")[0].trim();
}
