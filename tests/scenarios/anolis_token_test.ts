/**
 * ANOLIS_API_TOKEN: anolis takes its API token from it; this runtime reads RUNTIME_API_TOKEN. Set
 * without RUNTIME_API_TOKEN, it is named in a start-up warning that says which variable to use,
 * never with its value. Run with the compiled binary's permissions (deno.json `compile` --allow-env
 * list), so the single binary can see the variable too.
 */
import assert from "node:assert/strict";
import { stderrOfStartAndStop as runWithEnv } from "../helpers/start_stop.ts";

const SECRET = "anolis-secret-7f3a9c";

Deno.test("runtime warns at start that ANOLIS_API_TOKEN is ignored and names RUNTIME_API_TOKEN, never the value", async () => {
  const stderr = await runWithEnv({ ANOLIS_API_TOKEN: SECRET });
  const lines = stderr.split("\n").filter((l) => l.includes("ANOLIS_API_TOKEN"));
  assert.equal(lines.length, 1, stderr);
  assert.match(lines[0]!, /^WARN {2}\S+ ANOLIS_API_TOKEN is set but ignored: .*RUNTIME_API_TOKEN/);
  assert.ok(!stderr.includes(SECRET), "the value is never logged");
});

Deno.test("runtime says nothing about ANOLIS_API_TOKEN when RUNTIME_API_TOKEN is set, or when it is unset", async () => {
  const both = await runWithEnv({ ANOLIS_API_TOKEN: SECRET, RUNTIME_API_TOKEN: "r-token" });
  assert.ok(!both.includes("ANOLIS_API_TOKEN"), both);
  assert.ok(!both.includes(SECRET));
  const neither = await runWithEnv({});
  assert.ok(!neither.includes("ANOLIS_API_TOKEN"), neither);
});
