/**
 * A reload that turns http.auth_enabled off (a restart's business: authentication stays on until
 * then) judges its tokens as if they were ignored: a token no client can send is only a warning in
 * such a file. The API still authenticates, so such a token would admit nobody: the token sections
 * are refused, the tokens in force kept, as a start with authentication on refuses that token
 * (docs/http-api.md, "Authentication"). End to end: the `runtime` command as a child process,
 * its file rewritten and SIGHUP sent.
 */
import assert from "node:assert/strict";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";

const WAIT_MS = 60000;

/**
 * The `runtime` child on a file whose `http:` section (after `port` and auth_exempt_loopback: false)
 * is `first`, started with `token`; `reload(http)` rewrites that section, sends SIGHUP and answers
 * the reload's summary line; `status(token)` the status code of GET /v0/runtime/status with it;
 * `base` the API's URL.
 */
async function tokenReloadRig(
  first: string,
  token: string,
  run: (r: {
    reload: (http: string) => Promise<string>;
    status: (token: string) => Promise<number>;
    stderr: () => string;
    base: string;
  }) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-token-reload-" });
  const configPath = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(`${dir}/sim-p0.yaml`, await Deno.readTextFile(SIM_INERT_YAML));
  const provider = `  - {id: p0, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, ` +
    `--allow-env, ${SIM_MAIN}, --config, ${dir}/sim-p0.yaml]}`;
  const yaml = (http: string, port: number) =>
    `runtime: {data_dir: ${dir}/data, shutdown_timeout_ms: 2000}\n` +
    `http:\n  port: ${port}\n  auth_exempt_loopback: false\n${http}` +
    `providers:\n${provider}\n`;
  const rt = await startRuntimeWithConfigOnFreePort(configPath, (port) => yaml(first, port), {
    token,
  });
  try {
    await run({
      reload: async (http) => {
        await Deno.writeTextFile(configPath, yaml(http, rt.port));
        rt.signal("SIGHUP");
        return await waitFor(
          "the reload's summary",
          () => rt.stderr().split("\n").find((l) => / config reload: providers/.test(l)),
          WAIT_MS,
        );
      },
      status: async (t) =>
        (await apiFetch(`${rt.base}/v0/runtime/status`, {
          headers: { authorization: `Bearer ${t}` },
        })).status,
      stderr: () => rt.stderr(),
      base: rt.base,
    });
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("SIGHUP that turns auth off (a restart's business) and sets an unsendable auth_token keeps the tokens in force: the API, still authenticating, is not left admitting nobody", async () => {
  const TOKEN = "shift-token-aaaaaaaaaaaaaaaa";
  // Trailing whitespace: no client can send it (Fetch trims header values).
  const UNSENDABLE = "new-default-token-bbbbbbbbbbbb ";
  await tokenReloadRig(
    `  auth_enabled: true\n  tokens:\n    - {name: shift, role: operator, token: ${TOKEN}}\n`,
    TOKEN,
    async ({ reload, status, stderr }) => {
      assert.equal(await status(TOKEN), 200);
      const summary = await reload(`  auth_enabled: false\n  auth_token: "${UNSENDABLE}"\n`);
      assert.match(summary, /needs restart: http\.auth_enabled/);
      assert.equal(
        await status(TOKEN),
        200,
        `auth is still on until the restart: the token in force must still admit (${summary})`,
      );
      assert.match(summary, /refused http\.auth_token: .*cannot send/);
      assert.ok(!stderr().includes(UNSENDABLE.trim()), "no token is logged");
    },
  );
});

Deno.test("SIGHUP that turns auth off and gives a named token (http.tokens) one no client can send keeps the tokens in force: that operator keeps access, not 'removed'", async () => {
  const ADMIN = "admin-token-cccccccccccccccc";
  const TOKEN = "shift-token-aaaaaaaaaaaaaaaa";
  const http = (auth: string, shift: string) =>
    `${auth}  tokens:\n    - {name: admin, role: admin, token: ${ADMIN}}\n` +
    `    - {name: shift, role: operator, token: "${shift}"}\n`;
  await tokenReloadRig(http("  auth_enabled: true\n", TOKEN), ADMIN, async ({ reload, status }) => {
    assert.equal(await status(TOKEN), 200);
    // The same token with a trailing space: no client can send it (Fetch trims header values).
    const summary = await reload(http("  auth_enabled: false\n", `${TOKEN} `));
    assert.match(summary, /needs restart: http\.auth_enabled/);
    assert.doesNotMatch(summary, /removed/, summary);
    assert.match(
      summary,
      /refused http\.tokens: .*token 'shift' ends with whitespace.*cannot send/,
    );
    assert.equal(
      await status(TOKEN),
      200,
      `auth is still on until the restart: the shift's token in force must still admit (${summary})`,
    );
    assert.equal(await status(ADMIN), 200);
  });
});

Deno.test("SIGHUP that turns auth off and sets an auth_token too long for any request to carry keeps the tokens in force: the API is not left admitting nobody", async () => {
  const TOKEN = "shift-token-aaaaaaaaaaaaaaaa";
  // Longer than the 64 KiB of request headers the server reads: every request bearing it is a 400.
  const LONG = `long-${"d".repeat(70000)}`;
  await tokenReloadRig(
    `  auth_enabled: true\n  tokens:\n    - {name: shift, role: operator, token: ${TOKEN}}\n`,
    TOKEN,
    async ({ reload, status, stderr, base }) => {
      assert.equal(await status(TOKEN), 200);
      const summary = await reload(`  auth_enabled: false\n  auth_token: "${LONG}"\n`);
      assert.match(summary, /needs restart: http\.auth_enabled/);
      // Not apiFetch: the server's own 400 (headers too large) is no answer the API documents.
      const carried = await fetch(`${base}/v0/runtime/status`, {
        headers: { authorization: `Bearer ${LONG}` },
      });
      await carried.body?.cancel();
      assert.equal(carried.status, 400, "no request can carry that token");
      assert.equal(
        await status(TOKEN),
        200,
        `auth is still on until the restart: the token in force must still admit (${summary})`,
      );
      assert.match(summary, /refused http\.auth_token: .*is longer than 8192 characters/);
      assert.ok(!stderr().includes("dddddddd"), "no token is logged");
    },
  );
});
