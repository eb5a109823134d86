/**
 * Named tokens with roles (docs/http-api.md, "Roles"): every route of the table for every role, the
 * e-stop for everyone, 403 naming the role, `default`/`local`/`anonymous` unchanged (admin), the
 * comparison over all entries, cross-origin requests with a named token, and tokens kept out of the
 * logs. Real runtime with the simulated provider; requests through the handler with injected client
 * addresses (a non-loopback one unless the test is about loopback).
 */
import assert from "node:assert/strict";
import { AUDIT_UNTRUSTED_PER_WINDOW } from "../../src/audit/mod.ts";
import { TOKEN_ROLES, type TokenRole } from "../../src/config/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  BearerAuth,
  HttpApi,
  type NamedToken,
  requiredRole,
  resolveNamedTokens,
  roleAllows,
  ROUTES,
  tokenChanges,
  tokenChangesText,
} from "../../src/http/mod.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";
import { pendingBody } from "../helpers/pending_body.ts";

const REMOTE = "192.0.2.40";
const DEFAULT_TOKEN = "default-token-6d1f0b9e3a27c4";
const NAMED: readonly NamedToken[] = [
  { name: "dash", role: "viewer", token: "viewer-token-3f9a1c7e55d2" },
  { name: "shift", role: "operator", token: "operator-token-8b21e0d4a9c6" },
  { name: "boss", role: "admin", token: "admin-token-5c4e2f1a9b77" },
];
const ALL_TOKENS = [DEFAULT_TOKEN, ...NAMED.map((t) => t.token)];
const tokenOf = (name: string) => NAMED.find((t) => t.name === name)!.token;

interface Answer {
  status: number;
  // deno-lint-ignore no-explicit-any
  json: any;
  text: string;
}

/** A request through the handler; an event stream is cancelled, not read. */
async function send(
  api: HttpApi,
  method: string,
  path: string,
  o: { token?: string; remoteAddr?: string; body?: unknown; headers?: Record<string, string> } = {},
): Promise<Answer> {
  const headers: Record<string, string> = { ...o.headers };
  if (o.token !== undefined) headers.authorization = `Bearer ${o.token}`;
  let body: string | undefined;
  if (o.body !== undefined) {
    body = JSON.stringify(o.body);
    headers["content-type"] = "application/json";
  }
  const res = await api.handle(
    new Request(`http://localhost${path}`, { method, headers, body: body ?? null }),
    {
      remoteAddr: o.remoteAddr ?? REMOTE,
    },
  );
  if ((res.headers.get("content-type") ?? "").startsWith("text/event-stream")) {
    await res.body?.cancel();
    return { status: res.status, json: undefined, text: "" };
  }
  const text = await res.text();
  const json = (res.headers.get("content-type") ?? "").startsWith("application/json")
    ? JSON.parse(text)
    : undefined;
  return { status: res.status, json, text };
}

/** Every route of the table as a concrete request: parameters filled in, POSTs with `{}`. */
function everyRoute(): { method: string; path: string; need: TokenRole }[] {
  return ROUTES.map((r) => ({
    method: r.method,
    path: "/" + r.segments.map((s) => s.startsWith(":") ? "x" : s).join("/"),
    need: requiredRole(r),
  }));
}

async function fixture(): Promise<HttpFixture> {
  return await startHttpFixture({
    config: { http: { authEnabled: true, authToken: DEFAULT_TOKEN } },
    api: { apiToken: DEFAULT_TOKEN, tokens: NAMED },
  });
}

Deno.test("ROUTES declares a role on every POST, the e-stop's is viewer, and an undeclared POST would need admin", () => {
  const posts = ROUTES.filter((r) => r.method !== "GET");
  assert.ok(posts.length >= 11, "the table has its POST routes");
  for (const r of posts) {
    const path = `/${r.segments.join("/")}`;
    assert.ok(r.role !== undefined, `${r.method} ${path} declares its role`);
    assert.ok(TOKEN_ROLES.includes(r.role!), `${path}: ${r.role} is a role`);
  }
  const estop = ROUTES.find((r) => r.method === "POST" && r.segments.join("/") === "v0/estop");
  assert.equal(estop?.role, "viewer", "anyone who may read may stop the machine");
  for (const r of ROUTES.filter((r) => r.method === "GET")) {
    assert.equal(requiredRole(r), "viewer", `GET /${r.segments.join("/")}`);
  }
  assert.equal(requiredRole({ method: "POST" }), "admin", "fail closed");
  assert.equal(requiredRole({ method: "GET" }), "viewer");
});

Deno.test("roleAllows orders viewer < operator < admin", () => {
  const table: [TokenRole, TokenRole, boolean][] = [
    ["viewer", "viewer", true],
    ["viewer", "operator", false],
    ["viewer", "admin", false],
    ["operator", "viewer", true],
    ["operator", "operator", true],
    ["operator", "admin", false],
    ["admin", "viewer", true],
    ["admin", "operator", true],
    ["admin", "admin", true],
  ];
  for (const [have, need, allowed] of table) {
    assert.equal(roleAllows(have, need), allowed, `${have} for ${need}`);
  }
});

Deno.test("tokenChanges names who gained or lost access by name and role, never a token; a token that admits nobody counts as absent", () => {
  const before: NamedToken[] = [
    { name: "default", role: "admin", token: "d-1" },
    { name: "dash", role: "viewer", token: "v-1" },
    { name: "shift", role: "operator", token: "o-1" },
    { name: "night", role: "viewer", token: "" }, // its variable unset: admits nobody
    { name: "gone", role: "admin", token: "a-1" },
  ];
  assert.equal(tokenChanges(before, before), null, "nothing changed");
  assert.equal(tokenChanges(before, [...before].reverse()), null, "the order is no change");
  const after: NamedToken[] = [
    { name: "default", role: "admin", token: "d-2" }, // rotated
    { name: "dash", role: "operator", token: "v-1" }, // promoted
    { name: "shift", role: "operator", token: "o-1" },
    { name: "night", role: "viewer", token: "n-1" }, // its variable now set
    { name: "new", role: "viewer", token: "x-1" },
  ];
  const c = tokenChanges(before, after);
  assert.deepEqual(c, {
    added: [{ name: "night", role: "viewer" }, { name: "new", role: "viewer" }],
    removed: [{ name: "gone", role: "admin" }],
    roles: [{ name: "dash", from: "viewer", to: "operator" }],
    replaced: ["default"],
  });
  assert.equal(
    tokenChangesText(c!),
    "added viewer 'night', added viewer 'new', removed admin 'gone', 'dash' viewer->operator, " +
      "'default' replaced",
  );
  assert.ok(!/[dvoanx]-\d/.test(JSON.stringify(c)), "no token in the changes");
  assert.deepEqual(tokenChanges(after, before.slice(0, 1)), {
    added: [],
    removed: [
      { name: "dash", role: "operator" },
      { name: "shift", role: "operator" },
      { name: "night", role: "viewer" },
      { name: "new", role: "viewer" },
    ],
    roles: [],
    replaced: ["default"],
  });
});

Deno.test("HttpApi gives each role exactly what the route table says, on every route, and 403 names the role needed", async () => {
  const fx = await fixture();
  try {
    const principals: { who: string; token: string; role: TokenRole }[] = [
      ...NAMED.map((t) => ({ who: t.name, token: t.token, role: t.role })),
      { who: "default", token: DEFAULT_TOKEN, role: "admin" },
    ];
    let refused = 0;
    for (const p of principals) {
      for (const r of everyRoute()) {
        const a = await send(fx.api, r.method, r.path, {
          token: p.token,
          ...(r.method === "POST" ? { body: {} } : {}),
        });
        const label = `${p.who} (${p.role}) ${r.method} ${r.path} -> ${a.status} ${a.text}`;
        assert.notEqual(a.status, 401, label);
        if (roleAllows(p.role, r.need)) {
          assert.notEqual(a.status, 403, label);
        } else {
          refused++;
          assert.equal(a.status, 403, label);
          assert.deepEqual(a.json, {
            status: {
              code: "PERMISSION_DENIED",
              message: `${r.method} ${r.path}: role ${r.need} required (token '${p.who}' has ` +
                `role ${p.role})`,
            },
          }, label);
          for (const t of ALL_TOKENS) assert.ok(!a.text.includes(t), "no token in the answer");
        }
        // Leave the latch open for the next request (the e-stop is in the walk).
        if (r.path === "/v0/estop") {
          assert.equal(a.status, 200, label);
          await send(fx.api, "POST", "/v0/estop/clear", { token: DEFAULT_TOKEN });
        }
      }
    }
    // The viewer is refused every POST but the e-stop; nobody else is refused anything today.
    const viewerRefusals = ROUTES.filter((r) => r.method === "POST").length - 1;
    assert.equal(refused, viewerRefusals);
    // GET /metrics is open to every role.
    for (const t of NAMED) {
      assert.equal((await send(fx.api, "GET", "/metrics", { token: t.token })).status, 200);
    }
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi refuses a viewer's actuating request before it runs: the mode stays IDLE", async () => {
  const fx = await fixture();
  try {
    const a = await send(fx.api, "POST", "/v0/mode", {
      token: tokenOf("dash"),
      body: { mode: "MANUAL" },
    });
    assert.equal(a.status, 403);
    assert.equal(
      a.json.status.message,
      "POST /v0/mode: role operator required (token 'dash' has role viewer)",
    );
    assert.equal(fx.services.modes.current(), "IDLE");
    const b = await send(fx.api, "POST", "/v0/mode", {
      token: tokenOf("shift"),
      body: { mode: "MANUAL" },
    });
    assert.equal(b.status, 200, b.text);
    assert.equal(fx.services.modes.current(), "MANUAL");
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi: a token lowered to viewer while its request's body arrives gets 403 naming its new role, recorded; the mode stays IDLE", async () => {
  const fx = await fixture();
  try {
    const pending = pendingBody();
    const answer = fx.api.handle(
      new Request("http://localhost/v0/mode", {
        method: "POST",
        headers: {
          authorization: `Bearer ${tokenOf("shift")}`,
          "content-type": "application/json",
        },
        body: pending.body,
      }),
      { remoteAddr: REMOTE },
    );
    // The request is admitted as operator 'shift'; a reload then makes 'shift' a viewer.
    // Admitted on its head: its body is being read.
    await waitFor("the POST reading its body", pending.reading);
    const lowered = NAMED.map((t) => t.name === "shift" ? { ...t, role: "viewer" as const } : t);
    await fx.api.setTokens(fx.services.config.http, DEFAULT_TOKEN, lowered);
    pending.send(JSON.stringify({ mode: "MANUAL" }));
    const res = await answer;
    const text = await res.text();
    assert.equal(res.status, 403, text);
    assert.equal(
      JSON.parse(text).status.message,
      "POST /v0/mode: role operator required (token 'shift' has role viewer)",
    );
    assert.equal(fx.services.modes.current(), "IDLE");
    const page = await send(fx.api, "GET", "/v0/audit", { token: tokenOf("boss") });
    const refused = page.json.entries.filter((e: { refused_by: string }) =>
      e.refused_by === "role"
    );
    assert.deepStrictEqual(
      refused.map((e: { action: string; reason: string }) => [e.action, e.reason]),
      [[
        "mode",
        "PERMISSION_DENIED: role operator required (shift has role viewer): the API tokens were " +
        "replaced (configuration reload) while its body arrived",
      ]],
    );
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi lets every role trigger the e-stop, and only operator and admin clear it", async () => {
  const fx = await fixture();
  try {
    const everyone = [...NAMED.map((t) => t.token), DEFAULT_TOKEN];
    for (const token of everyone) {
      const stop = await send(fx.api, "POST", "/v0/estop", { token, body: { reason: "test" } });
      assert.equal(stop.status, 200, stop.text);
      assert.equal(fx.services.estop.status().latched, true);
      const viewerClear = await send(fx.api, "POST", "/v0/estop/clear", {
        token: tokenOf("dash"),
      });
      assert.equal(viewerClear.status, 403);
      assert.equal(
        viewerClear.json.status.message,
        "POST /v0/estop/clear: role operator required (token 'dash' has role viewer)",
      );
      assert.equal(fx.services.estop.status().latched, true, "still latched");
      const clear = await send(fx.api, "POST", "/v0/estop/clear", { token: tokenOf("shift") });
      assert.equal(clear.status, 200, clear.text);
      assert.equal(fx.services.estop.status().latched, false);
    }
    // An e-stop with no body, from the viewer, too.
    assert.equal(
      (await send(fx.api, "POST", "/v0/estop", { token: tokenOf("dash") })).status,
      200,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi keeps loopback-exempt (local) and auth-off (anonymous) requests as admin", async () => {
  const fx = await fixture();
  try {
    // Loopback without a token, and loopback with a wrong one: local, may do anything.
    const tokenless: Record<string, string>[] = [
      {},
      { authorization: "Bearer wrong-token-0000000000" },
    ];
    for (const headers of tokenless) {
      const a = await send(fx.api, "POST", "/v0/mode", {
        remoteAddr: "127.0.0.1",
        headers,
        body: { mode: "MANUAL" },
      });
      assert.equal(a.status, 200, a.text);
      await send(fx.api, "POST", "/v0/mode", { remoteAddr: "::1", body: { mode: "IDLE" } });
    }
    // A viewer token from loopback acts as the viewer, not as local.
    const v = await send(fx.api, "POST", "/v0/mode", {
      remoteAddr: "127.0.0.1",
      token: tokenOf("dash"),
      body: { mode: "MANUAL" },
    });
    assert.equal(v.status, 403);
    // No token from elsewhere: 401 before routing, for known and unknown routes alike.
    for (const path of ["/v0/mode", "/v0/no/such/route"]) {
      const a = await send(fx.api, "POST", path, { body: { mode: "MANUAL" } });
      assert.equal(a.status, 401, path);
    }
  } finally {
    await fx.close();
  }
  const off = await startHttpFixture({
    config: { http: { authEnabled: false } },
    api: { apiToken: DEFAULT_TOKEN, tokens: NAMED },
  });
  try {
    // Auth off: every request is anonymous admin, a viewer token changes nothing.
    const a = await send(off.api, "POST", "/v0/mode", {
      token: tokenOf("dash"),
      body: { mode: "MANUAL" },
    });
    assert.equal(a.status, 200, a.text);
  } finally {
    await off.close();
  }
});

Deno.test("BearerAuth matches every entry by its own token, and refuses wrong, prefix, extended and empty tokens", async () => {
  const base = testConfig({}).http;
  const http = { ...base, authEnabled: true, authExemptLoopback: false };
  const withEmpty = [...NAMED, { name: "blank", role: "admin" as const, token: "" }];
  const auth = new BearerAuth(http, DEFAULT_TOKEN, withEmpty);
  const req = (authorization?: string) =>
    new Request("http://x/v0/devices", {
      headers: authorization === undefined ? {} : { authorization },
    });
  for (const t of NAMED) {
    assert.deepEqual(await auth.identify(req(`Bearer ${t.token}`), REMOTE), {
      name: t.name,
      address: REMOTE,
      role: t.role,
    });
    assert.equal(await auth.presentsToken(req(`Bearer ${t.token}`)), true);
    for (const wrong of [t.token.slice(0, -1), `${t.token}x`, t.token.toUpperCase(), " "]) {
      assert.equal(await auth.identify(req(`Bearer ${wrong}`), REMOTE), null, wrong);
      assert.equal(await auth.presentsToken(req(`Bearer ${wrong}`)), false, wrong);
    }
  }
  assert.deepEqual(await auth.identify(req(`Bearer ${DEFAULT_TOKEN}`), REMOTE), {
    name: "default",
    address: REMOTE,
    role: "admin",
  });
  // The empty entry admits nobody, not even with an empty token.
  assert.equal(await auth.identify(req("Bearer "), REMOTE), null);
  assert.equal(await auth.identify(req(), REMOTE), null);
  // Only named tokens, no default token: they still work.
  const named = new BearerAuth(http, "", NAMED);
  assert.equal((await named.identify(req(`Bearer ${tokenOf("shift")}`), REMOTE))?.name, "shift");
  assert.equal(await named.identify(req("Bearer "), REMOTE), null);
});

Deno.test("HttpApi lets a cross-origin request with a named token past the origin check, then applies its role", async () => {
  const fx = await startHttpFixture({
    config: { http: { authEnabled: true, corsAllowedOrigins: ["*"] } },
    api: { apiToken: DEFAULT_TOKEN, tokens: NAMED },
  });
  try {
    const origin = { origin: "http://dashboard.example" };
    const viewer = await send(fx.api, "POST", "/v0/mode", {
      token: tokenOf("dash"),
      headers: origin,
      body: { mode: "MANUAL" },
    });
    assert.equal(viewer.status, 403);
    assert.match(viewer.json.status.message, /role operator required/, "the role, not the origin");
    const operator = await send(fx.api, "POST", "/v0/mode", {
      token: tokenOf("shift"),
      headers: origin,
      body: { mode: "MANUAL" },
    });
    assert.equal(operator.status, 200, operator.text);
    const none = await send(fx.api, "POST", "/v0/mode", {
      remoteAddr: "127.0.0.1",
      headers: origin,
      body: { mode: "IDLE" },
    });
    assert.equal(none.status, 403);
    assert.match(none.json.status.message, /^Origin not allowed/);
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi never logs a token, allowed or refused, at debug level", async () => {
  const fx = await fixture();
  const logged: string[] = [];
  const log = capturingLogger({ now: () => 0, lines: logged }).log;
  const api = new HttpApi(
    { ...fx.services, host: { ...fx.services.host, log } },
    { apiToken: DEFAULT_TOKEN, tokens: NAMED },
  );
  try {
    for (const token of [...ALL_TOKENS, "wrong-token-1111111111"]) {
      await send(api, "GET", "/v0/devices", { token });
      await send(api, "POST", "/v0/call", { token, body: {} });
      await send(api, "POST", "/v0/parameters?token=" + token, { token, body: {} });
    }
    assert.ok(logged.length >= 12, `the requests were logged (${logged.length} lines)`);
    for (const line of logged) {
      for (const t of ALL_TOKENS) assert.ok(!line.includes(t), `token in the log: ${line}`);
    }
  } finally {
    api.close();
    await fx.close();
  }
});

Deno.test("HttpApi records a role refusal of an actuating route in the audit trail, with the token's name", async () => {
  const fx = await fixture();
  try {
    const refused = await send(fx.api, "POST", "/v0/call", {
      token: tokenOf("dash"),
      body: {
        provider_id: "sim0",
        device_id: "motorctl0",
        function_id: 10,
        args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
      },
    });
    assert.strictEqual(refused.status, 403);
    // A role refusal of a route that actuates nothing (a run marker) is not an audit decision.
    const marker = await send(fx.api, "POST", "/v0/runs", { token: tokenOf("dash"), body: {} });
    assert.strictEqual(marker.status, 403);
    const page = await send(fx.api, "GET", "/v0/audit", { token: tokenOf("boss") });
    assert.strictEqual(page.status, 200, page.text);
    const entries = page.json.entries.filter((e: { refused_by: string }) =>
      e.refused_by === "role"
    );
    assert.strictEqual(entries.length, 1, JSON.stringify(page.json.entries));
    const [e] = entries;
    assert.strictEqual(e.action, "call");
    assert.strictEqual(e.outcome, "refused");
    assert.deepStrictEqual(e.origin, { kind: "http", address: REMOTE, token_name: "dash" });
    assert.strictEqual(
      e.reason,
      "PERMISSION_DENIED: role operator required (dash has role viewer)",
    );
    assert.ok(!page.text.includes(tokenOf("dash")), "the token itself is never recorded");
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi bounds what a flood of refused actuating requests writes to the audit trail, and still records the operator", async () => {
  const fx = await fixture();
  try {
    // Varied (two addresses, three routes, no token / a viewer's token): nothing collapses.
    const n = 300;
    for (let i = 0; i < n; i++) {
      const path = ["/v0/estop/clear", "/v0/mode", "/v0/parameters"][i % 3];
      const r = await send(fx.api, "POST", path!, {
        remoteAddr: `192.0.2.${50 + (i % 2)}`,
        body: {},
        ...(i % 5 === 0 ? { token: tokenOf("dash") } : {}),
      });
      assert.ok(r.status === 401 || r.status === 403, `${r.status} ${r.text}`);
    }
    const mode = await send(fx.api, "POST", "/v0/mode", {
      token: tokenOf("shift"),
      body: { mode: "MANUAL" },
    });
    assert.strictEqual(mode.status, 200, mode.text);
    const page = await send(fx.api, "GET", "/v0/audit?limit=1000", { token: tokenOf("boss") });
    assert.strictEqual(page.status, 200, page.text);
    // deno-lint-ignore no-explicit-any
    const entries: any[] = page.json.entries;
    const refusals = entries.filter((e) => ["auth", "role"].includes(e.refused_by));
    assert.strictEqual(refusals.length, AUDIT_UNTRUSTED_PER_WINDOW + 1, JSON.stringify(refusals));
    assert.strictEqual(refusals.reduce((k, e) => k + e.count, 0), n, "every refusal is counted");
    const accepted = entries.filter((e) => e.action === "mode" && e.outcome === "accepted");
    assert.strictEqual(accepted.length, 1);
    assert.deepStrictEqual(accepted[0].origin, {
      kind: "http",
      address: REMOTE,
      token_name: "shift",
    });
  } finally {
    await fx.close();
  }
});

Deno.test("resolveNamedTokens takes each entry's token inline or from its token_env variable ('' when unset)", () => {
  const http = {
    ...testConfig({}).http,
    tokens: [
      { name: "inline", role: "viewer" as const, token: "inline-token-0123456789", tokenEnv: "" },
      { name: "fromenv", role: "operator" as const, token: "", tokenEnv: "RUNTIME_TOKEN_A" },
      { name: "unset", role: "admin" as const, token: "", tokenEnv: "RUNTIME_TOKEN_B" },
    ],
  };
  const env: Record<string, string> = { RUNTIME_TOKEN_A: "env-token-abcdefghijkl" };
  assert.deepStrictEqual(resolveNamedTokens(http, (n) => env[n]), [
    { name: "inline", role: "viewer", token: "inline-token-0123456789" },
    { name: "fromenv", role: "operator", token: "env-token-abcdefghijkl" },
    { name: "unset", role: "admin", token: "" },
  ]);
});
