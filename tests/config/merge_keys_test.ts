import assert from "node:assert/strict";
import { load, summary } from "./_helpers.ts";

// Two providers sharing one restart policy: the second takes the first's through a merge key.
const SHARED_POLICY = `
providers:
  - id: p0
    command: prov
    restart_policy: &policy
      enabled: true
      max_attempts: 2
      backoff_ms: [100, 1000]
      timeout_ms: 30000
  - id: p1
    command: prov
    restart_policy:
      <<: *policy
      success_reset_ms: 5000
`;

Deno.test("loadConfig applies a merge key: a restart_policy given as `<<: *anchor` is in effect", () => {
  const { config, diagnostics } = load(SHARED_POLICY);
  assert.deepEqual(diagnostics, []);
  assert.ok(config);
  assert.deepEqual(config.providers[1]!.restartPolicy, {
    enabled: true,
    maxAttempts: 2,
    backoffMs: [100, 1000],
    timeoutMs: 30000,
    successResetMs: 5000,
  });
});

Deno.test("loadConfig lets a key written next to a merge key win over the merged one", () => {
  const { config, diagnostics } = load(SHARED_POLICY.replace(
    "success_reset_ms: 5000",
    "max_attempts: 3\n      backoff_ms: [1, 2, 3]",
  ));
  assert.deepEqual(diagnostics, []);
  assert.ok(config);
  assert.equal(config.providers[1]!.restartPolicy.maxAttempts, 3);
  assert.deepEqual(config.providers[1]!.restartPolicy.backoffMs, [1, 2, 3]);
});

Deno.test("loadConfig points an error in a merged key at that key's line and column, not the merging mapping's", () => {
  // Line 7 `backoff_ms: [100, 1000]` has 2 entries; p1 merges it under max_attempts 3 (line 17).
  const result = load(SHARED_POLICY.replace("success_reset_ms: 5000", "max_attempts: 3"));
  assert.equal(result.config, null);
  const d = result.diagnostics.find((x) => x.path === "providers[1].restart_policy.backoff_ms");
  assert.ok(d, JSON.stringify(result.diagnostics));
  assert.deepEqual([d.line, d.column, d.message], [7, 7, "has 2 entries, max_attempts is 3"]);
});

Deno.test("loadConfig refuses a merge key whose value is not a mapping, at the `<<` key", () => {
  const result = load(`
providers:
  - id: p0
    command: prov
    restart_policy:
      <<: [1, 2]
`);
  assert.equal(result.config, null);
  assert.deepEqual(summary(result), ["error providers[0].restart_policy.<< @5"]);
  assert.equal(result.diagnostics[0]!.column, 7);
  assert.match(result.diagnostics[0]!.message, /merge key/);
});
