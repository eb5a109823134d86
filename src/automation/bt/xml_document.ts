/**
 * XML text -> element tree with 1-based line/column per element (saxes, namespaces off).
 * Only elements and attributes matter for behavior trees; text, comments and processing
 * instructions are dropped.
 */
import { SaxesParser } from "saxes";
import { errorMessage } from "../../common/mod.ts";

/**
 * How deep elements may nest in one file: past it the file is refused as an XML error at the
 * first element too deep, so that no walk of its elements (they recurse per level) can exhaust
 * the call stack. Twice the deepest tree that loads (verify.ts MAX_TREE_DEPTH).
 */
export const MAX_XML_DEPTH = 512;

/** One XML element with the position of its `<`. */
export interface XmlElement {
  readonly name: string;
  readonly attributes: ReadonlyMap<string, string>;
  readonly children: XmlElement[];
  readonly file: string;
  readonly line: number;
  readonly column: number;
}

/** Result of parsing one file: the root element, or the first XML error with its position. */
export type XmlParseResult =
  | { ok: true; root: XmlElement }
  | { ok: false; message: string; line: number; column: number };

/** Line-start table: offset -> 1-based line/column. */
function lineLocator(text: string): (offset: number) => { line: number; column: number } {
  const starts = [0];
  for (let i = 0; i < text.length; i++) if (text.charCodeAt(i) === 10) starts.push(i + 1);
  return (offset) => {
    let lo = 0;
    let hi = starts.length - 1;
    while (lo < hi) {
      const mid = (lo + hi + 1) >> 1;
      if (starts[mid]! <= offset) lo = mid;
      else hi = mid - 1;
    }
    return { line: lo + 1, column: offset - starts[lo]! + 1 };
  };
}

/** Parses XML text; `file` is recorded on every element for diagnostics. */
export function parseXmlDocument(text: string, file: string): XmlParseResult {
  const parser = new SaxesParser({ position: true });
  const locate = lineLocator(text);
  const stack: { el: XmlElement; attrs: Map<string, string> }[] = [];
  let root: XmlElement | undefined;
  let failure: { message: string; line: number; column: number } | undefined;
  // Start of the tag currently being opened; saxes reports the position after the name.
  let pending: { line: number; column: number } | undefined;

  parser.on("opentagstart", (tag) => {
    // position is just past the character that ended the name: back up over it, the name and `<`.
    const offset = Math.max(0, parser.position - tag.name.length - 2);
    pending = locate(offset);
  });
  parser.on("opentag", (tag) => {
    if (failure) return;
    const attrs = new Map<string, string>();
    for (const [k, v] of Object.entries(tag.attributes)) attrs.set(k, String(v));
    const pos = pending ?? { line: parser.line, column: parser.column };
    if (stack.length === MAX_XML_DEPTH) {
      failure = { message: `elements nested deeper than MAX_XML_DEPTH (${MAX_XML_DEPTH})`, ...pos };
      return;
    }
    const el: XmlElement = {
      name: tag.name,
      attributes: attrs,
      children: [],
      file,
      line: pos.line,
      column: pos.column,
    };
    const parent = stack[stack.length - 1];
    if (parent) parent.el.children.push(el);
    else root = el;
    stack.push({ el, attrs });
  });
  parser.on("closetag", () => {
    stack.pop();
  });
  parser.on("error", (err) => {
    if (failure) return;
    // saxes prefixes "line:column: "; keep the reason only, the position goes into fields.
    const message = err.message.replace(/^\d+:\d+:\s*/, "");
    failure = { message, line: parser.line, column: parser.column + 1 };
  });
  try {
    parser.write(text).close();
  } catch (err) {
    if (!failure) {
      failure = {
        message: errorMessage(err),
        line: parser.line,
        column: parser.column + 1,
      };
    }
  }
  if (failure) return { ok: false, ...failure };
  if (!root) return { ok: false, message: "document has no root element", line: 1, column: 1 };
  return { ok: true, root };
}
