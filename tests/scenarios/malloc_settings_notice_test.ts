/**
 * The glibc malloc settings (MALLOC_ENV: MALLOC_ARENA_MAX): the systemd unit and the start tasks
 * set them (docs/deployment.md, "Memory: V8 and malloc settings"); a compiled binary cannot carry
 * them. Started without one (or with it empty), the runtime names those missing in one INFO line at
 * start; with all set, nothing. Run with the compiled binary's permissions (deno.json `compile`
 * --allow-env list), so the single binary can read them.
 */
import assert from "node:assert/strict";
import { MALLOC_ENV } from "../../src/main.ts";
import { stderrOfStartAndStop as runWithEnv } from "../helpers/start_stop.ts";

const notice = (stderr: string) => stderr.split("\n").filter((l) => l.includes("malloc settings"));

Deno.test({
  name: "runtime says at start, once, that the malloc settings are not set, naming each",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const none = Object.fromEntries(Object.keys(MALLOC_ENV).map((k) => [k, ""]));
    const stderr = await runWithEnv(none);
    const lines = notice(stderr);
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0]!, /^INFO {2}\S+ malloc settings not set: MALLOC_ARENA_MAX: /);
    assert.ok(lines[0]!.endsWith("set MALLOC_ARENA_MAX=2 as the systemd unit does"), lines[0]);
  },
});

Deno.test("runtime says nothing about the malloc settings when all are set", async () => {
  const stderr = await runWithEnv({ ...MALLOC_ENV });
  assert.deepEqual(notice(stderr), [], stderr);
});
