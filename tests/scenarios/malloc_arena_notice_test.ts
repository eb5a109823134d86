/**
 * MALLOC_ARENA_MAX: the systemd unit and the start tasks set it (docs/deployment.md, "Memory: V8
 * and malloc settings"); a compiled binary cannot carry it. Started without it (or with it empty),
 * the runtime says so in one INFO line at start; with it set, nothing. Run with the compiled
 * binary's permissions (deno.json `compile` --allow-env list), so the single binary can read it.
 */
import assert from "node:assert/strict";
import { stderrOfStartAndStop as runWithEnv } from "../helpers/start_stop.ts";

Deno.test(
  {
    name: "runtime says at start, once, that MALLOC_ARENA_MAX is not set",
    ignore: Deno.build.os !== "linux",
  },
  async () => {
    const stderr = await runWithEnv({ MALLOC_ARENA_MAX: "" });
    const lines = stderr.split("\n").filter((l) => l.includes("MALLOC_ARENA_MAX"));
    assert.equal(lines.length, 1, stderr);
    assert.match(lines[0]!, /^INFO {2}\S+ MALLOC_ARENA_MAX is not set: .*MALLOC_ARENA_MAX=2/);
  },
);

Deno.test("runtime says nothing about MALLOC_ARENA_MAX when it is set", async () => {
  const stderr = await runWithEnv({ MALLOC_ARENA_MAX: "2" });
  assert.ok(!stderr.includes("MALLOC_ARENA_MAX"), stderr);
});
