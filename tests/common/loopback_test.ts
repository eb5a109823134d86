import assert from "node:assert/strict";
import { isLoopbackHost } from "../../src/common/mod.ts";
import { loadConfig } from "../../src/config/mod.ts";
import { serveHttp } from "../../src/host/mod.ts";
import { isLoopbackAddress } from "../../src/http/mod.ts";
import { testLogger } from "../helpers/kernel.ts";

const LOOPBACK = [
  "127.0.0.1",
  "127.1.2.3",
  " 127.0.0.1 ",
  "::1",
  "[::1]",
  "0:0:0:0:0:0:0:1",
  "[0:0:0:0:0:0:0:1]",
  "::ffff:127.0.0.1",
  "0:0:0:0:0:ffff:127.0.0.1",
  "localhost",
  "LOCALHOST",
];
const NOT_LOOPBACK = [
  "0.0.0.0",
  "::",
  "192.168.0.2",
  "::ffff:192.168.0.2",
  "127.0.0.256",
  "128.0.0.1",
  "example.com",
  "localhost.example.com",
  "",
];

Deno.test("isLoopbackHost: 127.0.0.0/8, ::1 in every spelling, IPv4-mapped loopback and localhost only", () => {
  for (const h of LOOPBACK) assert.equal(isLoopbackHost(h), true, h);
  for (const h of NOT_LOOPBACK) assert.equal(isLoopbackHost(h), false, h);
});

Deno.test("The config check, the auth exemption and the bind gate agree on every address", async () => {
  for (const h of [...LOOPBACK, ...NOT_LOOPBACK]) {
    const expected = isLoopbackHost(h);
    assert.equal(isLoopbackAddress(h), expected, `auth: ${h}`);
    // The config check: a non-loopback bind without auth is an error (allow_insecure_bind off).
    const r = loadConfig(
      `http: {bind: "${h}", auth_enabled: false}\nproviders: [{id: p0, command: prov}]\n`,
      {
        path: "/etc/rig/runtime.yaml",
        mode: "check",
        env: {},
        fileExists: () => false,
        commandExists: () => true,
        cwd: "/",
      },
    );
    const refused = r.diagnostics.some((d) =>
      d.severity === "error" && /not a loopback address/.test(d.message)
    );
    if (h.trim() !== "") assert.equal(refused, !expected, `config: ${h}`);
  }
  // The bind gate at start: 0:0:0:0:0:0:0:1 is loopback there too (it was refused before).
  const server = await serveHttp({
    hostname: "0:0:0:0:0:0:0:1",
    port: 0,
    tlsCertPath: null,
    tlsKeyPath: null,
    authEnabled: false,
    allowInsecureBind: false,
    tlsAllowExpiredCert: false,
    maxConnections: 4,
    requestHeaderTimeoutMs: 1000,
    keepAliveTimeoutMs: 1000,
    reservedFds: 0,
    handler: () => Promise.resolve(new Response("ok")),
    log: testLogger(),
  });
  await server.shutdown();
  await assert.rejects(
    serveHttp({
      hostname: "0.0.0.0",
      port: 0,
      tlsCertPath: null,
      tlsKeyPath: null,
      authEnabled: false,
      allowInsecureBind: false,
      tlsAllowExpiredCert: false,
      maxConnections: 4,
      requestHeaderTimeoutMs: 1000,
      keepAliveTimeoutMs: 1000,
      reservedFds: 0,
      handler: () => Promise.resolve(new Response("ok")),
      log: testLogger(),
    }),
    /not a loopback address/,
  );
});
