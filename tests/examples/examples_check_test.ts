/**
 * `runtime --check-config` on every configuration the project ships (examples/*.yaml, found by
 * listing the folder, and the one the systemd README installs on a Pi), as a real process. None may
 * have an e-stop that commands nothing, verifies nothing, or commands a device no expectation reads
 * (examples/minimal.yaml once checked clean while its e-stop did nothing). Warnings about what the
 * checking machine lacks (the Pi's provider binary, bench-io's) are expected and allowed; errors
 * are not.
 */
import assert from "node:assert/strict";
import {
  ESTOP_COMMANDS_NOTHING,
  ESTOP_DEVICE_UNVERIFIED,
  ESTOP_VERIFIES_NOTHING,
} from "../../src/config/mod.ts";
import type { DiagnosticsReport } from "../../src/config/mod.ts";
import { runCli, withFiles } from "../helpers/cli.ts";
import { exampleConfigFiles, systemdReadmeConfig } from "./_shipped.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const ESTOP_WARNINGS = [ESTOP_COMMANDS_NOTHING, ESTOP_VERIFIES_NOTHING, ESTOP_DEVICE_UNVERIFIED];

/** Runs --check-config --format json on `file` (from `cwd`) and returns the report. */
async function check(file: string, cwd: string): Promise<DiagnosticsReport> {
  const r = await runCli(["--check-config", file, "--format", "json"], { cwd });
  assert.equal(r.code, 0, `${file}: exit ${r.code}\n${r.stdout}${r.stderr}`);
  return JSON.parse(r.stdout);
}

/** The diagnostics of `report` that say the e-stop would do or prove nothing. */
function estopWarnings(report: DiagnosticsReport): string[] {
  return report.diagnostics
    .filter((d) => ESTOP_WARNINGS.some((w) => d.message.startsWith(w)))
    .map((d) => `${d.file}:${d.line}:${d.column}: ${d.path}: ${d.message}`);
}

Deno.test("every examples/*.yaml checks without errors and with a safe state and expectations for what it drives", async () => {
  const files = exampleConfigFiles();
  assert.ok(files.some((f) => f.endsWith("/minimal.yaml")), files.join(", "));
  const warnings: string[] = [];
  for (const file of files) {
    const report = await check(file.slice(REPO.length), REPO);
    assert.equal(report.errors, 0, JSON.stringify(report.diagnostics));
    warnings.push(...estopWarnings(report));
  }
  assert.deepEqual(warnings, []);
});

Deno.test("the systemd README's Raspberry Pi configuration checks with a safe state and expectations", async () => {
  await withFiles({ "config.yaml": await systemdReadmeConfig() }, async (dir) => {
    const report = await check("config.yaml", dir);
    assert.equal(report.errors, 0, JSON.stringify(report.diagnostics));
    assert.deepEqual(estopWarnings(report), []);
  });
});
