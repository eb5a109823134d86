/**
 * The mutation operators StrykerJS lacks (deno task mutate): slips a programmer really makes that
 * its mutators never produce. Stryker 10 takes plugins for checkers, test runners, reporters and
 * ignorers only (`PluginKind` in @stryker-mutator/api), and its instrumenter applies a fixed list
 * of mutators (`allMutators`), so these are generated here, from the TypeScript compiler's syntax
 * tree, and run like Stryker's: each mutant against the scope's test files that reach it.
 *
 *  - CompoundAssignment: `a op= b` -> `a = b` for every compound operator (`+=`, `|=`, `??=`, ...);
 *  - SwitchCase: one `case` clause of a `switch` removed, with its body (one mutant per case);
 *  - CatchFailOpen: a `catch` that returns or throws (fails closed) lets the operation through:
 *    its body becomes `return null;` when the enclosing function's other returns include `null`
 *    (a gate whose null means "allowed"), else an empty block;
 *  - AwaitDropped: `await x` -> `x`;
 *  - ConcurrentCall: a method-call statement on `this...` or a local (`obj.m(args);`,
 *    `await obj.m(args);`) run twice at once: `void obj.m(args); await obj.m(args);`.
 *
 * A mutant is (file, span, replacement, operator). The runner copies the repository into a
 * sandbox per worker, records with `deno test --coverage` which lines each test file of the scope
 * reaches, and runs a mutant's file with the mutant applied against the files that reach its line
 * (every file when none does: code only a child process runs); a mutant that survives a subset is
 * run again against every file before it counts as survived. Results are written in Stryker's
 * mutation-testing-report schema (tools/mutation/reports/<scope>.extra.json), which `--report`
 * merges into docs/mutation-report.md.
 */
import ts from "typescript";
import {
  EXTRA_OPERATORS,
  type MutationScope,
  parseScopeFile,
  skipArgs,
  type StrykerReport,
} from "./mutation_report.ts";

export { EXTRA_OPERATORS };
import { testFiles, testStages } from "./mutant_tests.ts";

export type ExtraOperator = typeof EXTRA_OPERATORS[number];

/** One generated mutant: replace source[start, end) with `replacement`. */
export interface ExtraMutant {
  readonly operator: ExtraOperator;
  /** Character offsets into the source. */
  readonly start: number;
  readonly end: number;
  readonly replacement: string;
  /** 1-based line of the mutant's start: the line whose coverage says a test reaches it. */
  readonly line: number;
}

const COMPOUND = new Set<ts.SyntaxKind>([
  ts.SyntaxKind.PlusEqualsToken,
  ts.SyntaxKind.MinusEqualsToken,
  ts.SyntaxKind.AsteriskEqualsToken,
  ts.SyntaxKind.AsteriskAsteriskEqualsToken,
  ts.SyntaxKind.SlashEqualsToken,
  ts.SyntaxKind.PercentEqualsToken,
  ts.SyntaxKind.LessThanLessThanEqualsToken,
  ts.SyntaxKind.GreaterThanGreaterThanEqualsToken,
  ts.SyntaxKind.GreaterThanGreaterThanGreaterThanEqualsToken,
  ts.SyntaxKind.AmpersandEqualsToken,
  ts.SyntaxKind.BarEqualsToken,
  ts.SyntaxKind.CaretEqualsToken,
  ts.SyntaxKind.BarBarEqualsToken,
  ts.SyntaxKind.AmpersandAmpersandEqualsToken,
  ts.SyntaxKind.QuestionQuestionEqualsToken,
]);

/** Names of loggers: their calls are log text, not behaviour (as tools/mutation/ignore_logging.js). */
const LOGGER = /^#?(log|logger)$/i;

function isFunctionLike(node: ts.Node): node is ts.SignatureDeclaration {
  return ts.isFunctionDeclaration(node) || ts.isFunctionExpression(node) ||
    ts.isArrowFunction(node) || ts.isMethodDeclaration(node) ||
    ts.isConstructorDeclaration(node) ||
    ts.isGetAccessorDeclaration(node) || ts.isSetAccessorDeclaration(node);
}

function enclosingFunction(node: ts.Node): ts.SignatureDeclaration | null {
  for (let n = node.parent; n !== undefined; n = n.parent) {
    if (isFunctionLike(n)) return n;
  }
  return null;
}

/** Visits `node`'s descendants that belong to the same function (not nested functions). */
function walkOwn(node: ts.Node, visit: (n: ts.Node) => void): void {
  node.forEachChild((child) => {
    if (isFunctionLike(child) || ts.isClassLike(child)) return;
    visit(child);
    walkOwn(child, visit);
  });
}

/** Whether a block has a `return` or `throw` of its own (the catch refuses: fails closed). */
function returnsOrThrows(block: ts.Block): boolean {
  let found = false;
  walkOwn(block, (n) => {
    if (ts.isReturnStatement(n) || ts.isThrowStatement(n)) found = true;
  });
  return found;
}

/** Whether the function returns `null` somewhere outside a catch clause. */
function returnsNullOutsideCatch(fn: ts.SignatureDeclaration): boolean {
  const body = (fn as { body?: ts.Node }).body;
  if (body === undefined) return false;
  if (!ts.isBlock(body)) return body.kind === ts.SyntaxKind.NullKeyword;
  let found = false;
  const visit = (n: ts.Node, inCatch: boolean): void => {
    n.forEachChild((child) => {
      if (isFunctionLike(child) || ts.isClassLike(child)) return;
      const catching = inCatch || ts.isCatchClause(child);
      if (
        !catching && ts.isReturnStatement(child) &&
        child.expression !== undefined &&
        child.expression.kind === ts.SyntaxKind.NullKeyword
      ) found = true;
      visit(child, catching);
    });
  };
  visit(body, false);
  return found;
}

/** Names declared in the enclosing functions: parameters and variables (not module scope). */
function isLocal(id: ts.Identifier): boolean {
  for (
    let fn = enclosingFunction(id);
    fn !== null;
    fn = enclosingFunction(fn)
  ) {
    for (const p of fn.parameters) if (bindsName(p.name, id.text)) return true;
    const body = (fn as { body?: ts.Node }).body;
    if (body === undefined) continue;
    let found = false;
    walkOwn(body, (n) => {
      if (ts.isVariableDeclaration(n) && bindsName(n.name, id.text)) {
        found = true;
      }
    });
    if (found) return true;
  }
  return false;
}

function bindsName(name: ts.BindingName, text: string): boolean {
  if (ts.isIdentifier(name)) return name.text === text;
  return name.elements.some((e) => !ts.isOmittedExpression(e) && bindsName(e.name, text));
}

/** The root of a property-access chain (`this` in `this.#o.bus`), and whether a link is a logger. */
function chainRoot(
  expr: ts.Expression,
): { root: ts.Expression; logger: boolean } {
  let logger = false;
  let e = expr;
  while (ts.isPropertyAccessExpression(e) || ts.isNonNullExpression(e)) {
    if (ts.isPropertyAccessExpression(e) && LOGGER.test(e.name.text)) {
      logger = true;
    }
    e = e.expression;
  }
  if (ts.isIdentifier(e) && LOGGER.test(e.text)) logger = true;
  return { root: e, logger };
}

/**
 * Map/Set/Array methods whose second call at once is not a concurrency slip (they are
 * synchronous, and idempotent or plainly counted).
 */
const COLLECTION = new Set([
  "set",
  "add",
  "delete",
  "clear",
  "has",
  "get",
  "push",
  "splice",
  "forEach",
]);

function isAsync(fn: ts.SignatureDeclaration | null): boolean {
  return fn !== null &&
    (ts.getCombinedModifierFlags(fn as ts.Declaration) &
        ts.ModifierFlags.Async) !== 0;
}

/** A method call on `this...` or a local (`obj.m(args)`), not a free function, not a logger. */
function isMethodCallOnObject(
  call: ts.Expression,
): call is ts.CallExpression & { expression: ts.PropertyAccessExpression } {
  if (
    !ts.isCallExpression(call) ||
    !ts.isPropertyAccessExpression(call.expression)
  ) return false;
  const { root, logger } = chainRoot(call.expression.expression);
  if (logger) return false;
  if (root.kind === ts.SyntaxKind.ThisKeyword) {
    return call.expression.expression !== root;
  }
  return ts.isIdentifier(root) && isLocal(root);
}

/**
 * `return await x` (or an arrow's `await x` body) outside a `try` block: dropping the await
 * changes nothing there (the function's promise settles as x does), so it is no mutant.
 */
function isPlainReturnAwait(node: ts.AwaitExpression): boolean {
  const parent = node.parent;
  const returned = ts.isReturnStatement(parent) ||
    (ts.isArrowFunction(parent) && parent.body === node);
  if (!returned) return false;
  for (
    let n: ts.Node = parent;
    n !== undefined && !isFunctionLike(n);
    n = n.parent
  ) {
    if (ts.isTryStatement(n.parent) && n.parent.tryBlock === n) return false;
  }
  return true;
}

/** Every mutant of the five operators in a TypeScript source, in source order. */
export function generateMutants(
  source: string,
  fileName = "mutant.ts",
): ExtraMutant[] {
  const sf = ts.createSourceFile(
    fileName,
    source,
    ts.ScriptTarget.Latest,
    true,
    ts.ScriptKind.TS,
  );
  const out: ExtraMutant[] = [];
  const line = (pos: number) => sf.getLineAndCharacterOfPosition(pos).line + 1;
  const add = (
    operator: ExtraOperator,
    start: number,
    end: number,
    replacement: string,
  ) => {
    if (source.slice(start, end) === replacement) return;
    out.push({ operator, start, end, replacement, line: line(start) });
  };
  const visit = (node: ts.Node): void => {
    if (ts.isBinaryExpression(node) && COMPOUND.has(node.operatorToken.kind)) {
      const start = node.getStart(sf);
      add(
        "CompoundAssignment",
        start,
        node.end,
        source.slice(start, node.operatorToken.getStart(sf)) + "=" +
          source.slice(node.operatorToken.end, node.end),
      );
    }
    if (ts.isCaseClause(node)) {
      add("SwitchCase", node.getStart(sf), node.end, "");
    }
    if (ts.isCatchClause(node) && returnsOrThrows(node.block)) {
      const fn = enclosingFunction(node);
      const body = fn !== null && returnsNullOutsideCatch(fn) ? "{ return null; }" : "{}";
      add("CatchFailOpen", node.block.getStart(sf), node.block.end, body);
    }
    if (ts.isAwaitExpression(node) && !isPlainReturnAwait(node)) {
      add(
        "AwaitDropped",
        node.getStart(sf),
        node.end,
        node.expression.getText(sf),
      );
    }
    if (ts.isExpressionStatement(node)) {
      const e = node.expression;
      const awaited = ts.isAwaitExpression(e);
      const voided = ts.isVoidExpression(e);
      const call = awaited || voided ? e.expression : e;
      // Concurrent only where the call may be asynchronous: awaited, voided (fire and forget),
      // or a plain statement in an async function; a synchronous call made twice is not this slip.
      const mayBeAsync = awaited || voided || isAsync(enclosingFunction(node));
      if (
        mayBeAsync && isMethodCallOnObject(call) &&
        !COLLECTION.has(call.expression.name.text)
      ) {
        const start = node.getStart(sf);
        const text = call.getText(sf);
        add(
          "ConcurrentCall",
          start,
          node.end,
          `void ${text}; ${awaited ? "await " : voided ? "void " : ""}${text};`,
        );
      }
    }
    node.forEachChild(visit);
  };
  visit(sf);
  return out.sort((a, b) => a.start - b.start || a.end - b.end);
}

/** The source with one mutant applied. */
export function applyMutant(source: string, m: ExtraMutant): string {
  return source.slice(0, m.start) + m.replacement + source.slice(m.end);
}

/** 1-based line and column of an offset (the report schema's positions). */
function position(
  source: string,
  offset: number,
): { line: number; column: number } {
  const before = source.slice(0, offset);
  const nl = before.lastIndexOf("\n");
  return { line: before.split("\n").length, column: offset - nl };
}

/** Lines with a hit per source file (absolute path -> lines) from `deno coverage --lcov`. */
export function parseLcov(lcov: string): Map<string, Set<number>> {
  const out = new Map<string, Set<number>>();
  let current: Set<number> | null = null;
  for (const raw of lcov.split("\n")) {
    const l = raw.trim();
    if (l.startsWith("SF:")) {
      const path = l.slice(3);
      current = out.get(path) ?? new Set();
      out.set(path, current);
    } else if (l.startsWith("DA:") && current !== null) {
      const [lineNo, count] = l.slice(3).split(",");
      if (Number(count) > 0) current.add(Number(lineNo));
    } else if (l === "end_of_record") current = null;
  }
  return out;
}

/** One mutant's outcome, as in the report schema. */
export type ExtraStatus = "Killed" | "Survived" | "Timeout";

/** The report (mutation-testing-report schema) of the mutants of some files. */
export function extraReport(
  files: ReadonlyArray<{
    path: string;
    source: string;
    mutants: ReadonlyArray<{ mutant: ExtraMutant; status: ExtraStatus }>;
  }>,
): StrykerReport & {
  schemaVersion: string;
  thresholds: { high: number; low: number };
} {
  let id = 0;
  const report: Record<
    string,
    StrykerReport["files"][string] & { language: string }
  > = {};
  for (const f of files) {
    report[f.path] = {
      language: "typescript",
      source: f.source,
      mutants: f.mutants.map(({ mutant, status }) => ({
        id: `x${++id}`,
        mutatorName: mutant.operator,
        replacement: mutant.replacement,
        status,
        location: {
          start: position(f.source, mutant.start),
          end: position(f.source, mutant.end),
        },
      })),
    };
  }
  return {
    schemaVersion: "2",
    thresholds: { high: 85, low: 60 },
    files: report,
  };
}

/** What the runner needs from its caller. */
export interface ExtraRunOptions {
  readonly root: string;
  /** Where the JSON report goes. */
  readonly out: string;
  /** Sandboxes (one mutant at a time each). */
  readonly workers: number;
  /** Deno test workers per mutant run. */
  readonly jobsPerMutant: string;
}

/** Copies the repository (without .git, the mutation tool and build output) to a new folder. */
async function makeSandbox(root: string, dir: string): Promise<void> {
  await Deno.mkdir(dir, { recursive: true });
  const pack = new Deno.Command("tar", {
    args: [
      "-C",
      root,
      "--exclude=./.git",
      "--exclude=./tools/mutation/node_modules",
      "--exclude=./tools/mutation/reports",
      "--exclude=./.stryker-tmp",
      "--exclude=./dist",
      "--exclude=./bench/results",
      "-cf",
      "-",
      ".",
    ],
    stdout: "piped",
  }).spawn();
  const unpack = new Deno.Command("tar", {
    args: ["-C", dir, "-xf", "-"],
    stdin: "piped",
  })
    .spawn();
  await pack.stdout.pipeTo(unpack.stdin);
  const [a, b] = await Promise.all([pack.status, unpack.status]);
  if (!a.success || !b.success) {
    throw new Error(`mutate: could not copy the repository to ${dir}`);
  }
}

/**
 * Runs `deno test` in its own process group (a timed-out run is killed with every process it
 * started): the exit code, or "timeout".
 */
async function denoTest(
  cwd: string,
  args: string[],
  env: Record<string, string>,
  timeoutMs: number,
): Promise<number | "timeout"> {
  const child = new Deno.Command("setsid", {
    args: [
      Deno.execPath(),
      "test",
      "--allow-all",
      "--no-check",
      "--quiet",
      ...args,
    ],
    cwd,
    env,
    stdout: "null",
    stderr: "null",
  }).spawn();
  let timedOut = false;
  const timer = setTimeout(() => {
    timedOut = true;
    try {
      Deno.kill(-child.pid, "SIGKILL");
    } catch { /* already gone */ }
  }, timeoutMs);
  const status = await child.status;
  clearTimeout(timer);
  return timedOut ? "timeout" : status.code;
}

/** Bound on one test file's run while the coverage is recorded. */
const COVERAGE_RUN_LIMIT_MS = 30 * 60_000;

/** Runs the five operators' mutants of a scope; writes the report to `o.out`. */
export async function runExtraScope(
  scope: MutationScope,
  o: ExtraRunOptions,
): Promise<void> {
  const skip = skipArgs(scope);
  const base = `${o.root}.stryker-tmp/extra-${scope.name}-${Date.now()}`;
  const boxes = Array.from({ length: o.workers }, (_, i) => `${base}/${i}/`);
  try {
    for (const box of boxes) await makeSandbox(o.root, box);
    const [first] = boxes;
    const tests = (await testFiles(scope.tests.map((t) => `${first}${t}`)))
      .map((t) => t.slice(first!.length));
    // Per file, the line ranges to mutate (a scope may name parts of one file).
    const targets = new Map<string, Array<{ from: number; to: number }>>();
    for (const { path, from, to } of scope.files.map(parseScopeFile)) {
      targets.set(path, [...targets.get(path) ?? [], { from, to }]);
    }

    // Coverage: which lines of the scope's files each test file reaches, and how long it takes.
    const reached = new Map<string, Map<string, Set<number>>>();
    const took = new Map<string, number>();
    let next = 0;
    const covDir = `${base}/cov`;
    await Promise.all(boxes.map(async (box) => {
      while (next < tests.length) {
        const i = next++;
        const file = tests[i];
        const dir = `${covDir}/${i}`;
        const t0 = performance.now();
        let code = await denoTest(
          box,
          [`--coverage=${dir}`, ...skip.args!, file!],
          skip.env,
          COVERAGE_RUN_LIMIT_MS,
        );
        took.set(file!, performance.now() - t0);
        if (code !== 0) {
          // Once more before giving up: a scenario test can lose a race on a loaded machine.
          console.error(
            `mutate: ${file} failed without a mutant (exit ${code}); trying again`,
          );
          await Deno.remove(dir, { recursive: true }).catch(() => {});
          code = await denoTest(
            box,
            [`--coverage=${dir}`, ...skip.args!, file!],
            skip.env,
            COVERAGE_RUN_LIMIT_MS,
          );
        }
        if (code !== 0) {
          throw new Error(
            `mutate: ${file} fails without a mutant (exit ${code})`,
          );
        }
        const lcov = await new Deno.Command(Deno.execPath(), {
          args: ["coverage", "--lcov", dir],
          cwd: box,
          stdout: "piped",
          stderr: "null",
        }).output();
        const hits = parseLcov(new TextDecoder().decode(lcov.stdout));
        const mine = new Map<string, Set<number>>();
        for (const [path, lines] of hits) {
          if (path.startsWith(box)) mine.set(path.slice(box.length), lines);
        }
        reached.set(file!, mine);
      }
    }));

    // The mutants, each with the test files that reach its line.
    type Job = { path: string; mutant: ExtraMutant; files: string[] };
    const jobs: Job[] = [];
    const results = new Map<
      string,
      Array<{ mutant: ExtraMutant; status: ExtraStatus }>
    >();
    const sources = new Map<string, string>();
    for (const [path, ranges] of targets) {
      const source = await Deno.readTextFile(`${o.root}${path}`);
      sources.set(path, source);
      results.set(path, []);
      for (const mutant of generateMutants(source, path)) {
        if (!ranges.some((r) => mutant.line >= r.from && mutant.line <= r.to)) {
          continue;
        }
        const files = tests.filter((f) => reached.get(f)?.get(path)?.has(mutant.line));
        jobs.push({ path, mutant, files });
      }
    }
    console.log(
      `mutate: scope ${scope.name}: ${jobs.length} mutants of the project's operators`,
    );

    let done = 0;
    let cursor = 0;
    // Unit test files first, the scenario tests only when those pass (as mutant_tests.ts).
    const runMutant = async (box: string, files: readonly string[]) => {
      for (const stage of testStages(files)) {
        const ms = stage.reduce((s, f) => s + (took.get(f) ?? 0), 0);
        const code = await denoTest(
          box,
          ["--parallel", "--fail-fast", ...skip.args, ...stage],
          { ...skip.env, DENO_JOBS: o.jobsPerMutant },
          Math.round(ms * 1.5) + scope.timeoutMs + 10_000,
        );
        if (code !== 0) return code;
      }
      return 0;
    };
    await Promise.all(boxes.map(async (box) => {
      while (cursor < jobs.length) {
        const job = jobs[cursor++];
        const source = sources.get(job!.path)!;
        await Deno.writeTextFile(
          `${box}${job!.path}`,
          applyMutant(source, job!.mutant),
        );
        try {
          const subset = job!.files.length > 0 ? job!.files : tests;
          let code = await runMutant(box, subset);
          // A survivor of a subset is tried against every file before it counts as survived.
          if (code === 0 && subset.length < tests.length) {
            code = await runMutant(box, tests);
          }
          const status: ExtraStatus = code === "timeout"
            ? "Timeout"
            : code === 0
            ? "Survived"
            : "Killed";
          results.get(job!.path)!.push({ mutant: job!.mutant, status });
          done++;
          const where = `${job!.path}:${job!.mutant.line}`;
          console.log(
            `mutate: [${done}/${jobs.length}] ${status.padEnd(8)} ${job!.mutant.operator} ${where}`,
          );
        } finally {
          await Deno.writeTextFile(`${box}${job!.path}`, source);
        }
      }
    }));
    const files = [...targets.keys()].map((path) => ({
      path,
      source: sources.get(path)!,
      mutants: results.get(path)!.sort((a, b) => a.mutant.start - b.mutant.start),
    }));
    await Deno.writeTextFile(
      o.out,
      JSON.stringify(extraReport(files), null, 2),
    );
  } finally {
    await Deno.remove(base, { recursive: true }).catch(() => {});
  }
}
