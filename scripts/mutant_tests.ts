/**
 * The test command Stryker runs for a scope (deno task mutate): per-file coverage, then only
 * the test files that reach the active mutant.
 *
 *   deno run -A scripts/mutant_tests.ts SCOPE COVERAGE_JSON
 *
 * Without `__STRYKER_ACTIVE_MUTANT__` (Stryker's initial test run) every test file of the scope
 * runs on its own, with scripts/mutant_coverage_preload.ts recording which mutants its code
 * reached; the map mutant id → test files is written to COVERAGE_JSON, and any failing file
 * fails the run. With a mutant active, the files that reached it run (`--parallel
 * --fail-fast`), unit tests first and the scenario tests only when those pass: a mutant that no file reached in-process (code run only by a child runtime
 * process, say) runs every file of the scope, so a missing map entry costs time, never a kill.
 */
import { MUTATION_SCOPES, skipArgs } from "./mutation_report.ts";

const PRELOAD = new URL("./mutant_coverage_preload.ts", import.meta.url).pathname;
/** Test files run at once while the coverage map is built. */
const MAP_CONCURRENCY = 4;
/** Deno test workers per mutant run (the tests mostly wait on processes and timers). */
const JOBS_PER_MUTANT = "4";

/** The `*_test.ts` files under the scope's test paths (files or folders), sorted. */
export async function testFiles(paths: readonly string[]): Promise<string[]> {
  const out: string[] = [];
  async function walk(path: string): Promise<void> {
    const info = await Deno.stat(path);
    if (info.isFile) {
      out.push(path);
      return;
    }
    for await (const entry of Deno.readDir(path)) {
      const child = `${path.replace(/\/$/, "")}/${entry.name}`;
      if (entry.isDirectory) await walk(child);
      else if (entry.name.endsWith("_test.ts")) out.push(child);
    }
  }
  for (const p of paths) await walk(p);
  return [...new Set(out)].sort();
}

/** Inverts per-file coverage (file → mutant ids) into mutant id → files. */
export function invertCoverage(perFile: ReadonlyMap<string, readonly string[]>) {
  const map: Record<string, string[]> = {};
  for (const [file, ids] of perFile) {
    for (const id of ids) (map[id] ??= []).push(file);
  }
  for (const files of Object.values(map)) files.sort();
  return map;
}

/** The files to run for a mutant: those that reached it, else all of them. */
export function filesForMutant(
  map: Readonly<Record<string, readonly string[]>>,
  id: string,
  all: readonly string[],
): readonly string[] {
  const reached = map[id];
  return reached && reached.length > 0 ? reached : all;
}

/**
 * The files to run for a mutant in the order to run them: unit test files first, then the
 * scenario tests (tests/scenarios/, which drive real processes and take many times longer), each
 * stage only when the one before passed. Most mutants a unit test kills then cost seconds.
 */
export function testStages(files: readonly string[]): string[][] {
  const scenario = (f: string) => /(^|\/)tests\/scenarios\//.test(f);
  return [files.filter((f) => !scenario(f)), files.filter(scenario)].filter((s) => s.length > 0);
}

async function denoTest(args: string[], env: Record<string, string>): Promise<number> {
  const child = new Deno.Command(Deno.execPath(), {
    args: ["test", "--allow-all", "--no-check", "--quiet", ...args],
    env,
    stdout: "inherit",
    stderr: "inherit",
  }).spawn();
  return (await child.status).code;
}

async function buildMap(
  files: readonly string[],
  out: string,
  skip: { args: string[]; env: Record<string, string> },
): Promise<number> {
  const perFile = new Map<string, string[]>();
  const dir = await Deno.makeTempDir({ prefix: "mutant-cov-" });
  let failed = 0;
  let next = 0;
  async function worker(): Promise<void> {
    while (next < files.length) {
      const file = files[next++];
      const covOut = `${dir}/${perFile.size}-${next}.json`;
      const code = await denoTest(["--preload", PRELOAD, ...skip.args!, file!], {
        ...skip.env,
        MUTATE_COVERAGE_OUT: covOut,
      });
      if (code !== 0) {
        console.error(`mutant_tests: ${file} fails without a mutant (exit ${code})`);
        failed++;
      }
      try {
        perFile.set(file!, JSON.parse(await Deno.readTextFile(covOut)));
      } catch {
        perFile.set(file!, []);
      }
    }
  }
  await Promise.all(Array.from({ length: MAP_CONCURRENCY }, worker));
  await Deno.remove(dir, { recursive: true });
  await Deno.writeTextFile(out, JSON.stringify(invertCoverage(perFile)));
  return failed === 0 ? 0 : 1;
}

async function main(): Promise<number> {
  const [scopeName, coverageJson] = Deno.args;
  const scope = MUTATION_SCOPES.find((s) => s.name === scopeName);
  if (!scope || !coverageJson) {
    console.error("usage: mutant_tests.ts SCOPE COVERAGE_JSON");
    return 2;
  }
  const files = await testFiles(scope.tests);
  const active = Deno.env.get("__STRYKER_ACTIVE_MUTANT__");
  const skip = skipArgs(scope);
  if (active === undefined) return await buildMap(files, coverageJson, skip);
  const map = JSON.parse(await Deno.readTextFile(coverageJson));
  for (const stage of testStages(filesForMutant(map, active, files))) {
    const code = await denoTest(["--parallel", "--fail-fast", ...skip.args, ...stage], {
      ...skip.env,
      DENO_JOBS: JOBS_PER_MUTANT,
    });
    if (code !== 0) return code;
  }
  return 0;
}

if (import.meta.main) Deno.exit(await main());
