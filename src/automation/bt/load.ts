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
import { parseBehaviorTree, type ParsedTree } from "./parse.ts";
import type { ReadFileAsyncFn, ReadFileFn } from "./services.ts";
import { verifyParsedTree } from "./verify.ts";

/** The clock of a check-only build: nothing runs, so no time passes and no timer fires. */
const CHECK_CLOCK: Clock = {
  nowMs: () => 0,
  monoMs: () => 0,
  setTimer: () => undefined,
  clearTimer: () => {},
};

/**
 * Loads a behavior-tree file (absolute path) with its includes and checks it completely. `tree` is
 * set only when there is no error; diagnostics carry warnings too.
 */
export function loadBehaviorTree(
  path: string,
  readFile: ReadFileFn,
): { tree?: ParsedTree; diagnostics: Diagnostic[] } {
  const { parsed, diagnostics } = parseBehaviorTree(path, readFile);
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
  const { tree, diagnostics } = loadBehaviorTree(path, readFile);
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
  const read = new Map<string, { data: string | Uint8Array } | { error: unknown }>();
  let wanted = new Set<string>([path]);
  /** The first file whose read went unanswered: no read is asked from then on. */
  let hung: string | null = null;
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
  while (wanted.size > 0 && hung === null) {
    const level = [...wanted];
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
    // Finds the includes of what was just read (each file is read once: the map only grows).
    if (hung === null) parseBehaviorTree(path, fromMemory);
  }
  return fromMemory;
}

/**
 * Whether a ReadFileAsyncFn's rejection says the read went unanswered: not answered in time
 * (DEADLINE_EXCEEDED, the read left waiting) or not asked (UNAVAILABLE: too many left waiting).
 */
export function readUnanswered(error: unknown): boolean {
  return error instanceof RuntimeError &&
    (error.code === "DEADLINE_EXCEEDED" || error.code === "UNAVAILABLE");
}
