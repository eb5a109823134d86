/**
 * No web page may arm, actuate or clear (docs/http-api.md, "Request policy"): Host, Origin and
 * Content-Type checks, over a real socket with the exact headers a browser (or a DNS-rebinding
 * page) sends.
 */
import assert from "node:assert/strict";
import { loadConfig } from "../../src/config/mod.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import type { TestConfigOptions } from "../helpers/sim_config.ts";
import { browserLike, rawRequest, type RawResponse } from "./raw_http.ts";
import { waitFor } from "../helpers/kernel.ts";
import { pendingBody } from "../helpers/pending_body.ts";

const MANUAL = '{"mode":"MANUAL"}';

async function served(
  config: TestConfigOptions["http"] = {},
  apiToken = "",
): Promise<{ fx: HttpFixture; port: number }> {
  const fx = await startHttpFixture({ start: false, config: { http: config }, api: { apiToken } });
  const server = await fx.serve();
  return { fx, port: server.port };
}

function assertRefused(r: RawResponse, status: number, code: string, mentions: string) {
  assert.equal(r.status, status, r.body);
  assert.deepEqual(Object.keys(r.json), ["status"]);
  assert.equal(r.json.status.code, code);
  assert.ok(r.json.status.message.includes(mentions), r.json.status.message);
}

Deno.test("A cross-origin POST cannot arm the machine, as a simple request or as JSON", async () => {
  const { fx, port } = await served();
  try {
    for (const contentType of ["text/plain;charset=UTF-8", "application/json"]) {
      const r = await rawRequest(
        port,
        browserLike(port, "POST", "/v0/mode", {
          origin: "http://evil.example",
          contentType,
          body: MANUAL,
        }),
      );
      assertRefused(r, 403, "PERMISSION_DENIED", "'http://evil.example'");
      assert.equal(fx.runtime.modes.current(), "IDLE", contentType);
    }
    // `*` (the default) still lets any page read.
    const read = await rawRequest(
      port,
      browserLike(port, "GET", "/v0/mode", { origin: "http://evil.example" }),
    );
    assert.equal(read.status, 200);
    assert.equal(read.headers.get("access-control-allow-origin"), "*");
  } finally {
    await fx.close();
  }
});

Deno.test("A cross-origin POST cannot clear (or latch) the e-stop", async () => {
  const { fx, port } = await served();
  try {
    await fx.runtime.estop.trigger("test");
    const clear = await rawRequest(
      port,
      browserLike(port, "POST", "/v0/estop/clear", { origin: "http://evil.example" }),
    );
    assertRefused(clear, 403, "PERMISSION_DENIED", "http://evil.example");
    assert.equal(fx.runtime.estop.status().latched, true);
    fx.runtime.estop.clear();
    const latch = await rawRequest(
      port,
      browserLike(port, "POST", "/v0/estop", { origin: "null" }),
    );
    assertRefused(latch, 403, "PERMISSION_DENIED", "'null'");
    assert.equal(fx.runtime.estop.status().latched, false);
  } finally {
    await fx.close();
  }
});

Deno.test("A POST with a body must be JSON (415, nothing run); bodiless POSTs work from curl", async () => {
  const { fx, port } = await served();
  try {
    const refused: Array<[string | undefined, string]> = [
      ["text/plain", "'text/plain'"],
      ["application/x-www-form-urlencoded", "'application/x-www-form-urlencoded'"],
      ["application/json; charset=iso-8859-1", "charset=iso-8859-1"],
      [undefined, "got none"],
    ];
    for (const [contentType, mentions] of refused) {
      const r = await rawRequest(
        port,
        browserLike(port, "POST", "/v0/mode", { contentType, body: MANUAL }),
      );
      assertRefused(r, 415, "INVALID_ARGUMENT", mentions);
      assert.equal(fx.runtime.modes.current(), "IDLE", String(contentType));
    }
    // A chunked body counts as a body.
    const chunked = await rawRequest(port, {
      method: "POST",
      target: "/v0/mode",
      headers: [["Host", `127.0.0.1:${port}`], ["Content-Type", "text/plain"], [
        "Transfer-Encoding",
        "chunked",
      ]],
      body: `${MANUAL.length.toString(16)}\r\n${MANUAL}\r\n0\r\n\r\n`,
    });
    assertRefused(chunked, 415, "INVALID_ARGUMENT", "text/plain");
    assert.equal(fx.runtime.modes.current(), "IDLE");

    for (const contentType of ["application/json; charset=utf-8", "Application/JSON"]) {
      const ok = await rawRequest(
        port,
        browserLike(port, "POST", "/v0/mode", { contentType, body: MANUAL }),
      );
      assert.equal(ok.status, 200, ok.body);
      assert.equal(fx.runtime.modes.current(), "MANUAL");
      await fx.runtime.modes.request("IDLE");
    }

    // curl -X POST (no body, no type) and curl -d '' (empty form body) need no JSON type.
    const estop = await rawRequest(port, browserLike(port, "POST", "/v0/estop"));
    assert.equal(estop.status, 200, estop.body);
    assert.equal(estop.json.latched, true);
    const clear = await rawRequest(port, {
      method: "POST",
      target: "/v0/estop/clear",
      headers: [
        ["Host", `127.0.0.1:${port}`],
        ["Content-Type", "application/x-www-form-urlencoded"],
        ["Content-Length", "0"],
      ],
    });
    assert.equal(clear.status, 200, clear.body);
    assert.equal(fx.runtime.estop.status().latched, false);
    // The e-stop is never refused for its body: a text body is ignored, the stop happens.
    const texted = await rawRequest(
      port,
      browserLike(port, "POST", "/v0/estop", { contentType: "text/plain", body: "stop!" }),
    );
    assert.equal(texted.status, 200, texted.body);
    assert.equal(fx.runtime.estop.status().latched, true);
  } finally {
    await fx.close();
  }
});

Deno.test("The API's own origin and explicitly listed origins may change state; `*` never does", async () => {
  const { fx, port } = await served({
    corsAllowedOrigins: ["*", "http://localhost:5173", "http://*.lab.local"],
  });
  try {
    const post = (origin: string, host = `127.0.0.1:${port}`) =>
      rawRequest(
        port,
        browserLike(port, "POST", "/v0/mode", {
          host,
          origin,
          contentType: "application/json",
          body: '{"mode":"IDLE"}',
        }),
      );
    const allowed: Array<[string, string?]> = [
      [`http://127.0.0.1:${port}`],
      [`http://localhost:${port}`, `localhost:${port}`],
      ["http://localhost:5173"],
      ["http://console.lab.local"],
    ];
    for (const [origin, host] of allowed) {
      const r = await post(origin, host);
      assert.equal(r.status, 200, `${origin}: ${r.body}`);
    }
    for (
      const origin of [
        "http://evil.example",
        `http://127.0.0.1:${port + 1}`,
        `https://127.0.0.1:${port}`,
        `http://localhost:${port}`, // not the Host this request was sent to
        "http://localhost:5173/path",
        "null",
      ]
    ) {
      assertRefused(await post(origin), 403, "PERMISSION_DENIED", origin);
    }
  } finally {
    await fx.close();
  }
});

Deno.test("A valid bearer token lets a cross-origin request change state", async () => {
  const TOKEN = "s3cret-token";
  const { fx, port } = await served({ authEnabled: true, authToken: TOKEN }, TOKEN);
  try {
    const post = (authorization?: string) => {
      const r = browserLike(port, "POST", "/v0/mode", {
        origin: "https://ops.example.com",
        contentType: "application/json",
        body: MANUAL,
      });
      const headers = [...r.headers!];
      if (authorization) headers.push(["Authorization", authorization]);
      return rawRequest(port, { ...r, headers });
    };
    // Loopback is exempt from auth, but the page still needs the token to change state.
    assertRefused(await post(), 403, "PERMISSION_DENIED", "https://ops.example.com");
    assertRefused(await post("Bearer wrong"), 403, "PERMISSION_DENIED", "ops.example.com");
    assert.equal(fx.runtime.modes.current(), "IDLE");
    const ok = await post(`Bearer ${TOKEN}`);
    assert.equal(ok.status, 200, ok.body);
    assert.equal(fx.runtime.modes.current(), "MANUAL");
  } finally {
    await fx.close();
  }
});

Deno.test("A loopback-bound API answers only for loopback hosts and http.allowed_hosts", async () => {
  const { fx, port } = await served({ allowedHosts: ["rig.local", "panel.local:9000"] });
  try {
    const get = (host: string) =>
      rawRequest(port, browserLike(port, "GET", "/v0/runtime/status", { host }));
    for (
      const host of [
        "localhost",
        `localhost:${port}`,
        `LOCALHOST:${port}`,
        `127.0.0.1:${port}`,
        `127.1.2.3:${port}`,
        `[::1]:${port}`,
        "rig.local",
        `rig.local:${port}`,
        "panel.local:9000",
      ]
    ) {
      assert.equal((await get(host)).status, 200, host);
    }
    for (
      const host of [
        `evil.example:${port}`,
        "127.0.0.1.evil.example",
        `localhost.evil.example:${port}`,
        `panel.local:${port}`,
        `[::2]:${port}`,
      ]
    ) {
      assertRefused(await get(host), 403, "PERMISSION_DENIED", `'${host}'`);
    }
    // The DNS-rebinding page: its own name, its own origin. Refused before anything runs.
    const rebound = await rawRequest(
      port,
      browserLike(port, "POST", "/v0/mode", {
        host: `evil.example:${port}`,
        origin: `http://evil.example:${port}`,
        contentType: "application/json",
        body: MANUAL,
      }),
    );
    assertRefused(rebound, 403, "PERMISSION_DENIED", `evil.example:${port}`);
    assert.equal(fx.runtime.modes.current(), "IDLE");
    // An absolute-form target names the host too.
    const absolute = await rawRequest(port, {
      method: "GET",
      target: `http://evil.example:${port}/v0/runtime/status`,
      headers: [["Host", `localhost:${port}`]],
    });
    assertRefused(absolute, 403, "PERMISSION_DENIED", "evil.example");
    // An HTTP/1.0 client without Host is not a browser: served.
    const old = await rawRequest(port, {
      method: "GET",
      target: "/v0/runtime/status",
      version: "HTTP/1.0",
    });
    assert.equal(old.status, 200, old.body);
  } finally {
    await fx.close();
  }
});

Deno.test("A non-loopback bind trusts its own origin only on an IP literal or an allowed host", async () => {
  // The socket is on loopback (tests), the configuration says 0.0.0.0: no Host check applies.
  const { fx, port } = await served({ bind: "0.0.0.0", allowInsecureBind: true });
  try {
    const post = (host: string, origin: string) =>
      rawRequest(
        port,
        browserLike(port, "POST", "/v0/mode", {
          host,
          origin,
          contentType: "application/json",
          body: MANUAL,
        }),
      );
    assert.equal(
      (await rawRequest(port, browserLike(port, "GET", "/v0/mode", { host: "rig.example" })))
        .status,
      200,
    );
    // A rebinding page is "same-origin" with itself: that is not the API's own origin.
    assertRefused(
      await post(`evil.example:${port}`, `http://evil.example:${port}`),
      403,
      "PERMISSION_DENIED",
      "evil.example",
    );
    assert.equal(fx.runtime.modes.current(), "IDLE");
    const own = await post(`127.0.0.1:${port}`, `http://127.0.0.1:${port}`);
    assert.equal(own.status, 200, own.body);
  } finally {
    await fx.close();
  }
});

Deno.test("http.allowed_hosts is read lower-cased and refuses wildcards and URLs with a position", () => {
  const load = (hosts: string) =>
    loadConfig(
      `providers: [{id: p0, command: prov}]\nhttp:\n  allowed_hosts: ${hosts}\n`,
      {
        path: "/etc/rig/runtime.yaml",
        mode: "check",
        env: {},
        fileExists: () => true,
        commandExists: () => true,
        cwd: "/var/lib/rig",
      },
    );
  const ok = load('["Rig.Local", "panel.local:9000", "[fe80::1]:8080"]');
  assert.deepEqual(ok.diagnostics, []);
  assert.deepEqual(ok.config?.http.allowedHosts, [
    "rig.local",
    "panel.local:9000",
    "[fe80::1]:8080",
  ]);
  assert.deepEqual(load("[]").config?.http.allowedHosts, []);
  assert.deepEqual(load("Rig.Local:8080").config?.http.allowedHosts, ["rig.local:8080"]);
  assert.deepEqual(load('"*.lab"').diagnostics.map((d) => [d.path, d.line, d.column]), [
    ["http.allowed_hosts", 3, 3],
  ]);
  const bad = load('["*", "http://rig.local", 5]');
  assert.deepEqual(
    bad.diagnostics.map((d) => [d.path, d.line, d.column, d.severity]),
    [
      ["http.allowed_hosts[0]", 3, 19, "error"],
      ["http.allowed_hosts[1]", 3, 24, "error"],
      ["http.allowed_hosts[2]", 3, 44, "error"],
    ],
  );
  assert.match(bad.diagnostics[0]!.message, /not a host name/);
});

Deno.test("A page from a foreign origin gets no event stream without a CORS grant or the token", async () => {
  // It could not read the stream, and EventSource reconnecting would hold stream slots.
  const TOKEN = "s3cret-token";
  const open = async (corsAllowedOrigins: string[], headers: Record<string, string>) => {
    const fx = await startHttpFixture({
      start: false,
      config: { http: { corsAllowedOrigins, authToken: TOKEN } },
      api: { apiToken: TOKEN },
    });
    try {
      return await fx.request("GET", "/v0/events", { headers });
    } finally {
      await fx.close();
    }
  };
  const foreign = { origin: "http://evil.example" };
  const refused = await open([], foreign);
  assert.equal(refused.status, 403);
  assert.equal((refused.json as { status: { code: string } }).status.code, "PERMISSION_DENIED");
  assert.match(
    refused.text,
    /Origin not allowed to open the event stream: 'http:\/\/evil\.example'/,
  );
  // A grant (the lone `*` too: it lets pages read), the API's own origin, the token, or no Origin.
  const streams: Array<[string[], Record<string, string>]> = [
    [["*"], foreign],
    [["http://evil.example"], foreign],
    [[], { origin: "http://localhost" }],
    [[], { ...foreign, authorization: `Bearer ${TOKEN}` }],
    [[], {}],
  ];
  for (const [grants, headers] of streams) {
    const r = await open(grants, headers);
    assert.equal(r.status, 200, `${JSON.stringify([grants, headers])}: ${r.text}`);
    assert.equal(r.headers.get("content-type")?.startsWith("text/event-stream"), true);
  }
});

Deno.test("A foreign page's event stream admitted by its token ends when a reload removes the token, as a new one would be refused (loopback-exempt)", async () => {
  const DEFAULT = "default-token-0a1b2c3d4e5f";
  const SHIFT = "shift-token-6a7b8c9d0e1f";
  const fx = await startHttpFixture({
    start: false,
    config: {
      http: {
        authEnabled: true,
        authExemptLoopback: true,
        authToken: DEFAULT,
        corsAllowedOrigins: [],
      },
    },
    api: { apiToken: DEFAULT, tokens: [{ name: "shift", role: "operator", token: SHIFT }] },
  });
  try {
    const headers = { origin: "http://dash.example", authorization: `Bearer ${SHIFT}` };
    const open = () =>
      fx.api.handle(new Request("http://127.0.0.1/v0/events", { headers }), {
        remoteAddr: "127.0.0.1",
      });
    const res = await open();
    assert.equal(res.status, 200);
    const reader = res.body!.getReader();
    let ended = false;
    const done = (async () => {
      while (!(await reader.read()).done) { /* keep-alives */ }
      ended = true;
    })();
    // The reload removes 'shift'.
    await fx.api.setTokens(fx.services.config.http, DEFAULT, []);
    const again = await open();
    await again.body?.cancel();
    assert.equal(again.status, 403, "the same page opening again is refused: no token, no grant");
    let timer: ReturnType<typeof setTimeout> | undefined;
    await Promise.race([done, new Promise((r) => timer = setTimeout(r, 2000))]);
    clearTimeout(timer);
    const endedByReload = ended;
    if (!endedByReload) await reader.cancel();
    assert.equal(endedByReload, true, "the stream its removed token admitted kept delivering");
  } finally {
    await fx.close();
  }
});

Deno.test("A foreign page's POST admitted by its token, whose body arrives after a reload removed the token, does not act (loopback-exempt)", async () => {
  const DEFAULT = "default-token-0a1b2c3d4e5f";
  const SHIFT = "shift-token-6a7b8c9d0e1f";
  const fx = await startHttpFixture({
    config: {
      http: {
        authEnabled: true,
        authExemptLoopback: true,
        authToken: DEFAULT,
        corsAllowedOrigins: [],
      },
    },
    api: { apiToken: DEFAULT, tokens: [{ name: "shift", role: "operator", token: SHIFT }] },
  });
  try {
    const pending = pendingBody();
    const answer = fx.api.handle(
      new Request("http://127.0.0.1/v0/mode", {
        method: "POST",
        headers: {
          origin: "http://dash.example",
          authorization: `Bearer ${SHIFT}`,
          "content-type": "application/json",
        },
        body: pending.body,
      }),
      { remoteAddr: "127.0.0.1" },
    );
    // Admitted on its head: its body is being read.
    await waitFor("the POST reading its body", pending.reading);
    await fx.api.setTokens(fx.services.config.http, DEFAULT, []);
    pending.send(MANUAL);
    const res = await answer;
    const text = await res.text();
    assert.equal(res.status, 403, text);
    const policy = "Origin not allowed to change state: 'http://dash.example' (list it in " +
      "http.cors_allowed_origins, `*` does not count, or send the bearer token)";
    assert.equal(JSON.parse(text).status.message, policy);
    assert.equal(fx.services.modes.current(), "IDLE");
    // Recorded as the origin check refused it, the reason saying the tokens changed meanwhile.
    const audit = await fx.api.handle(
      new Request("http://127.0.0.1/v0/audit", { headers: { authorization: `Bearer ${DEFAULT}` } }),
      { remoteAddr: "127.0.0.1" },
    );
    const refused = (await audit.json()).entries
      .filter((e: { outcome: string }) => e.outcome === "refused")
      .map((e: { action: string; refused_by: string; reason: string }) => [
        e.action,
        e.refused_by,
        e.reason,
      ]);
    assert.deepEqual(refused, [[
      "mode",
      "origin",
      `PERMISSION_DENIED: ${policy}: the API tokens were replaced (configuration reload) while ` +
      "its body arrived",
    ]]);
  } finally {
    await fx.close();
  }
});
