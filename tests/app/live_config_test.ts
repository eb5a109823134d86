/**
 * The section table of the running configuration (src/app/live_config.ts): every key of the file
 * belongs to exactly one section, each with its live/restart rule, and the keys a reload reports
 * as needing a restart are derived from it. Pure: configurations loaded by the real loader.
 */
import assert from "node:assert/strict";
import {
  CONFIG_CHANGE_MAX_NAMES,
  CONFIG_SECTIONS,
  diffSections,
  isEmptySectionDiff,
  RESTART_ONLY_KEYS,
  sectionChanges,
  type SectionKey,
  sectionOf,
} from "../../src/app/live_config.ts";
import type { Config } from "../../src/config/mod.ts";
import { load } from "../config/_helpers.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

function cfg(yaml: string): Config {
  const r = load(yaml, { env: { INFLUXDB_TOKEN: "t" } });
  assert.ok(r.config, JSON.stringify(r.diagnostics));
  return r.config;
}

const BASE = `
polling: {interval_ms: 100}
logging: {level: info}
providers:
  - {id: a, command: prov}
  - {id: b, command: prov, args: [x]}
automation:
  enabled: true
  behavior_tree: /etc/rig/bt.xml
  parameters:
    - {name: keep, type: double, default: 1.5}
    - {name: redo, type: int64, default: 1, min: 0, max: 10}
`;

/** One change to the file, the live sections it changes and the keys that need a restart. */
const TABLE: [string, string, SectionKey[], string[]][] = [
  ["the same file", BASE, [], []],
  ["runtime.name", BASE + "runtime: {name: other}\n", [], ["runtime.name"]],
  ["runtime.data_dir", BASE + "runtime: {data_dir: /tmp/x}\n", [], ["runtime.data_dir"]],
  [
    "runtime.shutdown_timeout_ms",
    BASE + "runtime: {shutdown_timeout_ms: 9000}\n",
    [],
    ["runtime.shutdown_timeout_ms"],
  ],
  [
    "runtime.startup_timeout_ms",
    BASE + "runtime: {startup_timeout_ms: 9000}\n",
    [],
    ["runtime.startup_timeout_ms"],
  ],
  ["http.port", BASE + "http: {port: 9999}\n", [], ["http.port"]],
  [
    "http.bind and cors",
    BASE + 'http: {bind: 127.0.0.2, cors_allowed_origins: ["http://x"]}\n',
    [],
    ["http.bind", "http.cors_allowed_origins"],
  ],
  ["http.auth_token", BASE + "http: {auth_token: s3cret}\n", ["http.auth_token"], []],
  [
    "http.tokens",
    BASE + "http: {tokens: [{name: ops, token: abcdefghijklmnop, role: operator}]}\n",
    ["http.tokens"],
    [],
  ],
  ["providers", BASE.replace("args: [x]", "args: [y]"), ["providers"], []],
  ["polling", BASE.replace("interval_ms: 100", "interval_ms: 250"), ["polling"], []],
  ["health", BASE + "health: {staleness: {warn_after_ms: 500}}\n", ["health"], []],
  ["logging", BASE.replace("level: info", "level: debug"), ["logging"], []],
  ["telemetry", BASE + 'telemetry: {influxdb: {url: "http://db:8086"}}\n', ["telemetry"], []],
  ["automation.enabled", BASE.replace("enabled: true", "enabled: false"), [], [
    "automation.enabled",
  ]],
  [
    "automation.tick_rate_hz",
    BASE.replace("enabled: true", "enabled: true\n  tick_rate_hz: 5"),
    ["automation.behavior_tree"],
    [],
  ],
  ["automation.parameters", BASE.replace("max: 10", "max: 20"), ["automation.parameters"], []],
  [
    "automation.manual_gating_policy",
    BASE.replace("enabled: true", "enabled: true\n  manual_gating_policy: OVERRIDE"),
    ["automation.mode_transition_hooks"],
    [],
  ],
  ["safety", BASE + "safety: {safe_state: {zero_is_safe: true}}\n", ["safety"], []],
  ["alarms", BASE + "alarms: [{id: hot, signal: a/t0/temp, hi: 50}]\n", ["alarms"], []],
  [
    "interlocks",
    BASE + "interlocks: [{id: il, block: [a/t0/f], while: 'a/t0/temp > 1', message: m}]\n",
    ["alarms"],
    [],
  ],
  ["audit.max_files", BASE + "audit: {max_files: 3}\n", [], ["audit.max_files"]],
];

for (const [what, yaml, live, restart] of TABLE) {
  Deno.test(`diffSections: ${what} -> live [${live.join(", ")}], restart [${restart.join(", ")}]`, () => {
    const d = diffSections(cfg(BASE), cfg(yaml));
    assert.deepEqual(d.live, live);
    assert.deepEqual(d.needsRestart, restart);
    assert.equal(isEmptySectionDiff(d), live.length + restart.length === 0);
    // Every key reported as needing a restart is covered by a restart row of the table.
    for (const key of restart) {
      assert.ok(
        RESTART_ONLY_KEYS.includes(key) ||
          RESTART_ONLY_KEYS.includes(key.replace(/\.[^.]+$/, ".*")),
        key,
      );
    }
  });
}

Deno.test("The section table covers every field of the configuration, each in exactly one section", () => {
  const base = cfg(BASE);
  // Every top-level field but the file's own path: changing it alone is seen by some section.
  const fields = Object.keys(base).filter((k) => k !== "configPath" && k !== "configDir");
  for (const field of fields) {
    const sub = (base as unknown as Record<string, unknown>)[field];
    const keys = sub !== null && typeof sub === "object" && !Array.isArray(sub)
      ? Object.keys(sub).map((k) => [field, k] as const)
      : [[field, null] as const];
    for (const [top, inner] of keys) {
      const changed = structuredClone(base) as unknown as Record<string, Record<string, unknown>>;
      if (inner === null) changed[top] = ["changed"] as unknown as Record<string, unknown>;
      else changed[top]![inner] = "changed";
      const seeing = CONFIG_SECTIONS.filter((s) =>
        JSON.stringify(s.read(base)) !== JSON.stringify(s.read(changed as unknown as Config))
      ).map((s) => s.key);
      assert.equal(seeing.length, 1, `${top}${inner ? `.${inner}` : ""} is seen by ${seeing}`);
    }
  }
});

Deno.test("A section taken from the new configuration changes only that section", () => {
  const before = cfg(BASE);
  const after = cfg(BASE.replace("interval_ms: 100", "interval_ms: 250") + "http: {port: 9999}\n");
  const taken = sectionOf("polling").take(before, after);
  assert.equal(taken.polling.intervalMs, 250);
  assert.equal(taken.http.port, before.http.port, "http.* is not taken with polling");
  assert.deepEqual(diffSections(before, taken).live, ["polling"]);
  assert.deepEqual(diffSections(taken, after).needsRestart, ["http.port"]);
  // The restart-only list is the table's restart rows, not a second list.
  assert.deepEqual(
    RESTART_ONLY_KEYS,
    CONFIG_SECTIONS.filter((s) => s.rule === "restart").map((s) => s.key),
  );
});

Deno.test("diffSections sorts providers and parameters member by member", () => {
  const next = BASE.replace("args: [x]", "args: [y]").replace(
    "{id: a, command: prov}",
    "{id: d, command: prov}",
  )
    .replace("max: 10", "max: 20");
  const d = diffSections(cfg(BASE), cfg(next));
  assert.deepEqual(
    [d.providers.added.map((p) => p.id), d.providers.removed, d.providers.changed.map((p) => p.id)],
    [["d"], ["a"], ["b"]],
  );
  assert.deepEqual(d.parameters.redeclared, ["redo"]);
  assert.deepEqual(d.parameters.unchanged, ["keep"]);
});

Deno.test("sectionChanges names what a section changed by id and key, never a value, at most CONFIG_CHANGE_MAX_NAMES names", () => {
  const base = testConfig();
  assert.equal(sectionChanges("providers", base, base), null, "the same section: nothing");
  const many = Array.from({ length: CONFIG_CHANGE_MAX_NAMES + 8 }, (_, i) => simProvider(`p${i}`));
  const wide = sectionChanges("providers", base, { ...base, providers: many })!;
  assert.equal(wide.added.length + wide.removed.length, CONFIG_CHANGE_MAX_NAMES);
  assert.equal(wide.omitted, 9, "the rest counted (40 added, sim0 removed)");
  const secret = "influx-secret-token";
  const token = sectionChanges("telemetry", base, {
    ...base,
    telemetry: { ...base.telemetry, influxdb: { ...base.telemetry.influxdb, token: secret } },
  })!;
  assert.deepEqual(token.changed, ["telemetry.influxdb.token"]);
  assert.ok(!JSON.stringify(token).includes(secret));
});

Deno.test("sectionChanges names an alarm or interlock changed only when it is, not when an entry before it was removed or moved", () => {
  const ALARMS = `
alarms:
  - {id: first, signal: a/d/s1, hi: 1}
  - {id: second, signal: a/d/s2, hi: 2}
interlocks:
  - {id: i1, block: [a/d/f1], while: a/d/s1 > 1, message: held}
  - {id: i2, block: [a/d/f2], while: a/d/s2 > 2, message: held}
`;
  const before = cfg(BASE + ALARMS);
  const removed = cfg(
    BASE + `
alarms:
  - {id: second, signal: a/d/s2, hi: 2}
interlocks:
  - {id: i2, block: [a/d/f2], while: a/d/s2 > 2, message: held}
`,
  );
  assert.deepEqual(sectionChanges("alarms", before, removed), {
    added: [],
    removed: ["alarms[first]", "interlocks[i1]"],
    changed: [],
    omitted: 0,
  });
  // The same entries in another order: nothing of theirs changed.
  const moved = cfg(
    BASE + `
alarms:
  - {id: second, signal: a/d/s2, hi: 2}
  - {id: first, signal: a/d/s1, hi: 1}
interlocks:
  - {id: i2, block: [a/d/f2], while: a/d/s2 > 2, message: held}
  - {id: i1, block: [a/d/f1], while: a/d/s1 > 1, message: held}
`,
  );
  assert.deepEqual(sectionChanges("alarms", before, moved), {
    added: [],
    removed: [],
    changed: [],
    omitted: 0,
  });
  // A real change is still named.
  const raised = cfg(BASE + ALARMS.replace("hi: 2", "hi: 3"));
  assert.deepEqual(sectionChanges("alarms", before, raised)?.changed, ["alarms[second]"]);
});
