/**
 * `sparkplug.max_message_bytes` (docs/sparkplug.md): absent means no bound (null); present, an
 * integer from MIN_SPARKPLUG_MESSAGE_BYTES to MAX_MQTT_PACKET_BYTES, otherwise an error naming the
 * key with its line and column, as --check-config reports every other key.
 */
import assert from "node:assert/strict";
import { load, PROV } from "./_helpers.ts";
import { MAX_MQTT_PACKET_BYTES, MIN_SPARKPLUG_MESSAGE_BYTES } from "../../src/config/mod.ts";

function messages(r: ReturnType<typeof load>): string[] {
  return r.diagnostics.map((d) => `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`);
}

const section = (value: string) => `
runtime: {name: rig-1}
sparkplug:
  enabled: true
  broker_url: mqtt://broker.lab:1883
  group_id: lab
  max_message_bytes: ${value}
${PROV}
`;

Deno.test("sparkplug.max_message_bytes is null (no bound) when absent or null", () => {
  assert.equal(load(`${PROV}\n`).config!.sparkplug.maxMessageBytes, null);
  const r = load(section("null"));
  assert.deepEqual(messages(r), []);
  assert.equal(r.config!.sparkplug.maxMessageBytes, null);
});

Deno.test("sparkplug.max_message_bytes takes its bounds exactly", () => {
  for (const v of [MIN_SPARKPLUG_MESSAGE_BYTES, 65536, MAX_MQTT_PACKET_BYTES]) {
    const r = load(section(String(v)));
    assert.deepEqual(messages(r), [], String(v));
    assert.equal(r.config!.sparkplug.maxMessageBytes, v);
  }
});

Deno.test("sparkplug.max_message_bytes out of bounds or not an integer: an error at its line and column", () => {
  for (
    const v of [
      String(MIN_SPARKPLUG_MESSAGE_BYTES - 1),
      "0",
      String(MAX_MQTT_PACKET_BYTES + 1),
      "1500.5",
      "big",
    ]
  ) {
    const r = load(section(v));
    const m = messages(r);
    assert.equal(m.length, 1, `${v}: ${m.join("\n")}`);
    assert.match(m[0]!, /^error sparkplug\.max_message_bytes @6:3 /, v);
    assert.equal(r.config, null, v);
  }
});
