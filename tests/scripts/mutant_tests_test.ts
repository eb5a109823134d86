/**
 * scripts/mutant_tests.ts: which test files a mutant runs — the files whose in-process run
 * reached it, else all of them (a mutant only a child process reaches must still be tested).
 */
import assert from "node:assert/strict";
import {
  filesForMutant,
  invertCoverage,
  testFiles,
  testStages,
} from "../../scripts/mutant_tests.ts";

Deno.test("invertCoverage maps each mutant to the sorted files that reached it", () => {
  const map = invertCoverage(
    new Map([
      ["tests/b_test.ts", ["1", "2"]],
      ["tests/a_test.ts", ["2", "3"]],
      ["tests/c_test.ts", []],
    ]),
  );
  assert.deepEqual(map, {
    "1": ["tests/b_test.ts"],
    "2": ["tests/a_test.ts", "tests/b_test.ts"],
    "3": ["tests/a_test.ts"],
  });
});

Deno.test("filesForMutant runs the files that reached a mutant, and every file for one none reached", () => {
  const all = ["tests/a_test.ts", "tests/b_test.ts", "tests/c_test.ts"];
  const map = { "2": ["tests/b_test.ts"], "4": [] };
  assert.deepEqual(filesForMutant(map, "2", all), ["tests/b_test.ts"]);
  assert.deepEqual(filesForMutant(map, "3", all), all);
  assert.deepEqual(filesForMutant(map, "4", all), all);
});

Deno.test("testFiles expands folders to their *_test.ts files, keeps named files, drops duplicates", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mutant-tests-" });
  try {
    await Deno.mkdir(`${dir}/t/sub`, { recursive: true });
    for (const f of ["t/x_test.ts", "t/helper.ts", "t/sub/y_test.ts", "z_test.ts"]) {
      await Deno.writeTextFile(`${dir}/${f}`, "");
    }
    const files = await testFiles([`${dir}/t/`, `${dir}/z_test.ts`, `${dir}/t/x_test.ts`]);
    assert.deepEqual(files, [`${dir}/t/sub/y_test.ts`, `${dir}/t/x_test.ts`, `${dir}/z_test.ts`]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the coverage preload writes the mutant ids a test process reached when it ends", async () => {
  const dir = await Deno.makeTempDir({ prefix: "mutant-cov-" });
  try {
    // What Stryker's instrumented code leaves behind: counts per mutant id, static and per test.
    await Deno.writeTextFile(
      `${dir}/a_test.ts`,
      `(globalThis as any).__stryker__ = { mutantCoverage: { static: { "7": 1 }, perTest: { t1: { "9": 2 } } } };
Deno.test("x", () => {});\n`,
    );
    const preload = new URL("../../scripts/mutant_coverage_preload.ts", import.meta.url).pathname;
    const out = `${dir}/cov.json`;
    const { code } = await new Deno.Command(Deno.execPath(), {
      args: ["test", "-A", "--no-check", "--quiet", "--preload", preload, `${dir}/a_test.ts`],
      env: { MUTATE_COVERAGE_OUT: out },
      stdout: "null",
      stderr: "null",
    }).output();
    assert.equal(code, 0);
    assert.deepEqual(JSON.parse(await Deno.readTextFile(out)).sort(), ["7", "9"]);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("testStages runs unit test files first and the scenario tests after, leaving out empty stages", () => {
  assert.deepEqual(
    testStages([
      "tests/alarms/a_test.ts",
      "tests/scenarios/s_test.ts",
      "/tmp/box/tests/scenarios/t_test.ts",
      "tests/http/b_test.ts",
    ]),
    [
      ["tests/alarms/a_test.ts", "tests/http/b_test.ts"],
      ["tests/scenarios/s_test.ts", "/tmp/box/tests/scenarios/t_test.ts"],
    ],
  );
  assert.deepEqual(testStages(["tests/scenarios/s_test.ts"]), [["tests/scenarios/s_test.ts"]]);
  assert.deepEqual(testStages(["tests/x_test.ts"]), [["tests/x_test.ts"]]);
  assert.deepEqual(testStages([]), []);
});
