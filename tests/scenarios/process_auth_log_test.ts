/**
 * The runtime always says at start-up whether authentication is on, and which setting decides it
 * (with `http.auth_enable: true`, a misspelling, it once started with authentication off and did
 * not say so). A real runtime process; the line is the requirement, so it is read.
 */
import assert from "node:assert/strict";
import {
  killLeftovers,
  providerYaml,
  readScriptedLog,
  type RuntimeProcess,
  runtimeStatus,
  scriptedCommand,
  startRuntimeOnFreePort,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

/** Starts the runtime with `http` lines, returns its authentication line, and stops it. */
async function authLine(
  http: string,
  env: Record<string, string> = {},
): Promise<{ line: string; stderr: string }> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-auth-log-" });
  const log = `${dir}/provider.log`;
  let rt: RuntimeProcess | null = null;
  try {
    const started = await startRuntimeOnFreePort(async (port) =>
      await writeRuntimeConfig(dir, {
        port,
        http,
        providers: providerYaml("p0", scriptedCommand(["--log", log])),
      }), { env });
    rt = started.rt;
    assert.ok(await runtimeStatus(started.port), "API answering (loopback clients are exempt)");
    // Said before the API listens: everything of the start-up is in by "Runtime Ready".
    const ready = await within(rt.stderrLine(/Runtime Ready/), 30_000);
    if (ready === "timeout") assert.fail("the runtime never logged Runtime Ready");
    rt.child.kill("SIGTERM");
    const exit = await rt.exit;
    assert.equal(exit.code, 0, exit.stderr);
    const lines = exit.stderr.split("\n").filter((l) => / authentication (on|off)\b/.test(l));
    assert.equal(lines.length, 1, exit.stderr);
    return { line: lines[0]!, stderr: exit.stderr };
  } finally {
    await rt?.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("a runtime whose auth_enabled is misspelled logs that authentication is off, from http.auth_enabled, after the unknown-key warning", async () => {
  const { line, stderr } = await authLine("  auth_enable: true\n");
  assert.match(line, /^INFO .* authentication off: http\.auth_enabled is false/);
  const lines = stderr.split("\n");
  const typo = lines.findIndex((l) =>
    /warning: http\.auth_enable: unknown key 'auth_enable' will be ignored \(did you mean 'auth_enabled'\?\)/
      .test(l)
  );
  assert.ok(typo >= 0, stderr);
  assert.ok(typo < lines.indexOf(line), "the key is named before the runtime says auth is off");
});

Deno.test("a runtime with authentication on logs it with the token's source, never the token", async () => {
  const token = "s3cret-token-value-0123456789";
  const { line, stderr } = await authLine("  auth_enabled: true\n", { RUNTIME_API_TOKEN: token });
  assert.match(
    line,
    /^INFO .* authentication on \(http\.auth_enabled: true\): bearer token from RUNTIME_API_TOKEN/,
  );
  assert.doesNotMatch(stderr, new RegExp(token));
});
