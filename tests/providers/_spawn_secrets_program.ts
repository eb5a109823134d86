/**
 * A program (run as a process of its own by tests/providers/spawn_process_test.ts, with the
 * environment the case needs): spawnProcess keeps the runtime's secrets out of a provider's
 * environment. Its own process, because the environment is the process's: the suite's shards run
 * as workers of one process, and a secret set there would be taken by another shard's spawn (and
 * kept in that shard's memory of secrets) or read by its runtime as its API token.
 *
 *   _spawn_secrets_program.ts builtin   RUNTIME_API_TOKEN, INFLUXDB_TOKEN and PROBE_MARKER set
 *   _spawn_secrets_program.ts named     RUNTIME_TEST_TOKEN_ENV_PROBE set (a token_env variable)
 *
 * Prints `ok` and exits 0 when every assertion holds; an assertion's failure ends it non-zero.
 */
import assert from "node:assert/strict";
import { secretFromEnvironment, spawnProcess } from "../../src/host/mod.ts";

/** The names of the variables a provider spawned now (sh) sees in its environment. */
async function providerEnvNames(): Promise<string[]> {
  const p = spawnProcess({
    command: "sh",
    args: ["-c", "env | cut -d= -f1 | sort | tr '\\n' ' '; echo"],
    cwd: Deno.cwd(),
  });
  const [out] = await Promise.all([
    new Response(p.stdout).text(),
    p.stderr.cancel(),
    p.stdin.close(),
    p.exited,
  ]);
  return out.split("\n")[0]!.split(" ");
}

const which = Deno.args[0];
if (which === "builtin") {
  const names = await providerEnvNames();
  assert.ok(names.includes("PROBE_MARKER"), "the rest of the environment passes through");
  assert.ok(!names.includes("RUNTIME_API_TOKEN"));
  assert.ok(!names.includes("INFLUXDB_TOKEN"));
  assert.equal(secretFromEnvironment("RUNTIME_API_TOKEN"), "api-secret-4711");
  assert.equal(secretFromEnvironment("INFLUXDB_TOKEN"), "influx-secret-0815");
} else if (which === "named") {
  const name = "RUNTIME_TEST_TOKEN_ENV_PROBE";
  assert.equal(secretFromEnvironment(name), "named-secret-0042");
  assert.equal(Deno.env.get(name), undefined, "taken out of the runtime's environment");
  Deno.env.set(name, "set-again-later"); // taken out again before the next spawn
  const names = await providerEnvNames();
  assert.ok(names.includes("PATH"), "the rest of the environment passes through");
  assert.ok(!names.includes(name));
} else {
  throw new Error(`unknown case ${which}: expected builtin or named`);
}
console.log("ok");
