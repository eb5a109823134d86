/**
 * The parsed YAML file: plain data for validation plus the syntax tree, so every diagnostic can
 * point at the line and column of the key (or value) it is about.
 */
import {
  type Alias,
  Composer,
  type CST,
  type Document,
  isAlias,
  isMap,
  isScalar,
  isSeq,
  Lexer,
  LineCounter,
  type Node,
  type Pair,
  type ParseOptions,
  Parser,
  type Scalar,
  type SchemaOptions,
  visit,
  type YAMLMap,
  YAMLParseError,
} from "yaml";
import {
  childSecretState,
  isSecretPath,
  printableKey,
  REDACTED,
  type SecretState,
} from "./_secrets.ts";
import type { Diagnostic } from "./types.ts";

/** One step of a key path: a mapping key or a sequence index. */
export type Segment = string | number;
/** A key path from the root, e.g. `["providers", 1, "restart_policy", "backoff_ms"]`. */
export type Path = readonly Segment[];

/** Bound on alias expansion so a hostile file cannot blow up memory ("billion laughs"). */
const MAX_ALIAS_COUNT = 100;

/**
 * How deep sequences and mappings may nest in a configuration file, the root mapping being level
 * 1: far above any real configuration (examples/full.yaml: 5), far below what overflows the stack
 * in the recursive walks (yaml's composition and toJS, the validation). Checked while the file is
 * parsed, before anything walks the tree: unbounded, `- - - ... 1` overflowed the composer's stack.
 */
export const MAX_YAML_DEPTH = 64;

/**
 * Formats a key path the way diagnostics print it: `providers[1].restart_policy.backoff_ms`. A key
 * that looks like a pasted secret (`auth_token=abc123`) prints as `<redacted>`.
 */
export function formatPath(path: Path): string {
  let out = "";
  for (const seg of path) {
    if (typeof seg === "number") out += `[${seg}]`;
    else out += out === "" ? printableKey(seg) : `.${printableKey(seg)}`;
  }
  return out;
}

/** A position in the file, 1-based. */
export interface Position {
  readonly line: number;
  readonly column: number;
}

/** The text of a file, or where its first byte that is not UTF-8 is. */
export type DecodedText = { ok: true; text: string } | {
  ok: false;
  /** Byte offset of the first byte that does not start (or continue) a valid UTF-8 sequence. */
  offset: number;
  /** Its line and column (column counted like every other diagnostic, in UTF-16 units). */
  position: Position;
};

/**
 * Decodes a file as UTF-8, strictly: an invalid byte is reported with its position instead of
 * being replaced by U+FFFD (which would silently change a key or a value). A leading BOM is
 * skipped.
 */
export function decodeUtf8(bytes: Uint8Array): DecodedText {
  try {
    return { ok: true, text: new TextDecoder("utf-8", { fatal: true }).decode(bytes) };
  } catch {
    // Fall through: find where (only on the error path, valid files are decoded once).
  }
  const offset = Math.max(firstInvalidUtf8(bytes), 0);
  const lineStart = bytes.lastIndexOf(0x0a, offset - 1) + 1;
  let line = 1;
  for (let i = 0; i < lineStart; i++) if (bytes[i] === 0x0a) line++;
  const before = new TextDecoder("utf-8").decode(bytes.subarray(lineStart, offset));
  return { ok: false, offset, position: { line, column: before.length + 1 } };
}

/**
 * Offset of the first byte that is not part of a well-formed UTF-8 sequence (Unicode Table 3-7:
 * no overlong forms, no surrogates, nothing above U+10FFFF), or the start of a truncated sequence;
 * -1 when every byte is valid.
 */
function firstInvalidUtf8(b: Uint8Array): number {
  let i = 0;
  while (i < b.length) {
    const c = b[i];
    if (c! < 0x80) {
      i++;
      continue;
    }
    let need: number;
    let lo = 0x80;
    let hi = 0xbf;
    if (c! >= 0xc2 && c! <= 0xdf) need = 1;
    else if (c! >= 0xe0 && c! <= 0xef) {
      need = 2;
      if (c === 0xe0) lo = 0xa0;
      if (c === 0xed) hi = 0x9f;
    } else if (c! >= 0xf0 && c! <= 0xf4) {
      need = 3;
      if (c === 0xf0) lo = 0x90;
      if (c === 0xf4) hi = 0x8f;
    } else return i;
    for (let k = 1; k <= need; k++) {
      const d = b[i + k];
      if (d === undefined || d < (k === 1 ? lo : 0x80) || d > (k === 1 ? hi : 0xbf)) return i;
    }
    i += need + 1;
  }
  return -1;
}

/**
 * The parsed document, its plain data and a way back from key paths to positions. Lookups are
 * indexed (each mapping's keys once, every alias once), so reporting N diagnostics costs O(N), not
 * O(N x file size): `--check-config` stays linear in the size of the file.
 */
export class YamlSource {
  readonly #doc: Document.Parsed;
  readonly #lines: LineCounter;
  /** Each mapping's pairs by key text, built on the first lookup into that mapping. */
  readonly #pairs = new WeakMap<YAMLMap, Map<string, Pair>>();
  /** Every alias and the node it stands for, built on the first alias met by a lookup. */
  #aliases: Map<Alias, unknown> | null = null;
  #steps = 0;

  private constructor(doc: Document.Parsed, lines: LineCounter) {
    this.#doc = doc;
    this.#lines = lines;
  }

  /**
   * Work done by lookups so far: path steps taken plus YAML nodes visited to build the indexes.
   * Deterministic, so tests can assert that checking stays linear without timing anything.
   */
  get lookupSteps(): number {
    return this.#steps;
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
    let doc: Document.Parsed;
    try {
      // uniqueKeys off: duplicates are found by our own walk, which knows the key path. Merge
      // keys on (`<<: *defaults`), as YAML 1.1 files already have them: off, a YAML 1.2 file's
      // merged keys (a whole restart_policy) were an unknown key `<<` and silently not applied.
      doc = parseBounded(text, lines, {
        uniqueKeys: false,
        merge: true,
        // The library never writes to the console: what it could warn about is a diagnostic.
        logLevel: "error",
      });
    } catch (e) {
      if (!(e instanceof NestedTooDeep)) throw e;
      const { line, col } = lines.linePos(e.offset);
      return {
        source: null,
        data: undefined,
        diagnostics: [{
          severity: "error",
          path: "",
          message: "YAML error: sequences and mappings are nested more than " +
            `${MAX_YAML_DEPTH} levels deep`,
          line: Math.max(line, 1),
          column: Math.max(col, 1),
          file,
        }],
      };
    }
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
    // What makes the conversion throw is reported first, with its position.
    const referenceErrors: Diagnostic[] = [];
    source.#checkReferences(doc.contents, [], file, referenceErrors, new Set());
    if (referenceErrors.length > 0) {
      return { source: null, data: undefined, diagnostics: referenceErrors };
    }
    // The tree is bounded as written; its data, aliases resolved, must be too (before toJS).
    const tooDeep = source.#aliasTooDeep(doc.contents, file);
    if (tooDeep !== null) return { source: null, data: undefined, diagnostics: [tooDeep] };
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
      this.#steps++;
      node = this.#deref(node);
      if (isMap(node)) {
        const pair = this.#pair(node, seg);
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
      this.#steps++;
      node = this.#deref(node);
      if (isMap(node)) {
        const pair = this.#pair(node, seg);
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

  /**
   * The source text of every scalar written under a secret-bearing key (`auth_token: 0x1F` is
   * `0x1F` here, `31` in the data), so diagnostics can be scrubbed of both forms.
   */
  secretScalarTexts(): string[] {
    const out: string[] = [];
    const stack: { node: unknown; state: SecretState }[] = [{
      node: this.#doc.contents,
      state: "plain",
    }];
    for (let top = stack.pop(); top !== undefined; top = stack.pop()) {
      const { node, state } = top;
      if (isMap(node)) {
        for (const pair of node.items) {
          const key = keyText(pair.key) ?? "";
          stack.push({ node: pair.value, state: childSecretState(state, key) });
        }
      } else if (isSeq(node)) {
        node.items.forEach((item, i) =>
          stack.push({ node: item, state: childSecretState(state, i) })
        );
      } else if (state !== "plain" && isScalar(node) && typeof node.source === "string") {
        out.push(node.source);
      }
    }
    return out;
  }

  /**
   * The pair of `map` whose key is `seg` (the last one when a key is repeated), or the pair a
   * merge key brings in: a key written in `map` wins, then the merge sources in order, as the
   * data has it (yaml's toJS keeps a repeated key's last value, and a merged key's first).
   */
  #pair(map: YAMLMap, seg: Segment): Pair | undefined {
    return this.#index(map, new Set()).get(String(seg));
  }

  /** `map`'s pairs by key text, merged ones included (`building`: cycle guard). */
  #index(map: YAMLMap, building: Set<YAMLMap>): Map<string, Pair> {
    let index = this.#pairs.get(map);
    if (index !== undefined) return index;
    index = new Map();
    if (building.has(map)) return index;
    building.add(map);
    const sources: YAMLMap[] = [];
    for (const pair of map.items) {
      this.#steps++;
      if (isMergePair(pair)) {
        for (const s of this.#mergeSources(pair.value)) if (isMap(s)) sources.push(s);
        continue;
      }
      const key = keyText(pair.key);
      // The last copy of a repeated key: the one whose value the data holds.
      if (key !== null) index.set(key, pair);
    }
    for (const source of sources) {
      for (const [key, pair] of this.#index(source, building)) {
        this.#steps++;
        if (!index.has(key)) index.set(key, pair);
      }
    }
    building.delete(map);
    this.#pairs.set(map, index);
    return index;
  }

  /** What a merge key's value names: one node, or each item of a sequence (aliases followed). */
  #mergeSources(value: unknown): unknown[] {
    const node = this.#deref(value);
    return isSeq(node) ? node.items.map((item) => this.#deref(item)) : [node];
  }

  /**
   * What would make the conversion to data throw, or stringify a key, without a position,
   * reported where it is written: an alias naming no anchor defined before it, a merge key whose
   * value is not a mapping (or an alias or a sequence of them), and a key that is a mapping or a
   * sequence (`? [a]`) or a binary or date value: no key of the configuration is one. Also an
   * alias inside the node its anchor names (`a: &a [*a]`): its data would be circular, and every
   * walk of the data (validation, the scrubbing of secrets) would never end. `inside`: the
   * collections `node` is in.
   */
  #checkReferences(
    node: unknown,
    path: Segment[],
    file: string,
    out: Diagnostic[],
    inside: Set<unknown>,
  ): void {
    if (isAlias(node)) {
      const target = this.#deref(node);
      // A token that begins with '*', unquoted, is read as an alias: its name is the secret.
      const name = isSecretPath(path) ? REDACTED : node.source;
      if (target === undefined) {
        out.push(this.#error(
          node,
          path,
          `alias *${name} names no anchor defined before it (&${name})`,
          file,
        ));
      } else if (inside.has(target)) {
        out.push(this.#error(
          node,
          path,
          `alias *${name} is inside the node its anchor names (&${name}): a recursive ` +
            "structure is not allowed",
          file,
        ));
      }
    } else if (isMap(node)) {
      inside.add(node);
      for (const pair of node.items) {
        const key = keyText(pair.key);
        if (key === null) {
          if (isMap(pair.key) || isSeq(pair.key) || isScalar(pair.key)) {
            const got = isMap(pair.key)
              ? "a mapping"
              : isSeq(pair.key)
              ? "a sequence"
              : "a binary or date value";
            out.push(this.#error(pair.key, path, `a key must be a plain name, got ${got}`, file));
          }
          continue;
        }
        const before = out.length;
        this.#checkReferences(pair.value, [...path, key], file, out, inside);
        if (
          isMergePair(pair) && out.length === before &&
          !this.#mergeSources(pair.value).every((s) => isMap(s))
        ) {
          out.push(this.#error(
            pair.key,
            [...path, key],
            "merge key value must be a mapping, an alias of one, or a sequence of them",
            file,
          ));
        }
      }
      inside.delete(node);
    } else if (isSeq(node)) {
      inside.add(node);
      node.items.forEach((item, i) => this.#checkReferences(item, [...path, i], file, out, inside));
      inside.delete(node);
    }
  }

  /**
   * The first alias, in file order, whose node put where the alias stands nests the data deeper
   * than MAX_YAML_DEPTH levels (an alias of a deep node inside another deep node: every line
   * within the bound as written, hundreds of levels once resolved), as an error at the alias
   * naming its key path; null when the data as built is within the bound. parseBounded bounds the
   * tree as written, so this walk recurses at most MAX_YAML_DEPTH levels: an alias is never
   * followed, its node's height was taken when that node was walked (an anchor is defined, and
   * its node ends, before any alias of it: #checkReferences refused the others). A merge key's
   * sources count at the level of the mapping holding it, where their keys land.
   */
  #aliasTooDeep(root: unknown, file: string): Diagnostic | null {
    /** Levels of each collection as built (itself included); a scalar has none. */
    const heights = new Map<unknown, number>();
    let found: Diagnostic | null = null;
    // `level`: the level `node` stands at in the data (the root mapping is level 1).
    const walk = (node: unknown, level: number, path: Segment[]): number => {
      if (isAlias(node)) {
        const height = heights.get(this.#deref(node)) ?? 0;
        if (found === null && level - 1 + height > MAX_YAML_DEPTH) {
          const name = isSecretPath(path) ? REDACTED : node.source;
          found = this.#error(
            node,
            path,
            `YAML error: alias *${name} builds sequences and mappings nested more than ` +
              `${MAX_YAML_DEPTH} levels deep`,
            file,
          );
        }
        return height;
      }
      let height = 0;
      if (isMap(node)) {
        height = 1;
        for (const pair of node.items) {
          const key = keyText(pair.key) ?? "";
          if (isMergePair(pair)) {
            const sources = isSeq(pair.value)
              ? pair.value.items.map((item, i) => walk(item, level, [...path, key, i]))
              : [walk(pair.value, level, [...path, key])];
            if (isSeq(pair.value)) heights.set(pair.value, 1 + Math.max(0, ...sources));
            height = Math.max(height, ...sources);
          } else {
            height = Math.max(height, 1 + walk(pair.value, level + 1, [...path, key]));
          }
        }
      } else if (isSeq(node)) {
        height = 1;
        node.items.forEach((item, i) => {
          height = Math.max(height, 1 + walk(item, level + 1, [...path, i]));
        });
      }
      if (height > 0) heights.set(node, height);
      return height;
    };
    walk(root, 1, []);
    return found;
  }

  /** An error at the start of `node`. */
  #error(node: unknown, path: Path, message: string, file: string): Diagnostic {
    const { line, col } = this.#lines.linePos(rangeStart(node) ?? 0);
    return { severity: "error", path: formatPath(path), message, line, column: col, file };
  }

  /**
   * The node an alias stands for: the last node anchored with its name before it, as the yaml
   * library resolves it; that library's own `resolve` walks the whole document on every call.
   */
  #deref(node: unknown): unknown {
    if (!isAlias(node)) return node;
    if (this.#aliases === null) {
      const aliases = new Map<Alias, unknown>();
      const anchored = new Map<string, unknown>();
      visit(this.#doc, {
        Node: (_key, n) => {
          this.#steps++;
          if (isAlias(n)) aliases.set(n, anchored.get(n.source));
          else if (n.anchor) anchored.set(n.anchor, n);
        },
      });
      this.#aliases = aliases;
    }
    return this.#aliases.get(node);
  }

  /**
   * Duplicate keys are always an error (project rule), reported at the repeated key, the copy the
   * data holds (a repeated merge key: the first, which wins, is named).
   */
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
          const there = this.#lines.linePos(first);
          out.push({
            severity: "error",
            path: formatPath([...path, key]),
            message: `duplicate key (first defined on line ${there.line}, column ${there.col}): ` +
              (isMergePair(pair)
                ? "merge several mappings with one merge key, `<<: [*a, *b]` (the first one " +
                  "listed wins)"
                : "this later copy is the one read"),
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

/** Thrown by parseBounded where a collection lies deeper than MAX_YAML_DEPTH. */
class NestedTooDeep extends Error {
  constructor(readonly offset: number) {
    super(`nested more than ${MAX_YAML_DEPTH} levels deep`);
  }
}

/**
 * yaml's parseDocument, with the nesting depth bounded before the tree is composed: the lexer and
 * the parser keep their open collections on an explicit stack (no recursion), the composer and
 * every later walk recurse once per level. Throws NestedTooDeep at the first collection past
 * MAX_YAML_DEPTH.
 */
function parseBounded(
  text: string,
  lines: LineCounter,
  options: ParseOptions & SchemaOptions & { logLevel: "error" },
): Document.Parsed {
  const parser = new Parser(lines.addNewLine);
  const composer = new Composer(options);
  function* tokens(): Generator<CST.Token> {
    lines.addNewLine(0);
    for (const lexeme of new Lexer().lex(text)) {
      yield* parser.next(lexeme);
      // The stack also holds the document and a scalar or two: count only when it could be over.
      if (parser.stack.length > MAX_YAML_DEPTH) {
        let depth = 0;
        for (const token of parser.stack) {
          if (!isCollectionToken(token)) continue;
          if (++depth > MAX_YAML_DEPTH) throw new NestedTooDeep(token.offset);
        }
      }
    }
    yield* parser.end();
  }
  let doc: Document.Parsed | null = null;
  for (const next of composer.compose(tokens(), true, text.length)) {
    if (doc === null) doc = next;
    else {
      // As parseDocument says it: one document per file.
      doc.errors.push(
        new YAMLParseError(
          [next.range[0], next.range[1]],
          "MULTIPLE_DOCS",
          "Source contains multiple documents; please use YAML.parseAllDocuments()",
        ),
      );
      break;
    }
  }
  // compose(..., forceDoc = true) always yields one document.
  return doc!;
}

function isCollectionToken(
  token: CST.Token,
): token is CST.BlockMap | CST.BlockSequence | CST.FlowCollection {
  return token.type === "block-map" || token.type === "block-seq" ||
    token.type === "flow-collection";
}

/**
 * A key as the data has it (`~:` and `:` are ""), or null for a key that is no plain value (a
 * mapping, a sequence, `!!binary`): those are refused before the conversion.
 */
function keyText(key: unknown): string | null {
  if (!isScalar(key)) return null;
  const value = key.value;
  // A merge key's value is Symbol(<<): it is printed as written.
  if (typeof value === "symbol") return MERGE_KEY;
  if (value === null || value === undefined) return "";
  return typeof value === "object" ? null : String(value);
}

/** How a merge key is written. */
const MERGE_KEY = "<<";

/** Whether a pair is a merge key (`<<: *defaults`) rather than a key of its mapping. */
function isMergePair(pair: Pair): boolean {
  return isScalar(pair.key) && typeof pair.key.value === "symbol";
}

function rangeStart(node: unknown): number | undefined {
  const range = (node as Node | null | undefined)?.range;
  return range ? range[0] : undefined;
}

function firstLine(message: string): string {
  return (message.split("\n")[0])!.trim();
}
