/**
 * deno task mutate [scope ...] — mutation testing of the code the machine's safety rests on.
 *
 * StrykerJS (tools/mutation, run under Deno) with its command test runner: for every mutant it
 * runs `deno test` on the test files of that scope that reach the mutant (scripts/mutant_tests.ts
 * maps them in Stryker's initial run), so a mutant is "killed" when a real test fails. Scopes
 * pair source files with the tests that exercise them, so each mutant runs seconds of tests
 * instead of the whole suite. Every scope writes tools/mutation/reports/<scope>.json
 * (Stryker's mutation-testing-report schema); `--report` merges them into docs/mutation-report.md
 * (score per file, survivors, equivalent mutants with their reasons), with the date and commit.
 *
 *   deno task mutate                       every scope, then the report
 *   deno task mutate safety-plan http-policy   some scopes, then the report
 *   deno task mutate --list                the scopes
 *   deno task mutate --report              only rebuild the report from the last runs
 *   deno task mutate --extra-only SCOPE    only the operators Stryker lacks (mutation_extra.ts)
 *   deno task mutate --stryker-only SCOPE  only Stryker's operators
 *   deno task mutate --file PATH SCOPE     only that file of the scope (repeatable); the
 *                                          scope's other files keep their rows in the report
 *
 * After Stryker, each scope runs the operators Stryker lacks (scripts/mutation_extra.ts: a
 * compound assignment turned plain, a switch case removed, a refusing catch opened, an await
 * dropped, a method call made twice at once), written to tools/mutation/reports/<scope>.extra.json
 * and merged into the same report rows.
 */
import { parseArgs } from "node:util";
import {
  type EquivalentMutant,
  type MutantKind,
  MUTATION_SCOPES,
  type MutationScope,
  parsePreviousReport,
  parseScopeFile,
  renderReport,
  type StrykerReport,
  summarize,
  withCarried,
} from "./mutation_report.ts";
import { runExtraScope } from "./mutation_extra.ts";

const ROOT = new URL("../", import.meta.url).pathname;
const TOOL = `${ROOT}tools/mutation/`;
const STRYKER = `${TOOL}node_modules/@stryker-mutator/core/bin/stryker.js`;
const REPORTS = `${TOOL}reports/`;
const EQUIVALENT = `${TOOL}equivalent.json`;
const REPORT_MD = `${ROOT}docs/mutation-report.md`;

async function run(cmd: string, args: string[], cwd: string): Promise<number> {
  const child = new Deno.Command(cmd, { args, cwd, stdout: "inherit", stderr: "inherit" }).spawn();
  return (await child.status).code;
}

async function ensureStryker(): Promise<void> {
  try {
    await Deno.stat(STRYKER);
  } catch {
    console.log("mutate: installing StrykerJS (tools/mutation/package-lock.json) with npm ci");
    const code = await run("npm", ["ci", "--silent", "--no-audit", "--no-fund"], TOOL);
    if (code !== 0) throw new Error(`npm ci in tools/mutation failed (exit ${code})`);
  }
}

function strykerConfig(scope: MutationScope): Record<string, unknown> {
  return {
    testRunner: "command",
    commandRunner: {
      // Only the test files that reach the active mutant (scripts/mutant_tests.ts).
      command:
        `deno run --allow-all --no-check scripts/mutant_tests.ts ${scope.name} ${REPORTS}${scope.name}.coverage.json`,
    },
    mutate: scope.files,
    plugins: [`${TOOL}ignore_logging.js`],
    ignorers: ["logging"],
    ignorePatterns: [
      "tools/mutation/node_modules",
      "tools/mutation/reports",
      "bench/results",
      "/dist", // the compile output; not vendor/yaml/dist
      ".git",
    ],
    concurrency: Math.max(1, navigator.hardwareConcurrency),
    timeoutMS: scope.timeoutMs,
    reporters: ["clear-text", "json", "progress-append-only"],
    clearTextReporter: { allowColor: false, logTests: false, reportScoreTable: true },
    jsonReporter: { fileName: `${REPORTS}${scope.name}.json` },
    tempDirName: ".stryker-tmp",
    cleanTempDir: true,
    disableTypeChecks: "{src,tests}/**/*.ts",
  };
}

/** Sandboxes the project's operators use at once (each runs a mutant's tests in parallel). */
const EXTRA_WORKERS = 2;

async function runExtra(scope: MutationScope): Promise<void> {
  console.log(`mutate: scope ${scope.name}: the operators Stryker lacks`);
  await runExtraScope(scope, {
    root: ROOT,
    out: `${REPORTS}${scope.name}.extra.json`,
    workers: EXTRA_WORKERS,
    jobsPerMutant: "4",
  });
}

async function runScope(scope: MutationScope): Promise<void> {
  const config = `${REPORTS}${scope.name}.stryker.json`;
  await Deno.writeTextFile(config, JSON.stringify(strykerConfig(scope), null, 2));
  console.log(`mutate: scope ${scope.name}: ${scope.files.join(", ")}`);
  const code = await run(Deno.execPath(), ["run", "-A", STRYKER, "run", config], ROOT);
  if (code !== 0) throw new Error(`Stryker failed on scope ${scope.name} (exit ${code})`);
}

async function readJson<T>(path: string): Promise<T | null> {
  try {
    return JSON.parse(await Deno.readTextFile(path)) as T;
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return null;
    throw err;
  }
}

async function writeReport(): Promise<void> {
  const reports: Array<{ scope: string; report: StrykerReport; at: Date; kind: MutantKind }> = [];
  const ran = new Set<string>();
  for (const scope of MUTATION_SCOPES) {
    for (const kind of ["stryker", "ours"] as const) {
      const path = `${REPORTS}${scope.name}${kind === "ours" ? ".extra" : ""}.json`;
      const report = await readJson<StrykerReport>(path);
      if (!report) continue;
      reports.push({ scope: scope.name, report, at: (await Deno.stat(path)).mtime!, kind });
      // Per file: a run restricted with --file leaves the scope's other rows to be carried.
      for (const file of Object.keys(report.files)) ran.add(`${scope.name}/${kind}/${file}`);
    }
  }
  const equivalents = (await readJson<EquivalentMutant[]>(EQUIVALENT)) ?? [];
  const commit = new TextDecoder().decode(
    (await new Deno.Command("git", { args: ["rev-parse", "--short=12", "HEAD"], cwd: ROOT })
      .output()).stdout,
  ).trim();
  const current = new Map<string, string>();
  for (const { report } of reports) {
    for (const file of Object.keys(report.files)) {
      current.set(file, await Deno.readTextFile(`${ROOT}${file}`).catch(() => ""));
    }
  }
  // A scope and kind not run on this machine keeps its rows from the committed report.
  const previous = parsePreviousReport(await Deno.readTextFile(REPORT_MD).catch(() => ""));
  const summary = withCarried(
    summarize(reports, equivalents, current),
    previous,
    ran,
    MUTATION_SCOPES,
  );
  await Deno.writeTextFile(REPORT_MD, renderReport(summary, { commit }));
  await run(Deno.execPath(), ["fmt", "--quiet", REPORT_MD], ROOT);
  console.log(`mutate: report written to docs/mutation-report.md`);
  for (const f of summary.files) {
    const stale = f.changedSinceRun ? "  (source changed since the run)" : "";
    console.log(`  ${f.score.toFixed(1).padStart(5)} %  ${f.file}${stale}`);
  }
}

async function main(): Promise<number> {
  const { values, positionals } = parseArgs({
    args: Deno.args,
    allowPositionals: true,
    options: {
      list: { type: "boolean" },
      report: { type: "boolean" },
      "extra-only": { type: "boolean" },
      "stryker-only": { type: "boolean" },
      file: { type: "string", multiple: true },
    },
  });
  if (values.list) {
    for (const s of MUTATION_SCOPES) console.log(`${s.name}: ${s.files.join(", ")}`);
    return 0;
  }
  await Deno.mkdir(REPORTS, { recursive: true });
  if (!values.report) {
    const unknown = positionals.filter((p) => !MUTATION_SCOPES.some((s) => s.name === p));
    if (unknown.length > 0) {
      console.error(`mutate: unknown scope(s) ${unknown.join(", ")} (see --list)`);
      return 2;
    }
    let chosen = positionals.length === 0
      ? MUTATION_SCOPES
      : MUTATION_SCOPES.filter((s) => positionals.includes(s.name));
    const only = values.file ?? [];
    if (only.length > 0) {
      // Each scope keeps only its entries (line ranges included) of the files named.
      chosen = chosen
        .map((s) => ({ ...s, files: s.files.filter((f) => only.includes(parseScopeFile(f).path)) }))
        .filter((s) => s.files.length > 0);
      const missing = only.filter((f) =>
        !chosen.some((s) => s.files.some((e) => parseScopeFile(e).path === f))
      );
      if (missing.length > 0) {
        console.error(`mutate: --file ${missing.join(", ")} is in none of the chosen scopes`);
        return 2;
      }
    }
    if (!values["extra-only"]) await ensureStryker();
    for (const scope of chosen) {
      if (!values["extra-only"]) await runScope(scope);
      if (!values["stryker-only"]) await runExtra(scope);
    }
  }
  await writeReport();
  return 0;
}

if (import.meta.main) Deno.exit(await main());
