/**
 * `providers:` holds at most MAX_PROVIDERS entries: a longer list is one error at the key, with its
 * line:column (both validation layers agree), from loadConfig and from `runtime --check-config`
 * alike; the entries are still read, so what names one of them raises no error of its own.
 */
import assert from "node:assert/strict";
import { formatDiagnostic, MAX_PROVIDERS } from "../../src/config/mod.ts";
import { load, summary } from "./_helpers.ts";
import { runCli, withFiles } from "../helpers/cli.ts";

/** A configuration of `n` providers `p0`, `p1`, ... (one a line after a comment line). */
function providers(n: number, command = "prov"): string {
  const list = Array.from({ length: n }, (_, i) => `  - { id: p${i}, command: ${command} }`);
  return `# rig\nproviders:\n${list.join("\n")}\n`;
}

Deno.test("loadConfig takes MAX_PROVIDERS providers and refuses one more, at the providers key's line:column", () => {
  const atBound = load(providers(MAX_PROVIDERS));
  assert.deepEqual(summary(atBound), []);
  assert.equal(atBound.config!.providers.length, MAX_PROVIDERS);

  const last = `p${MAX_PROVIDERS}`;
  const over = load(
    `${providers(MAX_PROVIDERS + 1)}alarms:\n  - { id: a, signal: ${last}/d/s, hi: 1 }\n`,
  );
  assert.equal(over.config, null);
  assert.deepEqual(over.diagnostics.map(formatDiagnostic), [
    `/etc/rig/runtime.yaml:2:1: error: providers: has ${MAX_PROVIDERS + 1} entries, at most ` +
    `${MAX_PROVIDERS} (MAX_PROVIDERS)`,
  ]);
});

Deno.test("runtime --check-config fails on more than MAX_PROVIDERS providers, naming the key and its FILE:LINE:COL", async () => {
  await withFiles({ "rig.yaml": providers(MAX_PROVIDERS + 1, "deno") }, async (dir) => {
    const r = await runCli(["--check-config", "rig.yaml"], { cwd: dir });
    assert.equal(r.code, 1, r.stdout + r.stderr);
    assert.match(
      r.stdout,
      new RegExp(
        `^rig\\.yaml:2:1: error: providers: has ${MAX_PROVIDERS + 1} entries, at most ` +
          `${MAX_PROVIDERS} \\(MAX_PROVIDERS\\)$`,
        "m",
      ),
    );
    assert.match(r.stdout, /rig\.yaml: 1 error, 0 warnings/);
  });
});
