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
import { freePort, startRuntimeChild } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { waitFor } from "../helpers/kernel.ts";

const WAIT_MS = 60000;

Deno.test("SIGHUP that turns auth off (a restart's business) and sets an unsendable auth_token keeps the tokens in force: the API, still authenticating, is not left admitting nobody", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-token-reload-" });
  const port = freePort();
  const configPath = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(`${dir}/sim-p0.yaml`, await Deno.readTextFile(SIM_INERT_YAML));
  const provider = `  - {id: p0, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, ` +
    `--allow-env, ${SIM_MAIN}, --config, ${dir}/sim-p0.yaml]}`;
  const TOKEN = "shift-token-aaaaaaaaaaaaaaaa";
  // Trailing whitespace: no client can send it (Fetch trims header values).
  const UNSENDABLE = "new-default-token-bbbbbbbbbbbb ";
  const write = (auth: string) =>
    Deno.writeTextFile(
      configPath,
      `runtime: {data_dir: ${dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http:\n  port: ${port}\n  auth_exempt_loopback: false\n${auth}` +
        `providers:\n${provider}\n`,
    );
  await write(
    `  auth_enabled: true\n  tokens:\n    - {name: shift, role: operator, token: ${TOKEN}}\n`,
  );
  const rt = await startRuntimeChild({ config: configPath, port, token: TOKEN });
  try {
    const status = async (token: string) =>
      (await apiFetch(`${rt.base}/v0/runtime/status`, {
        headers: { authorization: `Bearer ${token}` },
      })).status;
    assert.equal(await status(TOKEN), 200);
    await write(`  auth_enabled: false\n  auth_token: "${UNSENDABLE}"\n`);
    rt.signal("SIGHUP");
    const summary = await waitFor(
      "the reload's summary",
      () => rt.stderr().split("\n").find((l) => / config reload: providers/.test(l)),
      WAIT_MS,
    );
    assert.match(summary, /needs restart: http\.auth_enabled/);
    assert.equal(
      await status(TOKEN),
      200,
      `auth is still on until the restart: the token in force must still admit (${summary})`,
    );
    assert.match(summary, /refused http\.auth_token: .*cannot send/);
    assert.ok(!rt.stderr().includes(UNSENDABLE.trim()), "no token is logged");
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("SIGHUP that turns auth off and gives a named token (http.tokens) one no client can send keeps the tokens in force: that operator keeps access, not 'removed'", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-token-reload-" });
  const port = freePort();
  const configPath = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(`${dir}/sim-p0.yaml`, await Deno.readTextFile(SIM_INERT_YAML));
  const provider = `  - {id: p0, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, ` +
    `--allow-env, ${SIM_MAIN}, --config, ${dir}/sim-p0.yaml]}`;
  const ADMIN = "admin-token-cccccccccccccccc";
  const TOKEN = "shift-token-aaaaaaaaaaaaaaaa";
  const write = (auth: string, shift: string) =>
    Deno.writeTextFile(
      configPath,
      `runtime: {data_dir: ${dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http:\n  port: ${port}\n  auth_exempt_loopback: false\n${auth}` +
        `  tokens:\n    - {name: admin, role: admin, token: ${ADMIN}}\n` +
        `    - {name: shift, role: operator, token: "${shift}"}\n` +
        `providers:\n${provider}\n`,
    );
  await write("  auth_enabled: true\n", TOKEN);
  const rt = await startRuntimeChild({ config: configPath, port, token: ADMIN });
  try {
    const status = async (token: string) =>
      (await apiFetch(`${rt.base}/v0/runtime/status`, {
        headers: { authorization: `Bearer ${token}` },
      })).status;
    assert.equal(await status(TOKEN), 200);
    // The same token with a trailing space: no client can send it (Fetch trims header values).
    await write("  auth_enabled: false\n", `${TOKEN} `);
    rt.signal("SIGHUP");
    const summary = await waitFor(
      "the reload's summary",
      () => rt.stderr().split("\n").find((l) => / config reload: providers/.test(l)),
      WAIT_MS,
    );
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
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await Deno.remove(dir, { recursive: true });
  }
});
