/**
 * `automation.parameters[].name` holds at most MAX_PARAMETER_NAME_CHARS characters (code points,
 * as the editor schema counts them): a longer name is one error at the name's line:column (both
 * validation layers agree), naming it cut and quoted, from loadConfig and from
 * `runtime --check-config` alike.
 */
import assert from "node:assert/strict";
import {
  formatDiagnostic,
  MAX_PARAMETER_NAME_CHARS,
  RUNTIME_CONFIG_SCHEMA,
} from "../../src/config/mod.ts";
import { PROVIDER_TEXT_CHARS } from "../../src/common/mod.ts";
import { load, PROV } from "./_helpers.ts";
import { runCli, withFiles } from "../helpers/cli.ts";

/** A configuration declaring one double parameter named `name` (on line 4, its `name` key at column 9). */
function withParameter(name: string): string {
  return `${PROV}\nautomation:\n  parameters:\n    - { name: ${name}, type: double, default: 1 }\n`;
}

Deno.test("loadConfig takes a parameter name of MAX_PARAMETER_NAME_CHARS characters (also outside the BMP) and refuses one more at the name's line:column", () => {
  const atBound = "p".repeat(MAX_PARAMETER_NAME_CHARS);
  const taken = load(withParameter(atBound));
  assert.deepEqual(taken.diagnostics.map(formatDiagnostic), []);
  assert.equal(taken.config!.automation.parameters[0]!.name, atBound);
  // Characters, not UTF-16 units: 64 of U+1F525 are 128 units.
  const wide = "\u{1F525}".repeat(MAX_PARAMETER_NAME_CHARS);
  assert.deepEqual(load(withParameter(wide)).diagnostics.map(formatDiagnostic), []);

  const over = load(withParameter(`${atBound}q`));
  assert.equal(over.config, null);
  assert.deepEqual(over.diagnostics.map(formatDiagnostic), [
    `/etc/rig/runtime.yaml:4:9: error: automation.parameters[0].name: "${atBound}q" is ` +
    `${MAX_PARAMETER_NAME_CHARS + 1} characters long, at most ${MAX_PARAMETER_NAME_CHARS} ` +
    `(MAX_PARAMETER_NAME_CHARS)`,
  ]);
});

Deno.test("loadConfig names a parameter name of 10 kB cut and quoted in its refusal", () => {
  const name = `n${"x".repeat(10_000)}`;
  const over = load(withParameter(name));
  assert.equal(over.config, null);
  assert.deepEqual(over.diagnostics.map(formatDiagnostic), [
    `/etc/rig/runtime.yaml:4:9: error: automation.parameters[0].name: ` +
    `"${name.slice(0, PROVIDER_TEXT_CHARS)}\u2026" is 10001 characters long, at most ` +
    `${MAX_PARAMETER_NAME_CHARS} (MAX_PARAMETER_NAME_CHARS)`,
  ]);
});

Deno.test("The editor schema bounds a parameter name at MAX_PARAMETER_NAME_CHARS", () => {
  const parameter = (RUNTIME_CONFIG_SCHEMA as {
    $defs: { parameter: { properties: { name: { maxLength?: number } } } };
  }).$defs.parameter;
  assert.equal(parameter.properties.name.maxLength, MAX_PARAMETER_NAME_CHARS);
});

Deno.test("runtime --check-config fails on a parameter name of 10 kB, naming the key and its FILE:LINE:COL", async () => {
  const name = `n${"x".repeat(10_000)}`;
  const yaml = withParameter(name).replace("command: prov", "command: deno");
  await withFiles({ "rig.yaml": yaml }, async (dir) => {
    const r = await runCli(["--check-config", "rig.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        `^rig\\.yaml:4:9: error: automation\\.parameters\\[0\\]\\.name: "n${
          "x".repeat(79)
        }\u2026" ` +
          `is 10001 characters long, at most ${MAX_PARAMETER_NAME_CHARS} ` +
          `\\(MAX_PARAMETER_NAME_CHARS\\)$`,
        "m",
      ),
    );
    assert.match(r.stdout, /rig\.yaml: 1 error, 0 warnings/);
  });
});
