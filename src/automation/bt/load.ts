/** Public entry points: load (parse + verify + check-build) and verify-only for --check-config. */
import { type Clock, RuntimeError } from "../../common/mod.ts";
import { type Diagnostic, PATH_QUESTIONS_IN_FLIGHT } from "../../config/mod.ts";
import { unwrittenBlackboardReads } from "./blackboard_keys.ts";
import { buildTree } from "./build.ts";
import { subTreeLiteralProblems } from "./device_handles.ts";
import { hasErrors } from "./diagnostics.ts";
import {
  type DeclaredParameters,
  literalParameterReads,
  parameterReadProblems,
} from "./parameter_reads.ts";
import { parseBehaviorTree, type ParsedTree, readBoth } from "./parse.ts";
import type { ReadFileAsyncFn, ReadFileFn } from "./services.ts";
import { verifyParsedTree } from "./verify.ts";

/** The clock of a check-only build: nothing runs, so no time passes and no timer fires. */
const CHECK_CLOCK: Clock = {
  nowMs: () => 0,
  monoMs: () => 0,
  setTimer: () => undefined,
  clearTimer: () => {},
};

/** What parseBehaviorTree answers: the parsed tree, when it parses, and its diagnostics. */
export type TreeParse = ReturnType<typeof parseBehaviorTree>;

/**
 * Loads a behavior-tree file (absolute path) with its includes and checks it completely. `tree` is
 * set only when there is no error; diagnostics carry warnings too.
 */
export function loadBehaviorTree(
  path: string,
  readFile: ReadFileFn,
): { tree?: ParsedTree; diagnostics: Diagnostic[] } {
  return loadParsedTree(parseBehaviorTree(path, readFile));
}

/** loadBehaviorTree of a tree already parsed (its diagnostics array is not changed). */
function loadParsedTree(parse: TreeParse): { tree?: ParsedTree; diagnostics: Diagnostic[] } {
  const { parsed } = parse;
  const diagnostics = [...parse.diagnostics];
  if (!parsed) return { diagnostics };
  diagnostics.push(...verifyParsedTree(parsed));
  if (hasErrors(diagnostics)) return { diagnostics };
  // A SubTree port's literal read as a device handle is judged as one written in the node.
  diagnostics.push(...subTreeLiteralProblems(parsed));
  // Only the tree writes its blackboard: a key it reads that nothing writes never has a value.
  diagnostics.push(...unwrittenBlackboardReads(parsed));
  if (hasErrors(diagnostics)) return { diagnostics };
  // A check-only build finds blackboard port type conflicts (BT.CPP reports them at creation).
  const built = buildTree(parsed, { clock: CHECK_CLOCK });
  diagnostics.push(...built.diagnostics);
  if (hasErrors(diagnostics)) return { diagnostics };
  return { tree: parsed, diagnostics };
}

/**
 * Every diagnostic of a tree file, for `--check-config`; with `parameters` (the configuration's
 * automation.parameters) also every parameter it reads that they do not declare as it reads it.
 */
export function verifyBehaviorTreeFile(
  path: string,
  readFile: ReadFileFn,
  parameters?: DeclaredParameters,
): Diagnostic[] {
  return verifyParsedTreeFile(parseBehaviorTree(path, readFile), parameters);
}

/** verifyBehaviorTreeFile of a tree file already parsed. */
export function verifyParsedTreeFile(
  parse: TreeParse,
  parameters?: DeclaredParameters,
): Diagnostic[] {
  const { tree, diagnostics } = loadParsedTree(parse);
  if (tree === undefined || parameters === undefined) return diagnostics;
  return [...diagnostics, ...parameterReadProblems(literalParameterReads(tree), parameters)];
}

/**
 * The tree file at `path` and every file it includes, read through `readFile` (asynchronous: the
 * runtime's reads off the event loop's thread, each bounded), then served from memory by the
 * returned ReadFileFn -- so a reload loads and checks a tree without a synchronous read. The
 * includes are found by parsing what has been read: the files of one level are read, at most
 * PATH_QUESTIONS_IN_FLIGHT at once (each read that hangs holds one of the process's worker
 * threads until it returns), then the next level's. A file that could not be read is served as
 * its error (the load then says `cannot read included file <path>: <why>`). Once one read goes
 * unanswered (rejected as such: readUnanswered), no further read is asked: each file not read is
 * served as `not asked: the read of <path> did not answer`. One the load asks for that was never
 * read otherwise (it cannot: the same parse found them) throws.
 */
export async function readTreeFiles(path: string, readFile: ReadFileAsyncFn): Promise<ReadFileFn> {
  return (await readTreeLevels(path, readFile, parseBehaviorTree, null)).readFile;
}

/** What readTreeLevels read, and what it found. */
interface TreeLevels {
  /** The files read, served from memory (readTreeFiles). */
  readonly readFile: ReadFileFn;
  /** The files read, level by level as they were asked: the first is [path]. */
  readonly levels: readonly (readonly string[])[];
  /** The text of each file read; null when one was not (its error, or no answer). */
  readonly texts: ReadonlyMap<string, string> | null;
  /**
   * The parse of every file read, once the last level was read (the parse the check needs, not
   * asked twice); null when none was needed: every file read with the text `known` had.
   */
  readonly parse: TreeParse | null;
}

/**
 * readTreeFiles, finding the includes of a level by parsing what has been read -- unless every
 * file read so far has the text it had in `known` (the last check's reads of the same path): the
 * includes are named by those texts, so the next level is the one `known` read, asked without a
 * parse. Reads exactly the files readTreeFiles would, in the same levels.
 */
async function readTreeLevels(
  path: string,
  readFile: ReadFileAsyncFn,
  parse: (path: string, readFile: ReadFileFn) => TreeParse,
  known: TreeCheck | null,
): Promise<TreeLevels> {
  const read = new Map<string, { data: string | Uint8Array } | { error: unknown }>();
  const levels: string[][] = [];
  let wanted = new Set<string>([path]);
  /** The first file whose read went unanswered: no read is asked from then on. */
  let hung: string | null = null;
  /** Every file read so far was read with the text `known` had. */
  let same = known !== null && known.path === path;
  let lastParse: TreeParse | null = null;
  const fromMemory: ReadFileFn = (p) => {
    const r = read.get(p);
    if (r === undefined) {
      if (hung !== null) throw new Error(`not asked: the read of ${hung} did not answer`);
      wanted.add(p);
      throw new Error(`${p} was not read`);
    }
    if ("error" in r) throw r.error;
    return r.data;
  };
  const textOf = (p: string): string | null => {
    const r = read.get(p);
    return r === undefined || "error" in r ? null : readBoth(fromMemory, p).text;
  };
  while (wanted.size > 0 && hung === null) {
    const level = [...wanted];
    levels.push(level);
    wanted = new Set();
    let next = 0;
    const reader = async () => {
      while (next < level.length && hung === null) {
        const p = level[next++]!;
        try {
          read.set(p, { data: await readFile(p) });
        } catch (error) {
          read.set(p, { error });
          if (readUnanswered(error)) hung ??= p;
        }
      }
    };
    const readers = Math.min(PATH_QUESTIONS_IN_FLIGHT, level.length);
    await Promise.all(Array.from({ length: readers }, reader));
    if (hung !== null) break;
    same &&= level.every((p) => {
      const text = textOf(p);
      return text !== null && text === known!.texts.get(p);
    });
    if (same) {
      // The same texts name the same includes: the next level is the one `known` read.
      wanted = new Set(known!.levels[levels.length] ?? []);
      lastParse = null;
    } else {
      // Finds the includes of what was just read (each file is read once: the map only grows).
      lastParse = parse(path, fromMemory);
    }
  }
  // A read left unanswered ended the levels early: the last parse did not see every file.
  if (hung !== null) return { readFile: fromMemory, levels, texts: null, parse: null };
  const complete = same ? null : lastParse;
  const texts = new Map<string, string>();
  for (const p of read.keys()) {
    const text = textOf(p);
    if (text === null) return { readFile: fromMemory, levels, texts: null, parse: complete };
    texts.set(p, text);
  }
  return { readFile: fromMemory, levels, texts, parse: complete };
}

/** One check of a tree (TreeChecks): what it read and what it found. */
interface TreeCheck {
  readonly path: string;
  /** The files read, level by level (readTreeLevels). */
  readonly levels: readonly (readonly string[])[];
  /** The text of every file read. */
  readonly texts: ReadonlyMap<string, string>;
  /** The declared parameters it judged the tree's reads by (undefined: none judged). */
  readonly parameters: DeclaredParameters | undefined;
  readonly diagnostics: readonly Diagnostic[];
}

/** What TreeChecks parses and verifies with (tests count them). */
export interface TreeCheckSteps {
  /** Default parseBehaviorTree. */
  readonly parse?: (path: string, readFile: ReadFileFn) => TreeParse;
  /** Default verifyParsedTreeFile. */
  readonly verify?: (parse: TreeParse, parameters?: DeclaredParameters) => Diagnostic[];
}

/**
 * A configuration reload's checks of the behavior tree, one after another (main.ts configReload):
 * the tree and its includes read (readTreeFiles) and verified (verifyBehaviorTreeFile). What a
 * check finds depends only on the tree's path, the text of every file it reads and the declared
 * parameters it judges the tree's reads by; so a check whose files all read with the last check's
 * texts, against the same declarations, is answered with the last check's diagnostics, neither
 * parsed nor verified again. Anything else is checked in full, from one parse (the one that found
 * the last includes). A check that could not read a file is not kept. The tree's calls are judged
 * against what the devices declare by the automation engine (refusedCallsOf), not here.
 */
export class TreeChecks {
  readonly #parse: (path: string, readFile: ReadFileFn) => TreeParse;
  readonly #verify: (parse: TreeParse, parameters?: DeclaredParameters) => Diagnostic[];
  /** The last check that read every file: its texts (the tree's size, bounded by its reads). */
  #last: TreeCheck | null = null;

  constructor(steps: TreeCheckSteps = {}) {
    this.#parse = steps.parse ?? parseBehaviorTree;
    this.#verify = steps.verify ?? verifyParsedTreeFile;
  }

  /**
   * Reads the tree at `path` and its includes as readTreeFiles does; `verify` then checks them:
   * every diagnostic of the tree, with `parameters` its reads of undeclared ones too.
   */
  async read(path: string, readFile: ReadFileAsyncFn): Promise<{
    readonly readFile: ReadFileFn;
    verify(parameters?: DeclaredParameters): Diagnostic[];
  }> {
    const known = this.#last;
    const got = await readTreeLevels(path, readFile, this.#parse, known);
    return {
      readFile: got.readFile,
      verify: (parameters) => {
        if (
          got.texts !== null && got.parse === null && known !== null &&
          sameParameters(known.parameters, parameters)
        ) {
          return [...known.diagnostics];
        }
        const parse = got.parse ?? this.#parse(path, got.readFile);
        const diagnostics = this.#verify(parse, parameters);
        if (got.texts !== null) {
          const judged = parameters === undefined ? undefined : new Map(parameters);
          this.#last = {
            path,
            levels: got.levels,
            texts: got.texts,
            parameters: judged,
            diagnostics,
          };
        }
        return [...diagnostics];
      },
    };
  }
}

/** Whether two declarations of parameters are the same names with the same types. */
function sameParameters(
  a: DeclaredParameters | undefined,
  b: DeclaredParameters | undefined,
): boolean {
  if (a === undefined || b === undefined) return a === b;
  if (a.size !== b.size) return false;
  for (const [name, type] of a) if (b.get(name) !== type) return false;
  return true;
}

/**
 * Whether a ReadFileAsyncFn's rejection says the read went unanswered: not answered in time
 * (DEADLINE_EXCEEDED, the read left waiting) or not asked (UNAVAILABLE: too many left waiting).
 */
export function readUnanswered(error: unknown): boolean {
  return error instanceof RuntimeError &&
    (error.code === "DEADLINE_EXCEEDED" || error.code === "UNAVAILABLE");
}
