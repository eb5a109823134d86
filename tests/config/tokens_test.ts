/**
 * `http.tokens` (named tokens with roles): what --check-config and start-up say, with line and
 * column, and that no diagnostic ever holds a token value.
 */
import assert from "node:assert/strict";
import { type Diagnostic, MAX_TOKEN_CHARS } from "../../src/config/mod.ts";
import { load, PROV } from "./_helpers.ts";

const VIEWER = "viewer-token-3f9a1c7e55d2";
const OPERATOR = "operator-token-8b21e0d4a9c6";

/** `severity path @line:column message` of every diagnostic, in file order. */
function lines(diagnostics: readonly Diagnostic[]): string[] {
  return diagnostics.map((d) => `${d.severity} ${d.path} @${d.line}:${d.column} ${d.message}`);
}

Deno.test("loadConfig reads http.tokens into name, role, token and token_env", () => {
  const r = load(
    `
http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token_env: RUNTIME_TOKEN_DASH}
    - {name: shift-1, role: operator, token: ${OPERATOR}}
    - {name: boss, role: admin, token: admin-token-5c4e2f1a9b77}
${PROV}
`,
    { mode: "start", secretEnv: { RUNTIME_TOKEN_DASH: VIEWER } },
  );
  assert.deepEqual(lines(r.diagnostics), []);
  assert.deepEqual(r.config?.http.tokens, [
    { name: "dash", role: "viewer", token: "", tokenEnv: "RUNTIME_TOKEN_DASH" },
    { name: "shift-1", role: "operator", token: OPERATOR, tokenEnv: "" },
    { name: "boss", role: "admin", token: "admin-token-5c4e2f1a9b77", tokenEnv: "" },
  ]);
});

Deno.test("loadConfig refuses duplicate token names, unknown roles and reserved names with line:column", () => {
  const r = load(`
http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token: ${VIEWER}}
    - {name: dash, role: operator, token: ${OPERATOR}}
    - {name: ops, role: superuser, token: a-third-token-0d8e7c6b5a}
    - {name: local, role: admin, token: a-fourth-token-9a8b7c6d5e}
    - {name: .hidden, role: admin, token: a-fifth-token-1b2c3d4e5f6}
${PROV}
`);
  assert.deepEqual(lines(r.diagnostics), [
    "error http.tokens[1].name @5:8 duplicate token name 'dash' (first at http.tokens[0])",
    "error http.tokens[2].role @6:19 must be one of viewer, operator, admin, got 'superuser'",
    "error http.tokens[3].name @7:8 'local' is reserved (default, local, anonymous already " +
    "name who a request acts as); choose another name",
    "error http.tokens[4].name @8:8 must be 1 to 64 letters, digits, `_`, `.` or `-`, not " +
    "starting with `.`",
  ]);
  assert.equal(r.config, null);
});

Deno.test("loadConfig needs exactly one of token and token_env in each http.tokens entry, and a role", () => {
  const r = load(`
http:
  auth_enabled: true
  tokens:
    - name: none
      role: viewer
    - name: both
      role: viewer
      token: ${VIEWER}
      token_env: RUNTIME_TOKEN_DASH
    - name: norole
      token: ${OPERATOR}
    - {name: badenv, role: viewer, token_env: DASH_TOKEN}
    - {name: empty, role: viewer, token: ""}
${PROV}
`);
  assert.deepEqual(lines(r.diagnostics), [
    "error http.tokens[0] @4:7 needs token or token_env (exactly one): a named token without a " +
    "value admits nobody",
    "error http.tokens[1] @6:7 has both token and token_env: set exactly one",
    "error http.tokens[2].role @10:7 is required (one of viewer, operator, admin)",
    "error http.tokens[3].token_env @12:36 must be an environment variable name starting with " +
    "RUNTIME_TOKEN_ (then 1 to 64 letters, digits or `_`): the runtime may read only those",
    "error http.tokens[4].token @13:35 must not be empty",
  ]);
});

Deno.test("loadConfig refuses two http.tokens entries with the same token, and one equal to the default token", () => {
  const r = load(
    `
http:
  auth_enabled: true
  auth_token: ${OPERATOR}
  tokens:
    - {name: dash, role: viewer, token: ${VIEWER}}
    - {name: wall, role: viewer, token_env: RUNTIME_TOKEN_WALL}
    - {name: ops, role: operator, token: ${OPERATOR}}
${PROV}
`,
    { secretEnv: { RUNTIME_TOKEN_WALL: VIEWER } },
  );
  assert.deepEqual(lines(r.diagnostics), [
    "error http.tokens[1].token_env @6:34 token 'wall' has the same value as http.tokens[0] " +
    "(the token 'dash'): each token must identify one name",
    "error http.tokens[2].token @7:35 token 'ops' has the same value as http.auth_token / " +
    "RUNTIME_API_TOKEN (the token 'default'): each token must identify one name",
  ]);
  for (const d of r.diagnostics) {
    assert.ok(!d.message.includes(VIEWER) && !d.message.includes(OPERATOR), d.message);
  }
  // RUNTIME_API_TOKEN is the default token when set: the same value in an entry is refused too.
  const env = load(
    `
http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token: ${VIEWER}}
${PROV}
`,
    { env: { RUNTIME_API_TOKEN: VIEWER } },
  );
  assert.deepEqual(lines(env.diagnostics), [
    "error http.tokens[0].token @4:34 token 'dash' has the same value as http.auth_token / " +
    "RUNTIME_API_TOKEN (the token 'default'): each token must identify one name",
  ]);
});

Deno.test("loadConfig warns about a token shorter than 16 characters, not about one of 16", () => {
  const r = load(`
http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token: "123456789012345"}
    - {name: wall, role: viewer, token: "1234567890123456"}
${PROV}
`);
  assert.deepEqual(lines(r.diagnostics), [
    "warning http.tokens[0].token @4:34 token 'dash' is shorter than 16 characters and can be " +
    "guessed (use 32 or more random characters)",
  ]);
  assert.notEqual(r.config, null, "a warning only");
});

Deno.test("loadConfig treats an unset token_env like a missing RUNTIME_API_TOKEN: warning when checking, error at start", () => {
  const yaml = `
http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token_env: RUNTIME_TOKEN_DASH}
${PROV}
`;
  const message =
    "environment variable RUNTIME_TOKEN_DASH is not set or empty: token 'dash' has no value";
  assert.deepEqual(lines(load(yaml).diagnostics), [
    `warning http.tokens[0].token_env @4:34 ${message}`,
  ]);
  assert.deepEqual(lines(load(yaml, { strict: true }).diagnostics), [
    `error http.tokens[0].token_env @4:34 ${message}`,
  ]);
  assert.deepEqual(
    lines(load(yaml, { mode: "start", secretEnv: { RUNTIME_TOKEN_DASH: "" } }).diagnostics),
    [
      `error http.tokens[0].token_env @4:34 ${message}`,
    ],
  );
  // Named tokens alone satisfy auth_enabled: no "no token is set" about auth_enabled.
  assert.deepEqual(
    lines(load(yaml, { mode: "start", secretEnv: { RUNTIME_TOKEN_DASH: VIEWER } }).diagnostics),
    [],
  );
});

Deno.test("loadConfig warns that http.tokens are ignored while auth is off", () => {
  const r = load(`
http:
  tokens:
    - {name: dash, role: viewer, token: ${VIEWER}}
${PROV}
`);
  assert.deepEqual(lines(r.diagnostics), [
    "warning http.tokens @2:3 are ignored while auth_enabled is false: every request acts as " +
    "'anonymous' with role admin",
  ]);
});

Deno.test("loadConfig bounds http.tokens at 64 entries", () => {
  const entries = (n: number) =>
    Array.from(
      { length: n },
      (_, i) =>
        `    - {name: t${i}, role: viewer, token: token-number-${String(i).padStart(6, "0")}}`,
    )
      .join("\n");
  const ok = load(`http:\n  auth_enabled: true\n  tokens:\n${entries(64)}\n${PROV}\n`);
  assert.deepEqual(lines(ok.diagnostics), []);
  const over = load(`http:\n  auth_enabled: true\n  tokens:\n${entries(65)}\n${PROV}\n`);
  assert.deepEqual(over.diagnostics.map((d) => `${d.path} ${d.message}`), [
    "http.tokens has 65 entries, at most 64 are allowed",
  ]);
});

Deno.test("loadConfig never echoes a token of http.tokens, nor one pasted in place of the list, but names the entry", () => {
  const r = load(`
http:
  auth_enabled: true
  tokens:
    - {name: dash, role: viewer, token: 31415926535897}
    - {name: wall, role: 27182818284590, token: ${VIEWER}}
    - {name: swapped, role: ${OPERATOR}, token: swapped-by-mistake-0001}
${PROV}
`);
  const shown = lines(r.diagnostics);
  assert.deepEqual(shown, [
    "error http.tokens[0].token @4:34 must be a string, got a number (<redacted>)",
    "error http.tokens[1].role @5:20 must be one of viewer, operator, admin, got a number",
    "error http.tokens[2].role @6:23 must be one of viewer, operator, admin, got a string that " +
    "is not a role (not shown: it may be a token)",
  ]);
  for (const l of shown) assert.ok(!l.includes(OPERATOR), l);
  const pasted = lines(
    load(`
http:
  auth_enabled: true
  tokens: pasted-secret-0123456789
${PROV}
`).diagnostics,
  );
  const atTokens = pasted.filter((l) => l.includes(" http.tokens "));
  assert.equal(atTokens.length, 1, pasted.join("\n"));
  assert.ok(atTokens[0]!.startsWith("error http.tokens @3:3 must be a sequence"), atTokens[0]);
  for (const l of pasted) assert.ok(!l.includes("pasted-secret-0123456789"), l);
});

/** The tail of every refusal of a token no client can send (unsendableToken). */
const unsendable = "a client cannot send that in an Authorization header, so it would admit nobody";

Deno.test("loadConfig refuses a token no client can present: whitespace at either end, a control or non-ASCII character", () => {
  // A client's Authorization header arrives with the whitespace at its ends removed (Fetch
  // normalizes header values), and non-ASCII as the raw bytes: such a token admits nobody. A
  // tab or a space inside a token is sent as it is.
  const r = load(
    `
http:
  auth_enabled: true
  auth_token: "operator-token-8b21e0d4a9c6 "
  tokens:
    - {name: dash, role: viewer, token: " viewer-token-3f9a1c7e55d2"}
    - {name: wall, role: viewer, token_env: RUNTIME_TOKEN_WALL}
    - {name: cafe, role: viewer, token: "caf\u00e9-token-0123456789"}
    - {name: ctl, role: viewer, token: "ctl\\x01here-token-0123456789"}
    - {name: tab, role: viewer, token: "tab\\there-token-0123456789"}
    - {name: two, role: viewer, token: "two words token 0123456789"}
${PROV}
`,
    { secretEnv: { RUNTIME_TOKEN_WALL: "wall-token-0123456789abc\n" } },
  );
  assert.deepEqual(lines(r.diagnostics), [
    `error http.auth_token @3:3 token 'default' ends with whitespace: ${unsendable}`,
    `error http.tokens[0].token @5:34 token 'dash' starts with whitespace: ${unsendable}`,
    `error http.tokens[1].token_env @6:34 token 'wall' ends with whitespace (a newline left by ` +
    `the file it was read from?): ${unsendable}`,
    `error http.tokens[2].token @7:34 token 'cafe' has a non-ASCII character: ${unsendable}`,
    `error http.tokens[3].token @8:33 token 'ctl' has a control character: ${unsendable}`,
  ]);
  assert.equal(r.config, null);
  const env = load(
    `
http:
  auth_enabled: true
${PROV}
`,
    { mode: "start", env: { RUNTIME_API_TOKEN: "env-token-0123456789abcdef\r\n" } },
  );
  assert.deepEqual(lines(env.diagnostics).map((l) => l.replace(/ @\d+:\d+/, "")), [
    "error http.auth_token RUNTIME_API_TOKEN (the token 'default') ends with whitespace " +
    `(a newline left by the file it was read from?): ${unsendable}`,
  ]);
  for (const d of [...r.diagnostics, ...env.diagnostics]) {
    assert.ok(!/token-[0-9a-f]{6}/.test(d.message), d.message);
  }
});

Deno.test("loadConfig refuses a token longer than MAX_TOKEN_CHARS (file or RUNTIME_API_TOKEN): no request can carry it, so it would admit nobody", () => {
  // The server reads at most 64 KiB of request headers: a longer Authorization header is a 400.
  const long = "L".repeat(70000);
  const atBound = "B".repeat(MAX_TOKEN_CHARS);
  const r = load(
    `
http:
  auth_enabled: true
  auth_token: "${atBound}"
  tokens:
    - {name: wall, role: viewer, token: "${long}"}
${PROV}
`,
  );
  assert.deepEqual(lines(r.diagnostics), [
    `error http.tokens[0].token @5:34 token 'wall' is longer than ${MAX_TOKEN_CHARS} characters: ` +
    unsendable,
  ]);
  const env = load(
    `
http:
  auth_enabled: true
${PROV}
`,
    { mode: "start", env: { RUNTIME_API_TOKEN: "E".repeat(MAX_TOKEN_CHARS + 1) } },
  );
  assert.deepEqual(lines(env.diagnostics).map((l) => l.replace(/ @\d+:\d+/, "")), [
    `error http.auth_token RUNTIME_API_TOKEN (the token 'default') is longer than ` +
    `${MAX_TOKEN_CHARS} characters: ${unsendable}`,
  ]);
  for (const d of [...r.diagnostics, ...env.diagnostics]) {
    assert.ok(!/LLLL|EEEE|BBBB/.test(d.message), d.message);
  }
});

Deno.test("loadConfig only warns about a token no client can present while auth_enabled is false: it is ignored then", () => {
  // A runtime without auth that inherits RUNTIME_API_TOKEN from a shared environment file (with
  // its final newline) must still start: no token is asked for, so none is unusable.
  const env = load(
    `
http:
  auth_enabled: false
${PROV}
`,
    { mode: "start", env: { RUNTIME_API_TOKEN: "env-token-0123456789abcdef\n" } },
  );
  assert.notEqual(env.config, null, lines(env.diagnostics).join("\n"));
  assert.deepEqual(
    lines(env.diagnostics).filter((l) => l.includes("admit nobody")).map((l) => l.slice(0, 25)),
    ["warning http.auth_token @"],
  );
  const listed = load(`
http:
  auth_enabled: false
  tokens:
    - {name: cafe, role: viewer, token: "caf\u00e9-token-0123456789"}
${PROV}
`);
  assert.notEqual(listed.config, null, lines(listed.diagnostics).join("\n"));
  assert.ok(
    lines(listed.diagnostics).some((l) =>
      l.startsWith("warning http.tokens[0].token") && l.includes("non-ASCII")
    ),
    lines(listed.diagnostics).join("\n"),
  );
});

Deno.test("--check-config with RUNTIME_API_TOKEN set still judges the file's own auth_token (unsendable, or a named token's value) as a start without that variable would; a start is unchanged", () => {
  const ENV = "env-token-0123456789abcdef";
  const spaced = load(
    `
http:
  auth_enabled: true
  auth_token: "file-token-0123456789abcdef "
${PROV}
`,
    { env: { RUNTIME_API_TOKEN: ENV } },
  );
  assert.deepEqual(lines(spaced.diagnostics), [
    `error http.auth_token @3:3 token 'default' ends with whitespace: ${unsendable} ` +
    "(RUNTIME_API_TOKEN overrides it here; a start without that variable uses it)",
  ]);
  const shared = `
http:
  auth_enabled: true
  auth_token: ${OPERATOR}
  tokens:
    - {name: ops, role: operator, token: ${OPERATOR}}
${PROV}
`;
  assert.deepEqual(lines(load(shared, { env: { RUNTIME_API_TOKEN: ENV } }).diagnostics), [
    "error http.tokens[0].token @5:35 token 'ops' has the same value as http.auth_token (the " +
    "token 'default' where RUNTIME_API_TOKEN is not set; it overrides http.auth_token here): " +
    "each token must identify one name",
  ]);
  // What a start on a target without the variable says of the same file.
  assert.equal(load(shared, { mode: "start" }).config, null);
  // A start with the variable set is unchanged: the file's token is not in effect there.
  for (
    const yaml of [shared, `\nhttp:\n  auth_enabled: true\n  auth_token: "x-token "\n${PROV}\n`]
  ) {
    const started = load(yaml, { mode: "start", env: { RUNTIME_API_TOKEN: ENV } });
    assert.notEqual(started.config, null, lines(started.diagnostics).join("\n"));
  }
  for (const d of spaced.diagnostics) assert.ok(!d.message.includes("file-token"), d.message);
});
