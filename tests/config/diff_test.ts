import assert from "node:assert/strict";
import { type Config, diffConfig, isEmptyDiff, RESTART_ONLY_KEYS } from "../../src/config/mod.ts";
import { load } from "./_helpers.ts";

/** Loads inline YAML that must be valid. */
function cfg(yaml: string): Config {
  const r = load(yaml);
  assert.ok(r.config, JSON.stringify(r.diagnostics));
  return r.config;
}

const BASE = `
polling: {interval_ms: 100}
logging: {level: info}
providers:
  - {id: a, command: prov}
  - {id: b, command: prov, args: [x]}
  - {id: c, command: prov}
`;

Deno.test("diffConfig finds nothing between two loads of the same file", () => {
  const d = diffConfig(cfg(BASE), cfg(BASE));
  assert.ok(isEmptyDiff(d), JSON.stringify(d));
  assert.deepEqual(d.providers.unchanged, ["a", "b", "c"]);
});

Deno.test("diffConfig matches providers by id: added, removed, changed (any field), unchanged", () => {
  const next = cfg(`
providers:
  - {id: d, command: prov}
  - {id: b, command: prov, args: [y]}
  - {id: a, command: prov}
  - {id: c, command: prov, timeout_ms: 9000}
polling: {interval_ms: 100}
logging: {level: info}
`);
  const d = diffConfig(cfg(BASE), next).providers;
  assert.deepEqual(d.added.map((p) => p.id), ["d"]);
  assert.deepEqual(d.removed, []);
  assert.deepEqual(d.changed.map((p) => p.id), ["b", "c"]);
  assert.deepEqual(d.unchanged, ["a"]);
  const removed = diffConfig(
    cfg(BASE),
    cfg("providers: [{id: b, command: prov, args: [x]}]\npolling: {interval_ms: 100}"),
  ).providers;
  assert.deepEqual(removed.removed, ["a", "c"]);
  assert.deepEqual(removed.unchanged, ["b"]);
});

Deno.test("diffConfig counts a changed restart_policy as a changed provider", () => {
  const next = cfg(
    BASE.replace(
      "{id: a, command: prov}",
      "{id: a, command: prov, restart_policy: {enabled: true, max_attempts: 1, backoff_ms: [10], timeout_ms: 1000}}",
    ),
  );
  assert.deepEqual(diffConfig(cfg(BASE), next).providers.changed.map((p) => p.id), ["a"]);
});

Deno.test("diffConfig reports polling interval and log level as from -> to", () => {
  const d = diffConfig(
    cfg(BASE),
    cfg(BASE.replace("interval_ms: 100", "interval_ms: 250").replace("info", "debug")),
  );
  assert.deepEqual(d.pollingIntervalMs, { from: 100, to: 250 });
  assert.deepEqual(d.loggingLevel, { from: "info", to: "debug" });
  assert.deepEqual(d.needsRestart, []);
  assert.ok(!isEmptyDiff(d));
});

Deno.test("diffConfig names every changed http key and runtime key as needing a restart, in YAML spelling", () => {
  const d = diffConfig(
    cfg(BASE),
    cfg(
      `${BASE}http: {port: 9999, bind: 127.0.0.2, cors_allowed_origins: ["http://x"]}\n` +
        "runtime: {data_dir: /tmp/other, name: other}\n" +
        "audit: {max_files: 3}\n",
    ),
  );
  assert.deepEqual(d.needsRestart, [
    "runtime.name",
    "runtime.data_dir",
    "http.bind",
    "http.port",
    "http.cors_allowed_origins",
    "audit.max_files",
  ]);
  // Every key reported is one the documented list names (`http.*` stands for each http key).
  for (const key of d.needsRestart) {
    assert.ok(
      RESTART_ONLY_KEYS.includes(key) || RESTART_ONLY_KEYS.includes(key.replace(/\.[^.]+$/, ".*")),
      key,
    );
  }
  assert.ok(!d.telemetry && !d.safety && d.pollingIntervalMs === null);
});

Deno.test("diffConfig sees telemetry, health, safety and alarm changes per section", () => {
  const base = cfg(BASE);
  const t = diffConfig(base, cfg(`${BASE}telemetry: {influxdb: {url: "http://db:8086"}}\n`));
  assert.deepEqual([t.telemetry, t.health, t.safety, t.alarms], [true, false, false, false]);
  const h = diffConfig(base, cfg(`${BASE}health: {staleness: {warn_after_ms: 500}}\n`));
  assert.deepEqual([h.telemetry, h.health, h.safety, h.alarms], [false, true, false, false]);
  const s = diffConfig(base, cfg(`${BASE}safety: {safe_state: {zero_is_safe: true}}\n`));
  assert.deepEqual([s.telemetry, s.health, s.safety, s.alarms], [false, false, true, false]);
  const al = diffConfig(
    base,
    cfg(`${BASE}alarms: [{id: hot, signal: a/t0/temp, hi: 50}]\n`),
  );
  assert.deepEqual([al.telemetry, al.health, al.safety, al.alarms], [false, false, false, true]);
});

const AUTO = `
automation:
  enabled: true
  behavior_tree: /etc/rig/bt.xml
  parameters:
    - {name: keep, type: double, default: 1.5}
    - {name: redo, type: int64, default: 1, min: 0, max: 10}
    - {name: gone, type: bool, default: true}
`;

Deno.test("diffConfig sorts parameters into added, removed, redeclared (any declaration field) and unchanged", () => {
  const next = AUTO.replace("max: 10", "max: 20").replace(
    "{name: gone, type: bool, default: true}",
    "{name: fresh, type: string, default: x}",
  );
  const d = diffConfig(cfg(BASE + AUTO), cfg(BASE + next));
  assert.deepEqual(d.parameters, {
    added: ["fresh"],
    removed: ["gone"],
    redeclared: ["redo"],
    unchanged: ["keep"],
  });
  assert.equal(d.behaviorTree, false);
  assert.equal(d.modeHooks, false);
});

Deno.test("diffConfig sees a behavior-tree path or tick-rate change, hooks, and automation.enabled (restart)", () => {
  const base = cfg(BASE + AUTO);
  const rate = diffConfig(
    base,
    cfg(BASE + AUTO.replace("enabled: true", "enabled: true\n  tick_rate_hz: 5")),
  );
  assert.equal(rate.behaviorTree, true);
  const path = diffConfig(
    base,
    cfg(BASE + AUTO.replace("/etc/rig/bt.xml", "/etc/rig/tls/cert.pem")),
  );
  assert.equal(path.behaviorTree, true);
  const policy = diffConfig(
    base,
    cfg(BASE + AUTO.replace("enabled: true", "enabled: true\n  manual_gating_policy: OVERRIDE")),
  );
  assert.deepEqual([policy.modeHooks, policy.behaviorTree], [true, false]);
  const off = diffConfig(base, cfg(BASE));
  assert.ok(off.needsRestart.includes("automation.enabled"));
});
