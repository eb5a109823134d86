/**
 * The operator console's files as the HTTP layer serves them (docs/console.md): at `/` and its
 * asset paths outside /v0, without auth, with a strict CSP and the other security headers, gzip
 * when accepted, ETag revalidation, HEAD, 404 for unknown paths, 405 for other methods, nothing at
 * all with http.console_enabled false. The Host check still applies.
 */
import assert from "node:assert/strict";
import { gunzipSync } from "node:zlib";
import { acceptsGzip, CONSOLE_CSP, ConsoleSite, isConsolePath } from "../../src/http/mod.ts";
import { buildConsoleAssets } from "../../scripts/gen_console_assets.ts";
import { type HttpFixture, startHttpFixture } from "../helpers/runtime_fixture.ts";
import { REPO } from "../helpers/sim_config.ts";

const LAN = "192.0.2.7";

async function get(
  fx: HttpFixture,
  path: string,
  init: RequestInit = {},
  remoteAddr = "127.0.0.1",
): Promise<Response> {
  return await fx.api.handle(new Request(`http://localhost${path}`, init), { remoteAddr });
}

function assertSecurityHeaders(res: Response, what: string): void {
  assert.equal(res.headers.get("content-security-policy"), CONSOLE_CSP, what);
  assert.equal(res.headers.get("x-content-type-options"), "nosniff", what);
  assert.equal(res.headers.get("referrer-policy"), "no-referrer", what);
  assert.equal(res.headers.get("x-frame-options"), "DENY", what);
}

Deno.test("CONSOLE_CSP allows nothing inline, nothing foreign and no framing", () => {
  const directives = new Map(
    CONSOLE_CSP.split(";").map((d) => {
      const [name, ...values] = d.trim().split(/\s+/);
      return [name, values.join(" ")];
    }),
  );
  assert.equal(directives.get("default-src"), "'none'");
  assert.equal(directives.get("script-src"), "'self'");
  assert.equal(directives.get("style-src"), "'self'");
  assert.equal(directives.get("connect-src"), "'self'");
  assert.equal(directives.get("frame-ancestors"), "'none'");
  assert.ok(!CONSOLE_CSP.includes("unsafe"), CONSOLE_CSP);
});

Deno.test("isConsolePath: everything outside /v0 belongs to the console", () => {
  for (const p of ["/", "/app.js", "/v0x", "/v", "/favicon.ico", "/V0/devices"]) {
    assert.equal(isConsolePath(p), true, p);
  }
  for (const p of ["/v0", "/v0/", "/v0/devices", "/v0/nope"]) {
    assert.equal(isConsolePath(p), false, p);
  }
});

Deno.test("acceptsGzip follows Accept-Encoding, q=0 refusing", () => {
  const cases: Array<[string | null, boolean]> = [
    [null, false],
    ["", false],
    ["gzip", true],
    ["GZIP", true],
    ["br, gzip, deflate", true],
    ["gzip;q=0", false],
    ["gzip; q=0.0", false],
    ["gzip;q=0.001", true],
    ["br", false],
    ["*", true],
    ["*;q=0", false],
    ["*, gzip;q=0", false],
    ["identity", false],
    ["x-gzip", true],
  ];
  for (const [header, expected] of cases) assert.equal(acceptsGzip(header), expected, `${header}`);
});

Deno.test("HttpApi serves the console at / with its security headers, without auth", async () => {
  // Auth on and no loopback exemption: the files still load (they hold no data), the API not.
  const fx = await startHttpFixture({
    start: false,
    config: { http: { authEnabled: true, authExemptLoopback: false } },
    api: { apiToken: "s3cret" },
  });
  try {
    const res = await get(fx, "/", {}, LAN);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get("content-type"), "text/html; charset=utf-8");
    assert.equal(res.headers.get("cache-control"), "no-cache");
    assert.match(res.headers.get("etag") ?? "", /^"[0-9a-f]{32}"$/);
    assertSecurityHeaders(res, "/");
    assert.equal(await res.text(), await Deno.readTextFile(`${REPO}console/index.html`));
    const api = await get(fx, "/v0/devices", {}, LAN);
    assert.equal(api.status, 401);
    await api.body?.cancel();
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi serves every console file with its type, gzip only when accepted", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const built = await buildConsoleAssets();
    assert.deepEqual(await new ConsoleSite().paths(), built.map((a) => a.path));
    for (const a of built) {
      const plain = await get(fx, a.path);
      assert.equal(plain.status, 200, a.path);
      assert.equal(plain.headers.get("content-type"), a.contentType, a.path);
      assert.equal(plain.headers.get("content-encoding"), null, a.path);
      assert.equal(plain.headers.get("vary"), "Accept-Encoding", a.path);
      assertSecurityHeaders(plain, a.path);
      assert.equal(await plain.text(), a.text, a.path);

      const zipped = await get(fx, a.path, { headers: { "accept-encoding": "gzip, deflate, br" } });
      assert.equal(zipped.headers.get("content-encoding"), "gzip", a.path);
      assert.equal(zipped.headers.get("etag"), plain.headers.get("etag"), a.path);
      const bytes = new Uint8Array(await zipped.arrayBuffer());
      assert.equal(new TextDecoder().decode(gunzipSync(bytes)), a.text, a.path);

      const refused = await get(fx, a.path, { headers: { "accept-encoding": "gzip;q=0" } });
      assert.equal(refused.headers.get("content-encoding"), null, a.path);
      assert.equal(await refused.text(), a.text, a.path);
    }
    // Served twice from the same bytes: the second answer is whole too.
    const again = await get(fx, "/app.js", { headers: { "accept-encoding": "gzip" } });
    const app = built.find((a) => a.path === "/app.js");
    assert.equal(
      new TextDecoder().decode(gunzipSync(new Uint8Array(await again.arrayBuffer()))),
      app?.text,
    );
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi answers 304 to a console request whose ETag is current", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const first = await get(fx, "/style.css");
    const etag = first.headers.get("etag") ?? "";
    await first.body?.cancel();
    for (const tag of [etag, `W/${etag}`, `"other", ${etag}`, "*"]) {
      const res = await get(fx, "/style.css", { headers: { "if-none-match": tag } });
      assert.equal(res.status, 304, tag);
      assert.equal(res.body, null, tag);
      assert.equal(res.headers.get("etag"), etag, tag);
      assert.equal(res.headers.get("cache-control"), "no-cache", tag);
      assertSecurityHeaders(res, tag);
    }
    const stale = await get(fx, "/style.css", { headers: { "if-none-match": '"0123"' } });
    assert.equal(stale.status, 200);
    await stale.body?.cancel();
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi answers HEAD on a console file with GET's headers and no body", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const getRes = await get(fx, "/");
    const length = (await getRes.arrayBuffer()).byteLength;
    const head = await get(fx, "/", { method: "HEAD" });
    assert.equal(head.status, 200);
    assert.equal(head.body, null);
    assert.equal(head.headers.get("content-length"), String(length));
    assert.equal(head.headers.get("content-type"), "text/html; charset=utf-8");
    assertSecurityHeaders(head, "HEAD /");
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi answers 404 for an unknown console path and 405 for a method other than GET", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const missing = await get(fx, "/nope.js");
    assert.equal(missing.status, 404);
    assertSecurityHeaders(missing, "404");
    assert.deepEqual(await missing.json(), {
      status: { code: "NOT_FOUND", message: "Route not found: GET /nope.js" },
    });
    for (const [method, path] of [["POST", "/"], ["PUT", "/app.js"], ["DELETE", "/style.css"]]) {
      const res = await get(fx, path!, { method: method!, body: method === "DELETE" ? null : "x" });
      assert.equal(res.status, 405, `${method} ${path}`);
      assert.equal(res.headers.get("allow"), "GET, HEAD", `${method} ${path}`);
      assertSecurityHeaders(res, `${method} ${path}`);
      const body = await res.json();
      assert.equal(body.status.code, "INVALID_ARGUMENT");
      assert.equal(
        body.status.message,
        `Method not allowed: ${method} ${path} (the operator console answers GET and HEAD)`,
      );
    }
    const postMissing = await get(fx, "/nope", { method: "POST" });
    assert.equal(postMissing.status, 404);
    await postMissing.body?.cancel();
    // The API keeps its own answers.
    const api = await get(fx, "/v0/nope");
    assert.equal(api.status, 404);
    assert.equal(api.headers.get("content-security-policy"), null);
    await api.body?.cancel();
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi serves no console with http.console_enabled false", async () => {
  const fx = await startHttpFixture({ start: false, config: { http: { consoleEnabled: false } } });
  try {
    for (const path of ["/", "/app.js", "/style.css"]) {
      const res = await get(fx, path);
      assert.equal(res.status, 404, path);
      assert.equal(res.headers.get("content-security-policy"), null, path);
      assert.deepEqual(await res.json(), {
        status: { code: "NOT_FOUND", message: `Route not found: GET ${path}` },
      });
    }
  } finally {
    await fx.close();
  }
});

Deno.test("HttpApi applies the Host check to the console too", async () => {
  const fx = await startHttpFixture({ start: false });
  try {
    const res = await get(fx, "/", { headers: { host: "evil.example:8080" } });
    assert.equal(res.status, 403);
    assert.equal((await res.json()).status.code, "PERMISSION_DENIED");
  } finally {
    await fx.close();
  }
});

Deno.test("GET /v0/runtime/status names the runtime (runtime.name)", async () => {
  const fx = await startHttpFixture({ start: false, config: { runtime: { name: "line-3" } } });
  try {
    const r = await fx.request("GET", "/v0/runtime/status");
    assert.equal(r.status, 200);
    assert.equal(r.json.runtime_name, "line-3");
  } finally {
    await fx.close();
  }
});

Deno.test("GET capabilities lists a string argument's allowed_values, and only when declared", async () => {
  const fx = await startHttpFixture({
    config: {
      providers: [{
        id: "form0",
        command: Deno.execPath(),
        args: ["run", "--quiet", "--allow-env", `${REPO}tests/console/_form_provider.ts`],
        timeoutMs: 5000,
        helloTimeoutMs: 10000,
        readyTimeoutMs: 10000,
        restartPolicy: {
          enabled: false,
          maxAttempts: 1,
          backoffMs: [100],
          timeoutMs: 30000,
          successResetMs: 1000,
        },
      }],
    },
  });
  try {
    const r = await fx.request("GET", "/v0/devices/form0/panel0/capabilities");
    assert.equal(r.status, 200);
    const configure = r.json.capabilities.functions.find((f: { name: string }) =>
      f.name === "configure"
    );
    assert.deepEqual(configure.args.choice, {
      type: "string",
      required: true,
      allowed_values: ["low", "medium", "high"],
    });
    assert.deepEqual(configure.args.note, { type: "string", required: false });
    assert.deepEqual(configure.args.level, {
      type: "double",
      required: true,
      unit: "V",
      min: -10,
      max: 10,
    });
  } finally {
    await fx.close();
  }
});

Deno.test("ConsoleSite loads its files on the first request, once, however many requests wait for them", async () => {
  let loads = 0;
  let release!: () => void;
  const gate = new Promise<void>((resolve) => release = resolve);
  const site = new ConsoleSite(async () => {
    loads++;
    await gate;
    return [{
      path: "/",
      contentType: "text/html; charset=utf-8",
      etag: '"e1"',
      text: "<p>hi</p>",
      gzipBase64: "",
    }];
  });
  assert.equal(site.loaded, false);
  assert.equal(loads, 0, "nothing is loaded before a request");
  const url = new URL("http://127.0.0.1/");
  const answers = [site.serve(new Request(url), url), site.serve(new Request(url), url)];
  assert.equal(site.loaded, true);
  release();
  for (const res of await Promise.all(answers)) {
    assert.equal(res.status, 200);
    assert.equal(await res.text(), "<p>hi</p>");
  }
  const missing = new URL("http://127.0.0.1/nope.js");
  const res = await site.serve(new Request(missing), missing);
  assert.equal(res.status, 404);
  await res.body?.cancel();
  assert.equal(loads, 1);
});
