/**
 * GET /metrics of a runtime run with the compiled binary's permissions (deno.json `compile`:
 * no --allow-all) carries the process's CPU time. Deno refuses a process without --allow-all its
 * own /proc files (NotCapable on /proc/self/stat), so the figure read from there was left out of
 * the single binary's metrics while every test, run with -A, saw it.
 */
import assert from "node:assert/strict";
import { withInertRuntime } from "../helpers/start_stop.ts";

Deno.test("the compiled binary's permissions: GET /metrics has runtime_process_cpu_seconds_total", async () => {
  await withInertRuntime({}, async (rt) => {
    const text = await (await fetch(`${rt.base}/metrics`)).text();
    const line = text.split("\n").find((l) => l.startsWith("runtime_process_cpu_seconds_total "));
    assert.ok(line !== undefined, text.split("\n").filter((l) => l.includes("process")).join("\n"));
    assert.ok(Number(line.split(" ")[1]) > 0, line);
  });
});
