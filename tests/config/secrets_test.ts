/** A secret never appears in a config diagnostic, whichever layer reports it (README). */
import assert from "node:assert/strict";
import { RUNTIME_CONFIG_SCHEMA } from "../../src/config/mod.ts";
import { load, PROV } from "./_helpers.ts";

/** Every diagnostic as one string: path, message, position. */
function shown(yaml: string): string[] {
  return load(yaml).diagnostics.map((d) =>
    `${d.line}:${d.column} ${d.severity} ${d.path}: ${d.message}`
  );
}

function assertHidden(lines: string[], ...secrets: string[]): void {
  for (const s of secrets) {
    for (const line of lines) assert.ok(!line.includes(s), `'${s}' leaked: ${line}`);
  }
}

/** Property paths of the schema whose key names a secret (walks properties, items and $defs). */
function secretSchemaPaths(): string[] {
  const out: string[] = [];
  const walk = (schema: unknown, path: string) => {
    if (schema === null || typeof schema !== "object") return;
    const s = schema as Record<string, unknown>;
    const props = s.properties as Record<string, unknown> | undefined;
    for (const [key, sub] of Object.entries(props ?? {})) {
      const p = path === "" ? key : `${path}.${key}`;
      if (/token|password|passwd|secret|passphrase|api_?key/i.test(key)) out.push(p);
      walk(sub, p);
    }
    if (s.items) walk(s.items, `${path}[]`);
  };
  walk(RUNTIME_CONFIG_SCHEMA, "");
  return out;
}

Deno.test("loadConfig never echoes http.auth_token of the wrong type (semantic layer)", () => {
  const lines = shown(`
http:
  auth_token: 12345678901
${PROV}`);
  assert.deepEqual(lines, [
    "2:3 error http.auth_token: must be a string, got a number (<redacted>)",
  ]);
});

Deno.test("loadConfig never echoes telemetry.influxdb.token or its alias influx_token", () => {
  const lines = shown(`
telemetry:
  influxdb:
    token: 98765432101
  influx_token: 55555555555
${PROV}`);
  assertHidden(lines, "98765432101", "55555555555");
  assert.ok(
    lines.some((l) => l.startsWith("3:5 error telemetry.influxdb.token: must be a string")),
  );
  assert.ok(lines.some((l) => l.startsWith("4:3 error telemetry.influx_token: must be a string")));
});

Deno.test("loadConfig hides every secret-bearing key of the schema, whatever the wrong value", () => {
  const paths = secretSchemaPaths();
  for (const known of ["http.auth_token", "telemetry.influxdb.token", "telemetry.influx_token"]) {
    assert.ok(paths.includes(known), `${known} is found as secret-bearing`);
  }
  const values = ["12345678901", "true", "[31415926535]", "{k: 27182818284}", "0x1F2E3D4C"];
  for (const path of paths.filter((p) => !p.includes("[]"))) {
    for (const value of values) {
      // Nest the value under its path: a.b.c -> a:\n  b:\n    c: value
      const keys = path.split(".");
      const yaml = keys.map((k, i) => `${"  ".repeat(i)}${k}:`).join("\n") + ` ${value}\n${PROV}`;
      const lines = shown(`\n${yaml}`);
      assert.ok(lines.some((l) => l.includes(` ${path}`)), `${path}: ${value} is reported`);
      // 0x1F2E3D4C is 523124044 once parsed: neither form may appear.
      assertHidden(lines, "12345678901", "31415926535", "27182818284", "0x1F2E3D4C", "523124044");
    }
  }
});

Deno.test("loadConfig never echoes a secret a call argument carries (value out of range)", () => {
  const lines = shown(`
safety:
  safe_state:
    hooks:
      - {device_handle: p0/d0, function_id: 1, args: {password: 99999999999999999999}}
${PROV}`);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^4:55 error safety\.safe_state\.hooks\[0\]\.args\.password: /);
  assertHidden(lines, "99999999999999999999");
});

Deno.test("loadConfig unknown-key warnings hide a key that carries a pasted secret", () => {
  const lines = shown(`
http:
  auth_token=s3cr3tv4lue: null
  auth_tokn: s3cr3tv4lue
auth_token: s3cr3tv4lue
${PROV}`);
  assertHidden(lines, "s3cr3tv4lue");
  assert.deepEqual(lines, [
    "2:3 warning http.<redacted>: unknown key '<redacted>' will be ignored",
    "3:3 warning http.auth_tokn: unknown key 'auth_tokn' will be ignored (did you mean 'auth_token'?)",
    "4:1 warning auth_token: unknown key 'auth_token' will be ignored",
  ]);
});

Deno.test("loadConfig does not echo a value that mentions a secret key (line missing its colon)", () => {
  const lines = shown(`
http:
  auth_token s3cr3tv4lue
${PROV}`);
  assertHidden(lines, "s3cr3tv4lue");
  assert.deepEqual(lines, [
    "1:1 error http: must be a mapping, got a string (<redacted>: it mentions a secret key)",
  ]);
});

Deno.test("loadConfig scrubs a secret from a message written about another key", () => {
  // The URL check echoes the URL; its password must not come with it (the check hides it,
  // quoteUrl, and the last pass would scrub it as well).
  const lines = shown(`
telemetry:
  enabled: true
  influxdb:
    url: ftp://rig:pa55w0rd@db.local
    token: tok-abcdef
${PROV}`);
  assert.equal(lines.length, 1);
  assert.match(
    lines[0]!,
    /^4:5 error telemetry\.influxdb\.url: "ftp:\/\/rig:<redacted>@db\.local" is not an http\(s\) URL/,
  );
  assertHidden(lines, "pa55w0rd");
});

Deno.test("loadConfig scrubs a URL's whole password when it holds an '@' (the last '@' ends it)", () => {
  // `ftp://rig:pa55@w0rd@db.local`: the user information runs to the LAST '@' of the authority
  // (WHATWG URL: password "pa55%40w0rd"), so the password is `pa55@w0rd`, not `pa55`.
  const lines = shown(`
telemetry:
  enabled: true
  influxdb:
    url: ftp://rig:pa55@w0rd@db.local
    token: tok-abcdef
sparkplug:
  enabled: true
  broker_url: tcp://edge:p@ssw0rdX@broker.local:1883
${PROV}`);
  assert.ok(lines.some((l) => l.includes("telemetry.influxdb.url")), lines.join("\n"));
  assert.ok(lines.some((l) => l.includes("sparkplug.broker_url")), lines.join("\n"));
  assertHidden(lines, "w0rd", "ssw0rdX");
});

Deno.test("loadConfig does not echo a secret written unquoted after '*' (read as an alias)", () => {
  // A generated token may begin with '*': unquoted, YAML reads it as an alias, and the alias
  // check named it -- the token itself -- in its error.
  for (
    const at of [
      "http:\n  auth_enabled: true\n  auth_token: *Zq9-hunter2-tok",
      "http:\n  tokens:\n    - {name: ops, role: operator, token: *Zq9-hunter2-tok}",
      "telemetry:\n  enabled: true\n  influxdb: {url: 'http://db:8086', token: *Zq9-hunter2-tok}",
    ]
  ) {
    const lines = shown(`\n${at}\n${PROV}`);
    assert.ok(lines.some((l) => l.includes("names no anchor")), lines.join("\n"));
    assertHidden(lines, "Zq9-hunter2-tok");
  }
  // Elsewhere the alias is named, as before.
  const plain = shown(`
polling:
  interval_ms: *slow
${PROV}`);
  assert.deepEqual(plain, [
    "2:16 error polling.interval_ms: alias *slow names no anchor defined before it (&slow)",
  ]);
});

Deno.test("loadConfig keeps ordinary values visible (redaction is not blanket)", () => {
  const lines = shown(`
http:
  port: "eighty"
  auth_token: abcd1234
${PROV}`);
  assert.deepEqual(lines, ['2:3 error http.port: must be an integer, got "eighty"']);
});
