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

// A key written twice is read from its LAST copy (yaml's toJS keeps the last), including in a
// mapping a merge key brings in: an error about its value must point at that copy, not the first.
for (
  const { name, yaml, line } of [
    {
      name: "in one mapping",
      yaml: `
${"providers: [{id: p0, command: prov}]"}
polling:
  interval_ms: 500
  interval_ms: 50
`,
      line: 4,
    },
    {
      name: "in the mapping a merge key brings in",
      yaml: `
x-defaults: &poll
  interval_ms: 500
  interval_ms: 50
providers: [{id: p0, command: prov}]
polling:
  <<: *poll
`,
      line: 3,
    },
    {
      name: "around a merge key",
      yaml: `
x-defaults: &poll
  interval_ms: 700
providers: [{id: p0, command: prov}]
polling:
  interval_ms: 500
  <<: *poll
  interval_ms: 50
`,
      line: 7,
    },
  ]
) {
  Deno.test(`loadConfig points an error in a key written twice ${name} at the copy whose value is read`, () => {
    const result = load(yaml);
    assert.equal(result.config, null);
    const value = result.diagnostics.find((d) =>
      d.path === "polling.interval_ms" && !d.message.startsWith("duplicate key")
    );
    assert.ok(value, JSON.stringify(result.diagnostics));
    assert.deepEqual([value.line, value.column, value.message], [
      line,
      3,
      "must be >= 100, got 50",
    ]);
    // The duplicate itself: at the copy that is read, naming where the other one is.
    const dup = result.diagnostics.find((d) => d.message.startsWith("duplicate key"));
    assert.ok(dup, JSON.stringify(result.diagnostics));
    assert.deepEqual(
      [dup.line, dup.column, dup.message],
      [
        line,
        3,
        `duplicate key (first defined on line ${line - (name === "around a merge key" ? 2 : 1)}, ` +
        "column 3): this later copy is the one read",
      ],
    );
  });
}

Deno.test("loadConfig refuses a second merge key in one mapping, naming the first and the sequence form", () => {
  const result = load(`
x-a: &a {interval_ms: 500}
x-b: &b {interval_ms: 700}
providers: [{id: p0, command: prov}]
polling:
  <<: *a
  <<: *b
`);
  assert.equal(result.config, null);
  const dup = result.diagnostics.filter((d) => d.severity === "error");
  assert.deepEqual(dup.map((d) => [d.path, d.line, d.column, d.message]), [[
    "polling.<<",
    6,
    3,
    "duplicate key (first defined on line 5, column 3): merge several mappings with one merge " +
    "key, `<<: [*a, *b]` (the first one listed wins)",
  ]]);
});
