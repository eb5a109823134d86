/**
 * The `sparkplug:` section (docs/sparkplug.md): off by default, every key checked with its line
 * and column whether or not it is enabled, ids resolved, and broker credentials only from the
 * environment, never echoed.
 */
import assert from "node:assert/strict";
import { load, PROV, summary } from "./_helpers.ts";
import { diffSections } from "../../src/app/live_config.ts";
import { sparkplugIdProblem, sparkplugIds } from "../../src/config/mod.ts";
import { PROVIDER_TEXT_CHARS, URL_TEXT_CHARS } from "../../src/common/mod.ts";

function messages(r: ReturnType<typeof load>): string[] {
  return r.diagnostics.map((d) => `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`);
}

Deno.test("sparkplug is off by default, and its ids default to runtime.name", () => {
  const r = load(`runtime: {name: rig-1}\n${PROV}\n`);
  assert.deepEqual(summary(r), []);
  const s = r.config!.sparkplug;
  assert.equal(s.enabled, false);
  assert.equal(s.edgeNodeId, "");
  assert.equal(s.primaryHostId, "", "no primary host: births go out on connect");
  assert.deepEqual(sparkplugIds(r.config!), { edgeNodeId: "rig-1", clientId: "-rig-1" });
  assert.equal(s.keepAliveS, 30);
  assert.equal(s.qos, 0);
  assert.equal(s.commands, false);
  assert.equal(s.role, "operator");
  assert.deepEqual(s.storeForward, { maxMessages: 10000, maxBytes: 16777216 });
});

Deno.test("an enabled section resolves its ids, TLS files and bounds", () => {
  const r = load(`
runtime: {name: rig-1}
sparkplug:
  enabled: true
  broker_url: mqtts://broker.lab:8883
  group_id: lab
  primary_host_id: scada-1
  keep_alive_s: 10
  qos: 1
  commands: true
  role: admin
  tls: {ca_file: tls/cert.pem}
  store_forward: {max_messages: 5, max_bytes: 4096}
${PROV}
`);
  assert.deepEqual(
    messages(r).map((m) => m.split(" ").slice(0, 3).join(" ")),
    ["warning sparkplug.qos @8:3"],
  );
  const s = r.config!.sparkplug;
  assert.equal(s.enabled, true);
  assert.equal(s.brokerUrl, "mqtts://broker.lab:8883");
  assert.equal(s.groupId, "lab");
  assert.deepEqual(sparkplugIds(r.config!), { edgeNodeId: "rig-1", clientId: "lab-rig-1" });
  assert.equal(s.primaryHostId, "scada-1");
  assert.equal(s.keepAliveS, 10);
  assert.equal(s.qos, 1);
  assert.equal(s.commands, true);
  assert.equal(s.role, "admin");
  assert.deepEqual(s.tls, { caPath: "/etc/rig/tls/cert.pem", certPath: null, keyPath: null });
  assert.deepEqual(s.storeForward, { maxMessages: 5, maxBytes: 4096 });
});

Deno.test("qos: 1 is warned at its line and column, naming the Sparkplug B 3.0 rules it breaks; 0 is not", () => {
  const yaml = (qos: number) => `${PROV}\nsparkplug:\n  group_id: lab\n  qos: ${qos}\n`;
  const one = load(yaml(1));
  assert.equal(one.config!.sparkplug.qos, 1, "honoured: the operator's choice");
  const said = messages(one);
  assert.equal(said.length, 1, said.join("\n"));
  assert.match(said[0]!, /^warning sparkplug\.qos @4:3 publishes NDATA and DDATA at MQTT QoS 1/);
  assert.match(said[0]!, /tck-id-topics-ndata-mqtt, tck-id-topics-ddata-mqtt/);
  const zero = load(yaml(0));
  assert.equal(zero.config!.sparkplug.qos, 0);
  assert.deepEqual(messages(zero), []);
});

Deno.test("an enabled section without broker, group or a name says which is missing, where", () => {
  const r = load(`${PROV}\nsparkplug:\n  enabled: true\n`);
  assert.deepEqual(summary(r), [
    "error sparkplug.broker_url @2",
    "error sparkplug.edge_node_id @2",
    "error sparkplug.group_id @2",
  ]);
  assert.ok(messages(r).some((m) => m.endsWith("is required when runtime.name is empty")));
});

Deno.test("bad values are reported at their line and column, even with sparkplug off", () => {
  const r = load(`
${PROV}
sparkplug:
  broker_url: ws://broker:9001
  group_id: "lab/a"
  edge_node_id: "node#1"
  keep_alive_s: 1
  qos: 2
  role: root
  store_forward: {max_messages: -1}
  primary_host_id: "scada/+"
`);
  assert.deepEqual(messages(r).map((m) => m.split(" ").slice(0, 3).join(" ")).sort(), [
    "error sparkplug.broker_url @3:3",
    "error sparkplug.edge_node_id @5:3",
    "error sparkplug.group_id @4:3",
    "error sparkplug.keep_alive_s @6:3",
    "error sparkplug.primary_host_id @10:3",
    "error sparkplug.qos @7:3",
    "error sparkplug.role @8:3",
    "error sparkplug.store_forward.max_messages @9:19",
  ]);
  assert.ok(
    messages(r).some((m) =>
      m.endsWith('must be an mqtt:// or mqtts:// URL, got "ws://broker:9001"')
    ),
  );
  assert.ok(
    messages(r).some((m) =>
      m.startsWith("error sparkplug.primary_host_id") &&
      m.endsWith(
        `must not contain '/', '+' or '#' (MQTT topic characters), got "scada/+"`,
      )
    ),
  );
});

Deno.test("credentials in the file are refused and never echoed; they come from the environment", () => {
  const r = load(`
runtime: {name: rig}
sparkplug:
  enabled: true
  broker_url: mqtt://bob:hunter2secret@broker.lab
  group_id: lab
  password: hunter2secret
  username: bob
${PROV}
`);
  const text = messages(r).join("\n");
  assert.deepEqual(summary(r), [
    "error sparkplug.broker_url @4",
    "error sparkplug.password @6",
    "error sparkplug.username @7",
  ]);
  assert.ok(!text.includes("hunter2secret"), text);
  assert.match(text, /SPARKPLUG_USERNAME and SPARKPLUG_PASSWORD/);
});

Deno.test("TLS files need mqtts:// and a client certificate needs its key", () => {
  const r = load(`
runtime: {name: rig}
sparkplug:
  enabled: true
  broker_url: mqtt://broker.lab
  group_id: lab
  tls: {cert_file: tls/cert.pem}
${PROV}
`);
  assert.deepEqual(summary(r), ["error sparkplug.tls @6", "error sparkplug.tls.cert_file @6"]);
});

Deno.test("a missing TLS file warns under --check-config and stops the start", () => {
  const yaml = `
runtime: {name: rig}
sparkplug: {enabled: true, broker_url: "mqtts://b", group_id: g, tls: {ca_file: nope.pem}}
${PROV}
`;
  assert.deepEqual(summary(load(yaml)), ["warning sparkplug.tls.ca_file @2"]);
  assert.deepEqual(summary(load(yaml, { mode: "start" })), ["error sparkplug.tls.ca_file @2"]);
});

Deno.test("commands with the viewer role warn that every command will be refused", () => {
  const r = load(`
runtime: {name: rig}
sparkplug: {enabled: true, broker_url: "mqtt://b", group_id: g, commands: true, role: viewer}
${PROV}
`);
  assert.deepEqual(summary(r), ["warning sparkplug.role @2"]);
});

Deno.test("a changed sparkplug section needs a restart, named key by key", () => {
  const base = `runtime: {name: rig}\n${PROV}\nsparkplug: {group_id: g, qos: 0}\n`;
  const before = load(base).config!;
  const after = load(base.replace("qos: 0", "qos: 1")).config!;
  const d = diffSections(before, after);
  assert.deepEqual(d.live, []);
  assert.deepEqual(d.needsRestart, ["sparkplug.qos"]);
});

Deno.test("a Sparkplug id or client id with a control or non-character is refused, quoted on one line", () => {
  const r = load(`
runtime: {name: "rig\\r"}
sparkplug:
  enabled: true
  broker_url: mqtt://broker.lab
  group_id: "lab\\t1"
  primary_host_id: "scada\\uffff"
  client_id: "c\\u0085"
${PROV}
`);
  assert.deepEqual(summary(r), [
    "error sparkplug.client_id @7",
    "error sparkplug.edge_node_id @2",
    "error sparkplug.group_id @5",
    "error sparkplug.primary_host_id @6",
  ]);
  assert.ok(
    messages(r).some((m) =>
      m.startsWith("error sparkplug.group_id") && m.endsWith(`got "lab\\t1"`) && !m.includes("\t")
    ),
    messages(r).join("\n"),
  );
  assert.ok(
    messages(r).some((m) =>
      m.startsWith("error sparkplug.edge_node_id") && m.includes(`runtime.name "rig\\r"`)
    ),
    messages(r).join("\n"),
  );
});

Deno.test("a Sparkplug id or broker url of 10 kB makes a bounded error, the text cut and quoted", () => {
  const huge = "x".repeat(10_000);
  const cut = (text: string, chars: number) => `"${text.slice(0, chars)}\u2026"`;
  // A topic character, a control character (DEL, C1 too), a broker url that is not one.
  assert.equal(
    sparkplugIdProblem(`a/${huge}`),
    `must not contain '/', '+' or '#' (MQTT topic characters), got ${
      cut(`a/${huge}`, PROVIDER_TEXT_CHARS)
    }`,
  );
  // NEL, one character of the PROVIDER_TEXT_CHARS kept, is written `\u0085`.
  assert.ok(
    sparkplugIdProblem(`a\u0085${huge}`)!.endsWith(
      `got "a\\u0085${"x".repeat(PROVIDER_TEXT_CHARS - 2)}\u2026"`,
    ),
  );
  const r = load(`runtime: {name: rig}
sparkplug:
  group_id: "lab/${huge}"
  broker_url: "not a url ${huge}"
${PROV}
`);
  const errors = messages(r);
  assert.equal(errors.length, 2, errors.join("\n").slice(0, 500));
  for (const m of errors) assert.ok(m.length < 400, `${m.length}: ${m.slice(0, 500)}`);
  assert.ok(errors.some((m) => m.endsWith(`got ${cut(`lab/${huge}`, PROVIDER_TEXT_CHARS)}`)));
  assert.ok(errors.some((m) => m.endsWith(`got ${cut(`not a url ${huge}`, URL_TEXT_CHARS)}`)));
});
