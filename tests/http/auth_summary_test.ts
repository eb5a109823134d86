/**
 * authenticationSummary: the start-up line on authentication, on or off and from which setting (a
 * misspelled `auth_enabled` once left it off without a word). The runtime process logging it:
 * tests/scenarios/process_auth_log_test.ts.
 */
import assert from "node:assert/strict";
import { authenticationSummary } from "../../src/http/mod.ts";
import type { HttpConfig } from "../../src/config/mod.ts";
import { testConfig } from "../helpers/sim_config.ts";

const BASE: HttpConfig = testConfig().http;
const http = (o: Partial<HttpConfig>): HttpConfig => ({ ...BASE, ...o });
const named = { name: "wall", role: "viewer" as const, token: "", tokenEnv: "RUNTIME_TOKEN_WALL" };

const CASES: ReadonlyArray<
  { name: string; http: HttpConfig; envToken: boolean; level: string; message: RegExp }
> = [
  {
    name: "off on loopback",
    http: http({ authEnabled: false, bind: "127.0.0.1" }),
    envToken: false,
    level: "info",
    message:
      /^authentication off: http\.auth_enabled is false \(its default when absent\); .*'anonymous', from loopback only/,
  },
  {
    name: "off on the network",
    http: http({ authEnabled: false, bind: "0.0.0.0", allowInsecureBind: true }),
    envToken: true, // a token in the environment does not switch it on
    level: "warn",
    message: /^authentication off: http\.auth_enabled is false .*reachable from the network/,
  },
  {
    name: "on with RUNTIME_API_TOKEN (it wins over http.auth_token)",
    http: http({ authEnabled: true, authToken: "file-token" }),
    envToken: true,
    level: "info",
    message:
      /^authentication on \(http\.auth_enabled: true\): bearer token from RUNTIME_API_TOKEN \(admin 'default'\); loopback clients exempt/,
  },
  {
    name: "on with http.auth_token and named tokens, loopback not exempt",
    http: http({
      authEnabled: true,
      authToken: "file-token",
      tokens: [named],
      authExemptLoopback: false,
    }),
    envToken: false,
    level: "info",
    message:
      /^authentication on \(http\.auth_enabled: true\): bearer token from http\.auth_token \(admin 'default'\) and 1 named in http\.tokens; loopback clients too/,
  },
  {
    name: "on without any token",
    http: http({ authEnabled: true, authToken: "" }),
    envToken: false,
    level: "warn",
    message: /^authentication on \(http\.auth_enabled: true\) but no token is set/,
  },
  {
    name: "no API at all",
    http: http({ enabled: false, authEnabled: true }),
    envToken: false,
    level: "info",
    message: /^authentication off: http\.enabled is false/,
  },
];

for (const c of CASES) {
  Deno.test(`authenticationSummary: ${c.name}`, () => {
    const s = authenticationSummary(c.http, { envToken: c.envToken });
    assert.equal(s.level, c.level);
    assert.match(s.message, c.message);
    assert.doesNotMatch(s.message, /file-token/, "never a token");
  });
}
