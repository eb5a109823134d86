/**
 * A YAML escape can write a lone UTF-16 surrogate ("\ud800") that no UTF-8 text can carry: the
 * file itself is well-formed, so only the value is wrong. Written to an MQTT topic, a log line or a
 * file it becomes U+FFFD, so the Sparkplug edge node's own group/node id no longer matches the
 * topics the broker delivers (an NCMD Node Control/E-Stop to the node was ignored as "not a command
 * topic of this edge node"), and two provider ids differing only there become one device id on
 * the broker. Refused with its line and column, the value not echoed.
 */
import assert from "node:assert/strict";
import { load } from "./_helpers.ts";
import { loneSurrogateAt } from "../../src/config/_checker.ts";

function messages(r: ReturnType<typeof load>): string[] {
  return r.diagnostics.filter((d) => d.severity === "error").map((d) =>
    `${d.path} @${d.line}:${d.column} ${d.message}`
  );
}

const WHY = "which no UTF-8 text can carry";

Deno.test("a lone surrogate in a Sparkplug id, runtime.name or a provider id is an error with its line", () => {
  const r = load(`
runtime: {name: "rig\\ud800"}
providers:
  - {id: "p\\ud800", command: prov}
  - {id: "p\\udc00", command: prov}
sparkplug:
  enabled: true
  broker_url: mqtt://broker.lab:1883
  group_id: "lab\\udfff"
  edge_node_id: "n\\ud83dx"
  primary_host_id: "\\udc00scada"
  client_id: "c\\ud800"
`);
  const got = messages(r);
  assert.equal(r.config, null);
  assert.deepEqual(
    got.map((m) => m.slice(0, m.indexOf(" holds"))),
    [
      "runtime.name @1:11",
      "providers[0].id @3:6",
      "providers[1].id @4:6",
      "sparkplug.group_id @8:3",
      "sparkplug.edge_node_id @9:3",
      "sparkplug.primary_host_id @10:3",
      "sparkplug.client_id @11:3",
    ],
  );
  for (const m of got) assert.ok(m.includes(WHY), m);
  assert.ok(got[0]!.includes("(\\ud800 as character 4)"), got[0]);
});

Deno.test("a surrogate pair (an emoji) is well-formed and taken", () => {
  const r = load(`
runtime: {name: "rig-\\ud83d\\ude80"}
providers: [{id: p0, command: prov}]
`);
  assert.deepEqual(messages(r), []);
  assert.equal(r.config!.runtime.name, "rig-\u{1f680}");
});

Deno.test("loneSurrogateAt finds the first lone surrogate, -1 when there is none", () => {
  assert.equal(loneSurrogateAt("abc"), -1);
  assert.equal(loneSurrogateAt("a\u{1f680}b"), -1);
  assert.equal(loneSurrogateAt("a\ud800"), 1);
  assert.equal(loneSurrogateAt("\udc00a"), 0);
  assert.equal(loneSurrogateAt("\u{1f680}\ud83d"), 2);
  assert.equal(loneSurrogateAt("\ud83d\ud83d\ude80"), 0);
});
