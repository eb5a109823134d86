/**
 * `--check-config` stays linear (README: linear in the file): the work of locating N diagnostics
 * grows with N, not N². Asserted on a deterministic work counter (the loader's `onLookupWork`
 * hook); the time it takes is measured in bench/config_check_scale.ts, not asserted.
 */
import assert from "node:assert/strict";
import { loadConfig, type LoadConfigResult } from "../../src/config/mod.ts";
import { CONFIG_PATH, PROV } from "./_helpers.ts";

function loadCounting(yaml: string): { result: LoadConfigResult; work: number } {
  let work = -1;
  const result = loadConfig(yaml, {
    path: CONFIG_PATH,
    mode: "check",
    env: {},
    fileExists: () => true,
    commandExists: () => true,
    cwd: "/var/lib/rig",
    onLookupWork: (steps) => work = steps,
  });
  assert.ok(work >= 0, "the hook was called");
  return { result, work };
}

/** N unknown keys in one mapping: N warnings, each positioned in the same large mapping. */
function unknownKeys(n: number): string {
  const lines = [PROV, "http:"];
  for (let i = 0; i < n; i++) lines.push(`  unknown_${i}: ${i}`);
  return lines.join("\n");
}

/**
 * N providers, each with an unknown key and a bound violation: 2N diagnostics in a sequence, and
 * one more for N beyond MAX_PROVIDERS (the entries are read all the same).
 */
function badProviders(n: number): string {
  const lines = ["providers:"];
  for (let i = 0; i < n; i++) {
    lines.push(`  - {id: p${i}, command: prov, timeout_ms: 5, x_${i}: 1}`);
  }
  return lines.join("\n");
}

/** N safety calls, each with an error (the error-path check runs once per call). */
function badCalls(n: number): string {
  const lines = [PROV, "safety:", "  safe_state:", "    hooks:"];
  for (let i = 0; i < n; i++) lines.push(`      - {device_handle: p0/d${i}, function_id: -1}`);
  return lines.join("\n");
}

const SHAPES = [
  { name: "unknown keys in one mapping", yaml: unknownKeys, diagnosticsPerItem: 1 },
  { name: "bad entries in a sequence", yaml: badProviders, diagnosticsPerItem: 2, extra: 1 },
  { name: "bad safety calls", yaml: badCalls, diagnosticsPerItem: 2 },
];

for (const shape of SHAPES) {
  Deno.test(`loadConfig locates ${shape.name} with work linear in their number`, () => {
    const n = 1000;
    const small = loadCounting(shape.yaml(n));
    const large = loadCounting(shape.yaml(2 * n));
    const extra = shape.extra ?? 0;
    assert.equal(small.result.diagnostics.length, shape.diagnosticsPerItem * n + extra);
    assert.equal(large.result.diagnostics.length, shape.diagnosticsPerItem * 2 * n + extra);
    // Doubling the items at most doubles the work (plus a little); quadratic work would be 4x.
    assert.ok(
      large.work <= 2.1 * small.work,
      `work ${small.work} for ${n} items, ${large.work} for ${2 * n}`,
    );
    // And the constant is small: a few steps per diagnostic (key path depth plus indexing).
    const perDiagnostic = large.work / large.result.diagnostics.length;
    assert.ok(perDiagnostic <= 8, `${perDiagnostic} steps per diagnostic`);
  });
}

Deno.test("loadConfig checks 40,000 unknown keys, every one reported, at the same work per diagnostic", () => {
  // How long this takes is measured by bench/config_check_scale.ts, never asserted here.
  const { result, work } = loadCounting(unknownKeys(40_000));
  assert.equal(result.diagnostics.length, 40_000);
  // Each at its own key and line (the file's key i is on line i + 3).
  result.diagnostics.forEach((d, i) => {
    if (d.severity !== "warning" || d.path !== `http.unknown_${i}` || d.line !== i + 3) {
      assert.fail(`diagnostic ${i}: ${JSON.stringify(d)}`);
    }
  });
  const perDiagnostic = work / result.diagnostics.length;
  assert.ok(perDiagnostic <= 8, `${perDiagnostic} steps per diagnostic`);
});
