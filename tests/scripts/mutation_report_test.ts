/** The mutation report: source text of a mutant, per-file scores, equivalents, rendering. */
import assert from "node:assert/strict";
import {
  MUTATION_SCOPES,
  originalText,
  parsePreviousReport,
  parseScopeFile,
  renderReport,
  skipArgs,
  type StrykerMutant,
  type StrykerReport,
  summarize,
  withCarried,
} from "../../scripts/mutation_report.ts";

const SOURCE = "function f(a, b) {\n  return a < b\n    && b > 0;\n}\n";

function mutant(
  id: string,
  status: string,
  start: [number, number],
  end: [number, number],
  replacement: string,
  mutatorName = "EqualityOperator",
): StrykerMutant {
  return {
    id,
    mutatorName,
    replacement,
    status,
    location: {
      start: { line: start[0], column: start[1] },
      end: { line: end[0], column: end[1] },
    },
  };
}

Deno.test("originalText reads the mutated span with 1-based lines and columns", () => {
  assert.equal(originalText(SOURCE, mutant("1", "Killed", [2, 10], [2, 15], "a <= b")), "a < b");
  assert.equal(
    originalText(SOURCE, mutant("2", "Killed", [2, 10], [3, 13], "false")),
    "a < b\n    && b > 0",
  );
});

Deno.test("summarize scores each file and excludes listed equivalent mutants only", () => {
  const report: StrykerReport = {
    files: {
      "src/x.ts": {
        source: SOURCE,
        mutants: [
          mutant("1", "Killed", [2, 10], [2, 15], "a <= b"),
          mutant("2", "Timeout", [2, 10], [2, 15], "true", "ConditionalExpression"),
          mutant("3", "Survived", [3, 8], [3, 13], "b >= 0"),
          mutant("4", "Survived", [3, 8], [3, 13], "b < 0"),
          mutant("5", "NoCoverage", [2, 10], [2, 15], "a > b"),
          mutant("6", "CompileError", [2, 10], [2, 15], "a b"),
        ],
      },
    },
  };
  const s = summarize([{ scope: "x", report, at: new Date(0) }], [
    {
      file: "src/x.ts",
      mutator: "EqualityOperator",
      original: "b > 0",
      replacement: "b >= 0",
      reason: "b is never 0 here",
    },
    // Same text in another file: must not match.
    {
      file: "src/y.ts",
      mutator: "EqualityOperator",
      original: "b > 0",
      replacement: "b < 0",
      reason: "other file",
    },
  ]);
  const [f] = s.files;
  assert.deepEqual(
    [f!.total, f!.killed, f!.timeout, f!.survived, f!.noCoverage, f!.equivalent, f!.errors],
    [6, 1, 1, 1, 1, 1, 1],
  );
  assert.equal(f!.score, 50); // (1 killed + 1 timeout) / (2 + 1 survived + 1 not covered)
  assert.deepEqual(f!.survivors.map((m) => [m.line, m.replacement, m.status]), [
    [2, "a > b", "NoCoverage"],
    [3, "b < 0", "Survived"],
  ]);
  assert.equal(f!.equivalents[0]!.reason, "b is never 0 here");
  const md = renderReport(s, { commit: "abc123" });
  assert.match(md, /\| x \| `src\/x\.ts` \| 6 \| 1 \| 1 \| 1 \| 1 \| 1 \| 1 \| 50\.0 % \|/);
  assert.match(md, /line 3, EqualityOperator: `b > 0` → `b < 0`/);
  assert.match(md, /line 2, EqualityOperator \(not covered\): `a < b` → `a > b`/);
  assert.match(md, /`src\/x\.ts` line 3, EqualityOperator: `b > 0` → `b >= 0` — b is never 0 here/);
  assert.match(md, /Commit `abc123`/);
});

Deno.test("summarize marks a file whose source changed after its run, and the report says so", () => {
  const report: StrykerReport = {
    files: {
      "src/x.ts": { source: SOURCE, mutants: [mutant("1", "Killed", [2, 10], [2, 15], "a <= b")] },
    },
  };
  const at = new Date(0);
  const same = summarize([{ scope: "x", report, at }], [], new Map([["src/x.ts", SOURCE]]));
  assert.equal(same.files[0]!.changedSinceRun, false);
  assert.match(renderReport(same, { commit: "c" }), /\| 100\.0 % \|/);
  const changed = summarize(
    [{ scope: "x", report, at }],
    [],
    new Map([["src/x.ts", SOURCE + "//"]]),
  );
  assert.equal(changed.files[0]!.changedSinceRun, true);
  assert.match(renderReport(changed, { commit: "c" }), /\| 100\.0 % † \|/);
  assert.equal((summarize([{ scope: "x", report, at }], []).files[0])!.changedSinceRun, false);
});

Deno.test("summarize keeps a row per kind: Stryker's mutants and ours (the operators Stryker lacks), none for a file ours leave alone", () => {
  const stryker: StrykerReport = {
    files: {
      "src/x.ts": { source: SOURCE, mutants: [mutant("1", "Killed", [2, 10], [2, 15], "a <= b")] },
    },
  };
  const extra: StrykerReport = {
    files: {
      "src/x.ts": {
        source: SOURCE,
        mutants: [
          mutant("x1", "Survived", [3, 8], [3, 13], "", "SwitchCase"),
          mutant("x2", "Killed", [2, 3], [2, 15], "", "AwaitDropped"),
        ],
      },
    },
  };
  const none: StrykerReport = { files: { "src/y.ts": { source: SOURCE, mutants: [] } } };
  const s = summarize([
    { scope: "x", report: stryker, at: new Date(0) },
    { scope: "x", report: extra, at: new Date(1), kind: "ours" },
    { scope: "x", report: none, at: new Date(1), kind: "ours" },
  ], []);
  assert.deepEqual(
    s.files.map((f) => [f.kind, f.total, f.killed, f.survived, f.score.toFixed(1)]),
    [["stryker", 1, 1, 0, "100.0"], ["ours", 2, 1, 1, "50.0"]],
  );
  const md = renderReport(s, { commit: "c" });
  assert.match(md, /\| x \| `src\/x\.ts` \| 1 \| 1 \| 0 \| 0 \| 0 \| 0 \| 0 \| 100\.0 % \|/);
  assert.match(
    md,
    /\| x \| `src\/x\.ts` \(ours\) \| 2 \| 1 \| 0 \| 1 \| 0 \| 0 \| 0 \| 50\.0 % \|/,
  );
  assert.match(md, /### `src\/x\.ts` \(ours\)\n\n- line 3, SwitchCase: `b > 0` → ``/);
});

Deno.test("MUTATION_SCOPES name existing source and test paths, each file (or line range) in one scope", async () => {
  const seen = new Set<string>();
  for (const scope of MUTATION_SCOPES) {
    for (const f of scope.files) {
      assert.ok(!seen.has(f), `${f} in two scopes`);
      seen.add(f);
      const { path, from, to } = parseScopeFile(f);
      const lines = (await Deno.readTextFile(new URL(`../../${path}`, import.meta.url)))
        .split("\n").length;
      assert.ok(from >= 1 && from <= to && (to === Infinity || to <= lines), f);
    }
    for (const t of scope.tests) await Deno.stat(new URL(`../../${t}`, import.meta.url));
    assert.ok(scope.timeoutMs > 0);
  }
});

Deno.test("parsePreviousReport reads back a rendered report; withCarried keeps each scope and kind not run here", () => {
  const report: StrykerReport = {
    files: {
      "src/x.ts": {
        source: SOURCE,
        mutants: [
          mutant("1", "Killed", [2, 10], [2, 15], "a <= b"),
          mutant("2", "Survived", [3, 8], [3, 13], "b >= 0"),
          mutant("3", "Survived", [3, 8], [3, 13], "b < 0"),
        ],
      },
    },
  };
  const extra: StrykerReport = {
    files: {
      "src/x.ts": {
        source: SOURCE,
        mutants: [
          mutant("x1", "Survived", [3, 8], [3, 13], "", "SwitchCase"),
          mutant("x2", "Survived", [2, 3], [2, 15], "a", "AwaitDropped"),
        ],
      },
    },
  };
  const eq = [{
    file: "src/x.ts",
    mutator: "EqualityOperator",
    original: "b > 0",
    replacement: "b >= 0",
    reason: "b is never 0 here",
  }, {
    file: "src/x.ts",
    mutator: "AwaitDropped",
    original: "return a < b",
    replacement: "a",
    reason: "no promise here",
  }];
  const old = renderReport(
    summarize([
      { scope: "x", report, at: new Date(0) },
      { scope: "x", report: extra, at: new Date(0), kind: "ours" },
    ], eq),
    { commit: "0a1d0a" },
  );
  const previous = parsePreviousReport(old);
  assert.equal(previous.commit, "0a1d0a");
  const counts = { timeout: 0, noCoverage: 0, errors: 0, stale: false };
  assert.deepEqual(previous.rows, [{
    scope: "x",
    file: "src/x.ts",
    kind: "stryker",
    total: 3,
    killed: 1,
    survived: 1,
    equivalent: 1,
    ...counts,
    survivorLines: ["- line 3, EqualityOperator: `b > 0` → `b < 0`"],
    equivalentLines: [
      "- `src/x.ts` line 3, EqualityOperator: `b > 0` → `b >= 0` — b is never 0 here",
    ],
  }, {
    scope: "x",
    file: "src/x.ts",
    kind: "ours",
    total: 2,
    killed: 0,
    survived: 1,
    equivalent: 1,
    ...counts,
    survivorLines: ["- line 3, SwitchCase: `b > 0` → ``"],
    equivalentLines: [
      "- `src/x.ts` line 2, AwaitDropped: `return a < b` → `a` — no promise here",
    ],
  }]);
  // Only our operators ran for scope x here: Stryker's row is carried, ours is today's.
  const again: StrykerReport = {
    files: {
      "src/x.ts": {
        source: SOURCE,
        mutants: [mutant("x1", "Killed", [3, 8], [3, 13], "", "SwitchCase")],
      },
    },
  };
  const now = summarize([{ scope: "x", report: again, at: new Date(1), kind: "ours" }], []);
  const X = { name: "x", files: ["src/x.ts:1-9"] };
  const merged = withCarried(now, previous, new Set(["x/ours"]), [X]);
  assert.deepEqual(
    merged.files.map((f) => [f.kind, f.total, f.survived, f.score.toFixed(1), !!f.carried]),
    [["stryker", 3, 1, "50.0", true], ["ours", 1, 0, "100.0", false]],
  );
  const md = renderReport(merged, { commit: "new" });
  assert.match(md, /\| x \| `src\/x\.ts` \| 3 \| 1 \| 0 \| 1 \| 0 \| 1 \| 0 \| 50\.0 % ‡ \|/);
  assert.match(
    md,
    /\| x \| `src\/x\.ts` \(ours\) \| 1 \| 1 \| 0 \| 0 \| 0 \| 0 \| 0 \| 100\.0 % \|/,
  );
  assert.match(md, /from the report of commit `0a1d0a`/);
  assert.match(md, /### `src\/x\.ts`\n\n- line 3, EqualityOperator: `b > 0` → `b < 0`/);
  assert.doesNotMatch(md, /SwitchCase: `b > 0`/);
  assert.match(md, /- `src\/x\.ts` line 3, EqualityOperator: `b > 0` → `b >= 0` — b is never 0/);
  // Re-reading the new report carries the same Stryker row, not the sum of the two.
  assert.deepEqual(parsePreviousReport(md).rows[0], { ...previous.rows[0] });
  // A scope and kind that ran here takes nothing from the previous report.
  assert.deepEqual(
    withCarried(now, previous, new Set(["x/ours", "x/stryker"]), [X]).files,
    now.files,
  );
  // Nor does a scope that no longer exists, or a file that left the scope.
  assert.deepEqual(
    withCarried(now, previous, new Set(["x/ours"]), [{ ...X, name: "y" }]).files,
    now.files,
  );
  assert.deepEqual(
    withCarried(now, previous, new Set(["x/ours"]), [{ ...X, files: [] }]).files,
    now.files,
  );
  // A run restricted to some files (`--file`) replaces the rows of those files only.
  const XY = { name: "x", files: ["src/x.ts", "src/y.ts"] };
  const y = { ...previous.rows[0]!, file: "src/y.ts" };
  const both = { ...previous, rows: [...previous.rows, y] };
  const perFile = withCarried(now, both, new Set(["x/ours/src/x.ts", "x/stryker/src/x.ts"]), [XY]);
  assert.deepEqual(
    perFile.files.map((f) => [f.file, f.kind, !!f.carried]),
    [["src/x.ts", "ours", false], ["src/y.ts", "stryker", true]],
  );
});

Deno.test("skipArgs leaves a scope's skipTests out of a test run, whatever form Deno.test took", async () => {
  assert.deepEqual(skipArgs({}), { args: [], env: {} });
  const skip = skipArgs({ skipTests: ["allocates nothing", "a.b (c)"] });
  const dir = await Deno.makeTempDir({ prefix: "skip-tests-" });
  try {
    await Deno.writeTextFile(
      `${dir}/x_test.ts`,
      `Deno.test("kept", () => {});
Deno.test({ name: "kept too", fn: () => {} });
Deno.test("evaluation allocates nothing", () => { throw new Error("ran"); });
Deno.test("a.b (c) too", { sanitizeOps: false }, () => { throw new Error("ran"); });
Deno.test({ name: "it allocates nothing", fn: () => { throw new Error("ran"); } });\n`,
    );
    // With the coverage preload as well (two preloads, as mutant_tests.ts passes them).
    const preload = new URL("../../scripts/mutant_coverage_preload.ts", import.meta.url).pathname;
    const { code, stdout } = await new Deno.Command(Deno.execPath(), {
      args: ["test", "--no-check", "-A", "--preload", preload, ...skip.args, `${dir}/x_test.ts`],
      env: skip.env,
      stdout: "piped",
      stderr: "null",
    }).output();
    assert.equal(code, 0);
    assert.match(new TextDecoder().decode(stdout), /2 passed \| 0 failed \| 3 ignored/);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the alarms scopes' line ranges of alarm_engine.ts hold the gate and #evaluateInterlock, and the rest of the file", async () => {
  // Line ranges drift when the file changes: mutants of the wrong code, in the wrong scope.
  const lines = (await Deno.readTextFile("src/alarms/alarm_engine.ts")).split("\n");
  const ranges = (name: string) =>
    MUTATION_SCOPES.find((s) => s.name === name)!.files.map(parseScopeFile)
      .filter((f) => f.path === "src/alarms/alarm_engine.ts");
  const [gate, evaluate] = ranges("alarms-interlocks");
  assert.match(lines[gate!.from - 1]!, /^ {2}readonly gate = \(ctx: GateContext\)/);
  assert.equal(lines[gate!.to - 1], "  };");
  assert.match(lines[evaluate!.from - 1]!, /^ {2}#evaluateInterlock\(/);
  assert.equal(lines[evaluate!.to - 1], "  }");
  // "alarms" takes every other line of the file.
  const covered = [...ranges("alarms"), gate, evaluate].sort((a, b) => a!.from - b!.from);
  assert.equal(covered[0]!.from, 1);
  for (let i = 1; i < covered.length; i++) {
    assert.equal(
      covered[i]!.from,
      covered[i - 1]!.to + 1,
      `no gap or overlap before ${covered[i]!.from}`,
    );
  }
  assert.equal(covered.at(-1)!.to, lines.length - (lines.at(-1) === "" ? 1 : 0));
});
