/**
 * Parse step: the top-level tree file and its `<include path>` closure -> tree definitions by ID
 * and the main tree. Reports unreadable files, XML errors, include cycles, duplicate IDs and a
 * missing/ambiguous main tree; node-level checks belong to verify.
 */
import type { Diagnostic } from "../../config/mod.ts";
import {
  cycleText,
  errorAt,
  fileName,
  pathName,
  readErrorText,
  type SourcePos,
  warningAt,
} from "./diagnostics.ts";
import {
  basenameWithoutExtension,
  dirnameOf,
  errorMessage,
  escapeControl,
  MAX_NAMED_IN_WARNING,
  namedList,
  providerText,
  quoteProviderText,
  resolvePath,
} from "../../common/mod.ts";
import type { ReadFileFn } from "./services.ts";
import { parseXmlDocument, type XmlElement } from "./xml_document.ts";

/** One `<BehaviorTree ID>` definition. */
export interface TreeDefinition {
  readonly id: string;
  /** The `<BehaviorTree>` element. */
  readonly element: XmlElement;
  /** Its single root node; undefined when it has none or several (reported). */
  readonly root: XmlElement | undefined;
  readonly file: string;
}

/** A parsed tree file with its includes. */
export interface ParsedTree {
  /** Absolute path of the top-level file. */
  readonly path: string;
  /** File basename without extension (automation_version.id). */
  readonly id: string;
  /** Exact bytes of the top-level file (the version digest covers only these). */
  readonly bytes: Uint8Array;
  /** Main tree ID; undefined when missing or ambiguous (reported). */
  readonly mainTreeId: string | undefined;
  readonly trees: ReadonlyMap<string, TreeDefinition>;
  /** Every file read, top-level first. */
  readonly files: readonly string[];
  /** The text of each of `files`, in the same order (what a reload compares). */
  readonly texts: readonly string[];
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

/** The text and bytes of the file at `path`, read through `readFile` (as the parse reads them). */
export function readBoth(readFile: ReadFileFn, path: string): { text: string; bytes: Uint8Array } {
  const data = readFile(path);
  if (typeof data === "string") return { text: data, bytes: encoder.encode(data) };
  return { text: decoder.decode(data), bytes: data };
}

/** Reads and parses the tree file at `path` (absolute) with its includes. */
export function parseBehaviorTree(
  path: string,
  readFile: ReadFileFn,
): { parsed?: ParsedTree; diagnostics: Diagnostic[] } {
  const diagnostics: Diagnostic[] = [];
  const fileStart: SourcePos = { file: path, line: 0, column: 0 };
  let top: { text: string; bytes: Uint8Array };
  try {
    top = readBoth(readFile, path);
  } catch (err) {
    diagnostics.push(
      errorAt(fileStart, "", `cannot read behavior tree file: ${errorMessage(err)}`),
    );
    return { diagnostics };
  }
  const trees = new Map<string, TreeDefinition>();
  const files: string[] = [];
  const texts: string[] = [];
  let generatedIds = 0;

  const loadDocument = (file: string, text: string, chain: string[]): XmlElement | undefined => {
    files.push(file);
    texts.push(text);
    const xml = parseXmlDocument(text, file);
    if (!xml.ok) {
      diagnostics.push(errorAt({ file, line: xml.line, column: xml.column }, "", xml.message));
      return undefined;
    }
    const root = xml.root;
    if (root.name !== "root") {
      diagnostics.push(
        // An XML name (no quote, no '>', no control character in it) of any length: cut.
        errorAt(root, "", `the root element must be <root>, found <${providerText(root.name)}>`),
      );
      return undefined;
    }
    const format = root.attributes.get("BTCPP_format");
    if (format === undefined) {
      diagnostics.push(
        warningAt(root, "", `<root> has no BTCPP_format attribute; assuming BTCPP_format="4"`),
      );
    } else if (format.trim() !== "4") {
      diagnostics.push(
        errorAt(
          root,
          "",
          `BTCPP_format=${quoteProviderText(format)} is not supported; only version 4 trees load`,
        ),
      );
    }
    const treeElements = root.children.filter((c) => c.name === "BehaviorTree");
    for (const child of root.children) {
      if (child.name === "BehaviorTree") {
        let id = child.attributes.get("ID");
        if (id === undefined || id.trim() === "") {
          if (treeElements.length > 1) {
            diagnostics.push(
              errorAt(child, "", "<BehaviorTree> needs an ID when a file defines several trees"),
            );
            continue;
          }
          id = `BehaviorTree_${generatedIds++}`;
        }
        const nodes = child.children;
        if (nodes.length !== 1) {
          diagnostics.push(
            errorAt(
              child,
              pathName(id),
              // The tree file's ID, any length and any character: cut and quoted, as config text.
              `BehaviorTree ${
                quoteProviderText(id)
              } must have exactly one root node (has ${nodes.length})`,
            ),
          );
        }
        const prev = trees.get(id);
        if (prev) {
          diagnostics.push(
            errorAt(
              child,
              pathName(id),
              `duplicate BehaviorTree ID ${
                quoteProviderText(id)
              } (first defined at ${prev.file}:${prev.element.line})`,
            ),
          );
          continue;
        }
        trees.set(id, {
          id,
          element: child,
          root: nodes.length === 1 ? nodes[0] : undefined,
          file,
        });
      } else if (child.name === "include") {
        loadInclude(child, file, chain);
      } else if (child.name !== "TreeNodesModel") {
        diagnostics.push(
          warningAt(
            child,
            "",
            `unknown element <${providerText(child.name)}> under <root> ignored`,
          ),
        );
      }
    }
    return root;
  };

  const loadInclude = (el: XmlElement, from: string, chain: string[]): void => {
    if (el.attributes.has("ros_pkg")) {
      diagnostics.push(errorAt(el, "", "<include ros_pkg> is not supported; use a relative path"));
      return;
    }
    const rel = el.attributes.get("path");
    if (rel === undefined || rel.trim() === "") {
      diagnostics.push(errorAt(el, "", "<include> needs a path attribute"));
      return;
    }
    const target = resolvePath(dirnameOf(from), rel.trim());
    if (chain.includes(target)) {
      // Paths from the tree files' `<include path>`: each cut, the chain bounded.
      const cycle = cycleText([...chain.slice(chain.indexOf(target)), target], fileName);
      diagnostics.push(errorAt(el, "", `include cycle: ${cycle}`));
      return;
    }
    // A file included twice through different branches (diamond) is loaded once.
    if (files.includes(target)) return;
    let text: string;
    try {
      text = readBoth(readFile, target).text;
    } catch (err) {
      diagnostics.push(
        errorAt(
          el,
          "",
          `cannot read included file ${fileName(target)}: ${readErrorText(errorMessage(err))}`,
        ),
      );
      return;
    }
    loadDocument(target, text, [...chain, target]);
  };

  const root = loadDocument(path, top.text, [path]);
  if (!root) return { diagnostics };

  let mainTreeId: string | undefined;
  const mainAttr = root.attributes.get("main_tree_to_execute");
  if (mainAttr !== undefined) {
    if (trees.has(mainAttr)) mainTreeId = mainAttr;
    else {
      diagnostics.push(
        errorAt(
          root,
          "",
          `main_tree_to_execute=${quoteProviderText(mainAttr)} names no BehaviorTree (known: ${
            knownTrees(trees.keys()) || "none"
          })`,
        ),
      );
    }
  } else if (trees.size === 1) {
    mainTreeId = [...trees.keys()][0];
  } else if (trees.size === 0) {
    diagnostics.push(errorAt(root, "", "no <BehaviorTree> defined"));
  } else {
    diagnostics.push(
      errorAt(
        root,
        "",
        `several BehaviorTrees (${knownTrees(trees.keys())}) and no main_tree_to_execute ` +
          `on <root>: the main tree is ambiguous`,
      ),
    );
  }
  return {
    parsed: {
      path,
      id: basenameWithoutExtension(path),
      bytes: top.bytes,
      mainTreeId,
      trees,
      files,
      texts,
    },
    diagnostics,
  };
}

/**
 * The IDs of a file's trees as a message lists them, unquoted: each cut and its control
 * characters escaped (the tree file's text, any length and any character), up to
 * MAX_NAMED_IN_WARNING named and the rest counted, so a file of many trees makes no line of any
 * length.
 */
function knownTrees(ids: Iterable<string>): string {
  return namedList([...ids], MAX_NAMED_IN_WARNING, (id) => escapeControl(providerText(id)));
}
