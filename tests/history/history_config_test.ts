/**
 * The `history:` section: defaults, every key read, and bad values refused at their line and
 * column with what is wrong.
 */
import assert from "node:assert/strict";
import { load, PROV } from "../config/_helpers.ts";

Deno.test("history: defaults when absent, every key read when given", () => {
  assert.deepEqual(load(`${PROV}\n`).config!.history, {
    enabled: true,
    memorySeconds: 120,
    memoryMaxBytes: 2 * 1024 * 1024,
    stepMs: 10000,
    diskMaxBytes: 256 * 1024 * 1024,
    incidentBeforeS: 10,
    incidentAfterS: 5,
    incidentMaxCount: 100,
    incidentMaxBytes: 64 * 1024 * 1024,
  });
  const given = load(`
history:
  enabled: false
  memory_seconds: 60
  memory_max_bytes: 1048576
  step_ms: 5000
  disk_max_bytes: 0
  incident_before_s: 30
  incident_after_s: 0
  incident_max_count: 3
  incident_max_bytes: 100000
${PROV}
`);
  assert.deepEqual(given.diagnostics, []);
  assert.deepEqual(given.config!.history, {
    enabled: false,
    memorySeconds: 60,
    memoryMaxBytes: 1048576,
    stepMs: 5000,
    diskMaxBytes: 0,
    incidentBeforeS: 30,
    incidentAfterS: 0,
    incidentMaxCount: 3,
    incidentMaxBytes: 100000,
  });
});

Deno.test("history: bad values are refused at their line and column, naming what is wrong", () => {
  const r = load(`
history:
  memory_seconds: 20
  incident_before_s: 30
  disk_max_bytes: 5000
  step_ms: 10
${PROV}
`);
  assert.equal(r.config, null);
  const got = r.diagnostics.map((d) => `${d.path} @${d.line}:${d.column} ${d.message}`);
  assert.ok(
    got.some((l) =>
      /^history\.incident_before_s @3:\d+ .*must be at most memory_seconds \(30 > 20\)/.test(l)
    ),
    got.join("\n"),
  );
  assert.ok(
    got.some((l) => /^history\.disk_max_bytes @4:\d+ .*0 \(no disk tier\) or at least/.test(l)),
    got.join("\n"),
  );
  assert.ok(got.some((l) => /^history\.step_ms @5:\d+ /.test(l)), got.join("\n"));
});

Deno.test("history: incident_before_s and incident_after_s together beyond memory_seconds is a warning naming what each record lacks (the record is read from the ring after the window)", () => {
  // An incident's record is read from the ring incident_after_s after its trigger: by then the
  // ring reaches memory_seconds back from there, so 10 + 5 > 10 loses the first 5 s. A warning,
  // not an error: a file that loaded before still starts after an upgrade.
  const r = load(`
history:
  memory_seconds: 10
  incident_before_s: 10
  incident_after_s: 5
${PROV}
`);
  assert.notEqual(r.config, null);
  const got = r.diagnostics.map((d) =>
    `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`
  );
  assert.ok(
    got.some((l) =>
      /^warning history\.incident_before_s @3:\d+ .*incident_before_s \+ incident_after_s .*\(10 \+ 5 > 10\).* oldest 5 s/
        .test(l)
    ),
    got.join("\n"),
  );
  // Exactly memory_seconds together is enough.
  const fits = load(`
history:
  memory_seconds: 10
  incident_before_s: 5
  incident_after_s: 5
${PROV}
`);
  assert.deepEqual(fits.diagnostics, []);
});

Deno.test("history: a device loss found later than the ring holds its window is a warning at polling.interval_ms, naming the delay and what the record lacks", () => {
  // A device is down once its reads have failed for max(500 ms, 3 x polling.interval_ms); its
  // record is read then, and the ring reaches memory_seconds back from there. 3 x 60 s = 180 s:
  // 10 + 180 > 120, the record's window is 70 s older than what the ring still holds.
  const slow = (intervalMs: number, history = "") =>
    load(`
polling:
  interval_ms: ${intervalMs}
${history}${PROV}
`);
  const lines = (r: ReturnType<typeof load>) =>
    r.diagnostics.map((d) => `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`);
  const r = slow(60_000);
  assert.notEqual(r.config, null);
  const got = lines(r);
  assert.equal(got.length, 1, got.join("\n"));
  assert.match(
    got[0]!,
    /^warning polling\.interval_ms @2:\d+ a device that drops out is found down 180 s after its first failed read \(max\(500 ms, 3 x polling\.interval_ms\)\), when its device-loss incident is recorded: history\.incident_before_s \+ that delay exceeds history\.memory_seconds \(10 \+ 180 > 120\), so the ring no longer holds the oldest 70 s of the record's window/,
  );
  // The boundary: 3 x 36666 ms = 109.998 s fits (10 + 109.998 <= 120), 3 x 36667 ms does not.
  assert.deepEqual(lines(slow(36_666)), []);
  assert.equal(lines(slow(36_667)).length, 1);
  // Without history there is no incident to lose.
  assert.deepEqual(lines(slow(60_000, "history:\n  enabled: false\n")), []);
});
