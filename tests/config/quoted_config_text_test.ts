/**
 * Config text a message names (a provider id, a command, a bind address, an origin, a host, a
 * handle's provider, a parameter name, runtime.name) is cut and quoted as every config message
 * quotes it (quoteProviderText: JSON quotes, control characters escaped, cut to
 * PROVIDER_TEXT_CHARS): a 10 kB value holding a quote and a line break makes one bounded line that
 * cannot forge the rest of it.
 */
import assert from "node:assert/strict";
import { PROVIDER_TEXT_CHARS } from "../../src/common/mod.ts";
import { load, PROV } from "./_helpers.ts";

/** 10 kB of config text holding a quote and a line break (YAML double-quoted). */
const BODY = "x".repeat(10_000);
const YAML_TEXT = `"'\\n${BODY}"`;
/** The text as a message quotes it: cut to PROVIDER_TEXT_CHARS, JSON-quoted. */
const QUOTED = `"'\\n${"x".repeat(PROVIDER_TEXT_CHARS - 2)}\u2026"`;

/** A diagnostic as `severity path: message`, and each one bounded and on one line. */
function messages(yaml: string): string[] {
  const r = load(yaml);
  const out = r.diagnostics.map((d) => `${d.severity} ${d.path}: ${d.message}`);
  for (const m of out) {
    assert.ok(m.length < 1000, m.slice(0, 300));
    assert.ok(!m.includes("\n"), m.slice(0, 300));
  }
  return out;
}

/** Sparkplug on, its edge node id left to default to runtime.name. */
const SPARKPLUG = "sparkplug:\n  enabled: true\n  broker_url: mqtt://broker.lab\n  group_id: g\n";

function assertSays(yaml: string, expected: string): void {
  const said = messages(yaml);
  assert.ok(said.includes(expected), `no '${expected}' in:\n${said.join("\n").slice(0, 2000)}`);
}

const CASES: Array<{ name: string; yaml: string; expected: string }> = [
  {
    name: "a provider id holding '/'",
    yaml: `providers: [{id: "'\\n${BODY}/", command: prov}]\n`,
    expected: `error providers[0].id: ${QUOTED} must not contain '/' ` +
      "(a device handle is provider/device)",
  },
  {
    name: "a duplicate provider id",
    yaml: `providers: [{id: ${YAML_TEXT}, command: prov}, {id: ${YAML_TEXT}, command: prov}]\n`,
    expected: `error providers[1].id: duplicate provider id ${QUOTED} (first at providers[0])`,
  },
  {
    name: "a command not found on PATH",
    yaml: `providers: [{id: p0, command: ${YAML_TEXT}}]\n`,
    expected: `warning providers[0].command: ${QUOTED} not found on PATH`,
  },
  {
    name: "a bind address that is not loopback",
    yaml: `${PROV}\nhttp:\n  bind: ${YAML_TEXT}\n`,
    expected: `error http.bind: ${QUOTED} is not a loopback address and auth_enabled is false: ` +
      "anyone on the network could operate the machine (enable auth, or set " +
      "allow_insecure_bind: true)",
  },
  {
    name: "a CORS origin that never matches",
    yaml: `${PROV}\nhttp:\n  cors_allowed_origins: [${YAML_TEXT}]\n`,
    expected: `warning http.cors_allowed_origins[0]: ${QUOTED} never matches: a browser sends ` +
      "its Origin as scheme://host[:port]",
  },
  {
    name: "allowed_hosts as one string",
    yaml: `${PROV}\nhttp:\n  allowed_hosts: ${YAML_TEXT}\n`,
    expected: `error http.allowed_hosts: ${QUOTED} is not a host name: write \`name\` or ` +
      "`name:port`",
  },
  {
    name: "an allowed_hosts entry",
    yaml: `${PROV}\nhttp:\n  allowed_hosts: [${YAML_TEXT}]\n`,
    expected: `error http.allowed_hosts[0]: ${QUOTED} is not a host name: write \`name\` or ` +
      "`name:port` (no scheme, path or wildcard)",
  },
  {
    name: "a hook call's undeclared provider",
    yaml: `${PROV}\nautomation:\n  mode_transition_hooks:\n    before_transition:\n` +
      `      - from: IDLE\n        to: MANUAL\n        calls:\n` +
      `          - {device_handle: "'\\n${BODY}/d0", function_name: open}\n`,
    expected: "warning automation.mode_transition_hooks.before_transition[0].calls[0]." +
      `device_handle: provider ${QUOTED} is not declared in providers; the call cannot resolve`,
  },
  {
    name: "a duplicate parameter name",
    yaml: `${PROV}\nautomation:\n  parameters:\n` +
      `    - {name: ${YAML_TEXT}, type: bool, default: true}\n` +
      `    - {name: ${YAML_TEXT}, type: bool, default: false}\n`,
    expected: `error automation.parameters[1].name: duplicate parameter name ${QUOTED} ` +
      "(first at automation.parameters[0])",
  },
  {
    name: "an expectation's undeclared provider",
    yaml: `${PROV}\nsafety:\n  safe_state:\n    expect:\n` +
      `      - { signal: "'\\n${BODY}/d/s", equals: 0 }\n`,
    expected: `warning safety.safe_state.expect[0].signal: provider ${QUOTED} is not declared ` +
      "in providers; this expectation can never verify",
  },
  {
    name: "runtime.name holding '/' as the edge node id",
    yaml: `runtime: {name: "'${BODY}/"}\n${PROV}\n${SPARKPLUG}`,
    expected: `error sparkplug.edge_node_id: defaults to runtime.name "'${
      "x".repeat(PROVIDER_TEXT_CHARS - 1)
    }\u2026", which contains '/', '+' or '#': set it`,
  },
  {
    name: "runtime.name holding a control character as the edge node id",
    yaml: `runtime: {name: ${YAML_TEXT}}\n${PROV}\n${SPARKPLUG}`,
    expected: `error sparkplug.edge_node_id: defaults to runtime.name ${QUOTED}, which contains ` +
      "control characters or Unicode non-characters (the broker closes the connection of a " +
      "client that sends one): set it",
  },
  {
    name: "an alarm's undeclared provider",
    yaml: `${PROV}\nalarms:\n  - { id: a, signal: "'\\n${BODY}/d/s", hi: 1 }\n`,
    expected: `error alarms[0].signal: provider ${QUOTED} is not declared in providers`,
  },
  {
    // A condition is at most 1024 characters: the longest provider id it can name.
    name: "an interlock condition's undeclared provider",
    yaml:
      `${PROV}\ninterlocks:\n  - { id: i, block: [p0/d/f], while: "g${
        "x".repeat(1000)
      }/d/s > 2", ` +
      "message: m }\n",
    expected: `error interlocks[0].while: column 1 of the condition: provider "g${
      "x".repeat(PROVIDER_TEXT_CHARS - 1)
    }\u2026" of g${"x".repeat(PROVIDER_TEXT_CHARS - 1)}\u2026 is not declared in providers`,
  },
];

for (const c of CASES) {
  Deno.test(`a config message names ${c.name} cut and quoted`, () => {
    assertSays(c.yaml, c.expected);
  });
}

Deno.test("a config message names a path the file system did not answer about cut and quoted", () => {
  const r = load(`providers: [{id: p0, command: "/opt/'\\n${BODY}"}]\n`, {
    unanswered: (kind) => kind === "path" ? "no answer within 2000 ms" : null,
  });
  const said = r.diagnostics.map((d) => `${d.severity} ${d.path}: ${d.message}`);
  assert.deepEqual(said, [
    `error providers[0].command: cannot check ${
      JSON.stringify(`/opt/'\n${BODY}`.slice(0, PROVIDER_TEXT_CHARS) + "\u2026")
    }: no answer within 2000 ms`,
  ]);
});
