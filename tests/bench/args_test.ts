import assert from "node:assert/strict";
import {
  absolutizeCommand,
  defaultCommands,
  parseBenchArgs,
  splitCommand,
  UsageError,
} from "../../bench/lib/args.ts";

Deno.test("splitCommand splits on spaces and honours quotes and backslashes", () => {
  assert.deepEqual(splitCommand("deno run -A src/main.ts"), ["deno", "run", "-A", "src/main.ts"]);
  assert.deepEqual(splitCommand(`  ./rt   'a b'  "c \\"d\\""  e\\ f ''`), [
    "./rt",
    "a b",
    'c "d"',
    "e f",
    "",
  ]);
  assert.deepEqual(splitCommand(""), []);
  assert.throws(() => splitCommand("deno 'run"), UsageError);
});

Deno.test("parseBenchArgs defaults to our runtime and the simulated provider", () => {
  const a = parseBenchArgs([], "/repo");
  assert.deepEqual(a.runtimeCmd, defaultCommands("/repo").runtime);
  assert.deepEqual(a.providerCmd, defaultCommands("/repo").provider);
  assert.equal(a.compareCmd, null);
  assert.equal(a.quick, false);
  assert.equal(a.soak, false);
  assert.equal(a.only, null);
  assert.equal(a.reps, null);
  assert.equal(a.fanout, null);
});

Deno.test("parseBenchArgs reads every flag in both --flag value and --flag=value forms", () => {
  const a = parseBenchArgs(
    [
      "--quick",
      "--soak",
      "--runtime-cmd",
      "./dist/runtime",
      "--compare=deno run -A /b/src/main.ts",
      "--provider-cmd",
      "./sim",
      "--only",
      "1,3",
      "--reps=4",
      "--fanout",
      "10x8",
      "--out",
      "x.json",
      "--no-write",
    ],
    "/repo",
  );
  assert.equal(a.quick, true);
  assert.equal(a.soak, true);
  assert.deepEqual(a.runtimeCmd, ["./dist/runtime"]);
  assert.deepEqual(a.compareCmd, ["deno", "run", "-A", "/b/src/main.ts"]);
  assert.deepEqual(a.providerCmd, ["./sim"]);
  assert.deepEqual([...a.only!], [1, 3]);
  assert.equal(a.reps, 4);
  assert.deepStrictEqual(a.fanout, { providers: 10, clients: 8 });
  assert.equal(a.out, "x.json");
  assert.equal(a.noWrite, true);
});

Deno.test("parseBenchArgs: --compare-anolis makes runtime B the anolis binary; B given twice is refused", () => {
  const a = parseBenchArgs(["--compare-anolis", "/opt/anolis-runtime"], "/repo");
  assert.deepEqual(a.compareCmd, ["/opt/anolis-runtime"]);
  assert.equal(a.compareAnolis, true);
  assert.equal(parseBenchArgs(["--compare", "./b"], "/repo").compareAnolis, false);
  assert.throws(
    () => parseBenchArgs(["--compare", "./b", "--compare-anolis", "/a"], "/repo"),
    /--compare-anolis: runtime B is given twice/,
  );
});

Deno.test("parseBenchArgs names the flag in usage errors", () => {
  assert.throws(() => parseBenchArgs(["--only", "9"], "/r"), /--only: '9'/);
  assert.throws(() => parseBenchArgs(["--reps", "0"], "/r"), /--reps/);
  assert.throws(() => parseBenchArgs(["--compare"], "/r"), /--compare: missing value/);
  for (const bad of ["10", "10x", "x8", "0x8", "10x0", "201x8", "10x257", "10X8", "1.5x8"]) {
    assert.throws(() => parseBenchArgs(["--fanout", bad], "/r"), new RegExp(`--fanout: '${bad}'`));
  }
  assert.throws(() => parseBenchArgs(["--compare", "  "], "/r"), /--compare: empty command/);
  assert.throws(() => parseBenchArgs(["--quick=yes"], "/r"), /--quick: takes no value/);
  assert.throws(() => parseBenchArgs(["--fast"], "/r"), /unknown flag: --fast/);
});

Deno.test("absolutizeCommand rewrites only relative words naming existing files", () => {
  const files = new Set(["/w/examples/sim.ts", "/w/bin/rt"]);
  const out = absolutizeCommand(
    ["deno", "run", "-A", "examples/sim.ts", "./bin/rt", "missing.ts", "/abs.ts"],
    "/w/",
    (p) => files.has(p),
  );
  assert.deepEqual(out, [
    "deno",
    "run",
    "-A",
    "/w/examples/sim.ts",
    "/w/bin/rt",
    "missing.ts",
    "/abs.ts",
  ]);
  assert.deepEqual(absolutizeCommand(["bin/rt"], "/w", (p) => files.has(p)), ["/w/bin/rt"]);
});
