/**
 * How deep a configuration's collections may nest: MAX_YAML_DEPTH levels, checked while the file
 * is parsed, before anything walks the tree recursively. One level more is an error at the line
 * and column of the collection past the limit, the same for every load (`--config`,
 * `--check-config`, a reload).
 */
import assert from "node:assert/strict";
import {
  type Diagnostic,
  loadConfigFile,
  loadConfigFileAsking,
  MAX_YAML_DEPTH,
} from "../../src/config/mod.ts";
import { CONFIG_PATH, load, PROV } from "./_helpers.ts";

/** `levels` levels, the root mapping the first: line 2 `x: [[[1]]]` holds `levels - 1` sequences. */
const flowNested = (levels: number) =>
  `${PROV}\nx: ${"[".repeat(levels - 1)}1${"]".repeat(levels - 1)}\n`;

/** `levels` levels of mappings, the root the first: `a:` keys one per line, each indented more. */
const blockNested = (levels: number) =>
  `${PROV}\n${Array.from({ length: levels }, (_, i) => `${"  ".repeat(i)}a:`).join("\n")} 1\n`;

const errors = (ds: readonly Diagnostic[]) =>
  ds.filter((d) => d.severity === "error").map((d) => [d.path, d.line, d.column, d.message]);

const tooDeep = (line: number, column: number) => [
  "",
  line,
  column,
  `YAML error: sequences and mappings are nested more than ${MAX_YAML_DEPTH} levels deep`,
];

Deno.test("MAX_YAML_DEPTH is 64 levels", () => {
  assert.equal(MAX_YAML_DEPTH, 64);
});

Deno.test("loadConfig accepts flow sequences nested MAX_YAML_DEPTH levels deep and refuses one more, at the level past the limit", () => {
  assert.deepEqual(errors(load(flowNested(MAX_YAML_DEPTH)).diagnostics), []);
  const over = load(flowNested(MAX_YAML_DEPTH + 1));
  assert.equal(over.config, null);
  // Line 2 `x: [[[...`: the MAX_YAML_DEPTH-th `[` (level MAX_YAML_DEPTH + 1) is at column
  // 3 + MAX_YAML_DEPTH.
  assert.deepEqual(errors(over.diagnostics), [tooDeep(2, 3 + MAX_YAML_DEPTH)]);
});

Deno.test("loadConfig accepts block mappings nested MAX_YAML_DEPTH levels deep and refuses one more, at the level past the limit", () => {
  assert.deepEqual(errors(load(blockNested(MAX_YAML_DEPTH)).diagnostics), []);
  const over = load(blockNested(MAX_YAML_DEPTH + 1));
  assert.equal(over.config, null);
  // Line 1 is PROV; the k-th `a:` (k from 0, in the mapping of level k + 1) is on line 2 + k at
  // column 1 + 2k. The mapping of level MAX_YAML_DEPTH + 1 starts at k = MAX_YAML_DEPTH.
  assert.deepEqual(errors(over.diagnostics), [
    tooDeep(2 + MAX_YAML_DEPTH, 1 + 2 * MAX_YAML_DEPTH),
  ]);
});

Deno.test("loadConfigFile and loadConfigFileAsking (start-up, --check-config, reload) report a file nested too deeply alike", async () => {
  const bytes = new TextEncoder().encode(flowNested(MAX_YAML_DEPTH + 1));
  const common = {
    path: CONFIG_PATH,
    env: {},
    cwd: "/var/lib/rig",
    readFile: () => Promise.resolve({ ok: true as const, bytes }),
  };
  const expected = [tooDeep(2, 3 + MAX_YAML_DEPTH)];
  for (const mode of ["check", "start"] as const) {
    const sync = await loadConfigFile({
      ...common,
      mode,
      fileExists: () => true,
      commandExists: () => true,
    });
    assert.ok(sync.readable);
    assert.equal(sync.config, null);
    assert.deepEqual(errors(sync.diagnostics), expected, mode);
  }
  const asked = await loadConfigFileAsking({
    ...common,
    mode: "start",
    ask: {
      stat: () => Promise.resolve({ kind: "file", mode: 0o755 }),
      commandExists: () => Promise.resolve({ kind: "found" }),
    },
  });
  assert.ok(asked.readable);
  assert.equal(asked.config, null);
  assert.deepEqual(errors(asked.diagnostics), expected);
});

/** `levels` flow sequences around `inner`: `[[inner]]` for 2. */
const seqs = (levels: number, inner: string) =>
  `${"[".repeat(levels)}${inner}${"]".repeat(levels)}`;

/** An alias's error: at its key path and its line and column. */
const aliasTooDeep = (path: string, line: number, column: number, name: string) => [
  path,
  line,
  column,
  `YAML error: alias *${name} builds sequences and mappings nested more than ${MAX_YAML_DEPTH} ` +
  "levels deep",
];

Deno.test("loadConfig bounds the depth of the data as built: an alias of a deep node inside another deep node is refused at the alias, naming its key path", () => {
  // x (level 2) holds 40 levels: the anchored node reaches level 41. y's alias sits in k
  // sequences, at level 2 + k: the data reaches 1 + k + 40 levels.
  const yaml = (k: number) => `${PROV}\nx: &a ${seqs(40, "1")}\ny: ${seqs(k, "*a")}\n`;
  assert.deepEqual(errors(load(yaml(MAX_YAML_DEPTH - 41)).diagnostics), []);
  const over = load(yaml(MAX_YAML_DEPTH - 40));
  assert.equal(over.config, null);
  // Line 3 `y: [[...*a`: the alias after MAX_YAML_DEPTH - 40 `[`.
  const k = MAX_YAML_DEPTH - 40;
  assert.deepEqual(errors(over.diagnostics), [
    aliasTooDeep(`y${"[0]".repeat(k)}`, 3, 4 + k, "a"),
  ]);
});

Deno.test("loadConfig refuses aliases that nest deep nodes within one another (hundreds of levels within the alias bound), at the first alias past the bound", () => {
  // Every line is within MAX_YAML_DEPTH as written; resolved, d holds 4 x 60 levels.
  const yaml = [
    PROV,
    `a: &a ${seqs(60, "1")}`,
    `b: &b ${seqs(60, "*a")}`,
    `c: &c ${seqs(60, "*b")}`,
    `d: ${seqs(60, "*c")}`,
  ].join("\n");
  const result = load(yaml);
  assert.equal(result.config, null);
  // b's alias sits at level 62 and brings 60 more: the first past the bound, at line 3.
  assert.deepEqual(errors(result.diagnostics), [
    aliasTooDeep(`b${"[0]".repeat(60)}`, 3, 7 + 60, "a"),
  ]);
});

Deno.test("loadConfig counts the levels a merge key brings in where they land: in the mapping holding it", () => {
  // m's mapping is level 2, its key k holds 40 sequences (down to level 42). Merged into a
  // mapping of level 2 + j, its k reaches level 2 + j + 40.
  const yaml = (j: number) => `${PROV}\nm: &m {k: ${seqs(40, "1")}}\nn: ${seqs(j, "{<<: *m}")}\n`;
  assert.deepEqual(errors(load(yaml(MAX_YAML_DEPTH - 42)).diagnostics), []);
  const j = MAX_YAML_DEPTH - 41;
  const over = load(yaml(j));
  assert.equal(over.config, null);
  // Line 3 `n: [[...{<<: *m}`: the alias after j `[` and `{<<: `.
  assert.deepEqual(errors(over.diagnostics), [
    aliasTooDeep(`n${"[0]".repeat(j)}.<<`, 3, 4 + j + 5, "m"),
  ]);
});
