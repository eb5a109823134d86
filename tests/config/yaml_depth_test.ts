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
