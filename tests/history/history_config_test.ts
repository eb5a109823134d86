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

/** A configuration polling every `intervalMs`, with `history` (YAML lines) if given. */
const slow = (intervalMs: number, history = "") =>
  load(`
polling:
  interval_ms: ${intervalMs}
${history}${PROV}
`);

/** A load's diagnostics, one line each: severity, path, place and message. */
const lines = (r: ReturnType<typeof load>) =>
  r.diagnostics.map((d) => `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`);

Deno.test("history: a device loss found later than the ring holds its window is a warning at polling.interval_ms, naming the delay and what the record lacks", () => {
  // A device is down once its reads have failed for max(500 ms, 3 x polling.interval_ms); its
  // record is read then, and the ring reaches memory_seconds back from there. 3 x 60 s = 180 s:
  // 10 + 180 > 120, the record's window is 70 s older than what the ring still holds.
  const r = slow(60_000);
  assert.notEqual(r.config, null);
  const got = lines(r);
  assert.equal(got.length, 1, got.join("\n"));
  assert.match(
    got[0]!,
    /^warning polling\.interval_ms @2:\d+ a device that drops out is found down 180 s after its first failed read \(max\(500 ms, 3 x polling\.interval_ms\)\), when its device-loss incident is recorded: history\.incident_before_s \+ that delay exceeds history\.memory_seconds \(10 \+ 180 > 120\), so the ring no longer holds the oldest 70 s of the record's window/,
  );
  // What a machine-wide trigger joining such a loss (its own incident_after_s, 5 s) lacks besides.
  assert.match(got[0]!, /\(75 s when an e-stop or the device-loss latch's FAULT entry joining/);
  // The boundary of the loss's own record: 3 x 36666 ms = 109.998 s fits (10 + 109.998 <= 120),
  // 3 x 36667 ms does not.
  assert.doesNotMatch(lines(slow(36_666)).join("\n"), /incident_before_s \+ that delay exceeds/);
  assert.match(lines(slow(36_667)).join("\n"), /incident_before_s \+ that delay exceeds/);
  // Without history there is no incident to lose.
  assert.deepEqual(lines(slow(60_000, "history:\n  enabled: false\n")), []);
});

Deno.test("history: a device loss found after its window, joined by an e-stop or FAULT entry read incident_after_s later, is a warning when the ring holds the loss's own record but not that", () => {
  // A machine-wide trigger joining a loss found after its window has an incident_after_s of its
  // own (5 s): the record is read that much after the loss is found, from incident_before_s
  // before its date, so the ring must hold 10 + the delay + 5 s. Before, only 10 + the delay was
  // checked: 3 x 36 s = 108 s (10 + 108 <= 120) said nothing, though the ring no longer held the
  // oldest 3 s of such a record's window.
  const got = lines(slow(36_000));
  assert.equal(got.length, 1, got.join("\n"));
  assert.match(
    got[0]!,
    /^warning polling\.interval_ms @2:\d+ a device that drops out is found down 108 s after its first failed read \(max\(500 ms, 3 x polling\.interval_ms\)\), after its incident_after_s: an e-stop or the device-loss latch's FAULT entry joining its incident has an incident_after_s of its own, its record read that much later: history\.incident_before_s \+ that delay \+ history\.incident_after_s exceeds history\.memory_seconds \(10 \+ 108 \+ 5 > 120\), so the ring then no longer holds the oldest 3 s of the record's window; lower polling\.interval_ms or raise history\.memory_seconds$/,
  );
  // The boundary: 3 x 35000 ms = 105 s fits (10 + 105 + 5 <= 120), 3 x 35001 ms does not.
  assert.deepEqual(lines(slow(35_000)), []);
  assert.equal(lines(slow(35_001)).length, 1);
});

Deno.test("history: a device loss found at exactly incident_after_s is found after its window: a trigger joining it read incident_after_s later is a warning too", () => {
  // 3 x 1000 ms = 3 s = incident_after_s: the loss is found as its window ends (its outage timer),
  // so an e-stop or FAULT entry joining it gets an incident_after_s of its own (Pending.resumed)
  // and the record is read 7 + 3 + 3 s after the window began: more than the ring's 10 s. Before,
  // a delay equal to incident_after_s was taken for one read within its window and said nothing.
  const history = "history:\n  memory_seconds: 10\n  incident_before_s: 7\n  incident_after_s: 3\n";
  const got = lines(slow(1000, history));
  assert.equal(got.length, 1, got.join("\n"));
  assert.match(
    got[0]!,
    /^warning polling\.interval_ms @2:\d+ a device that drops out is found down 3 s after its first failed read .*, after its incident_after_s: .*\(7 \+ 3 \+ 3 > 10\), so the ring then no longer holds the oldest 3 s of the record's window/,
  );
  // A shorter delay is found within its window: no trigger of its own, nothing more to hold.
  assert.deepEqual(lines(slow(999, history)), []);
});
