/**
 * The HTTP server's connection bound fitted to the open-file limit (src/host/serve.ts), in a
 * runtime run with the compiled binary's permissions (deno.json `compile`: no --allow-all). Deno
 * refuses such a process its own /proc files, so the limit read from /proc/self/limits was
 * "unknown" in the single binary and http.max_connections was never fitted to it.
 */
import assert from "node:assert/strict";
import { withInertRuntime } from "../helpers/start_stop.ts";

Deno.test({
  name:
    "the compiled binary's permissions: http.max_connections is fitted to a low open-file limit, and said",
  ignore: Deno.build.os !== "linux",
  fn: async () => {
    const stderr = await withInertRuntime({
      // 160 open files: 160 - 68 kept for the rest (64 + 4 per provider) leaves 92 for connections.
      wrap: ["/bin/sh", "-c", 'ulimit -n 160 && exec "$@"', "sh"],
    }, () => Promise.resolve());
    const line = stderr.split("\n").find((l) => l.includes("does not fit the open-file limit"));
    assert.ok(line !== undefined, stderr);
    assert.match(
      line,
      /^WARN {2}\S+ \[http\] http\.max_connections 128 does not fit the open-file limit 160 \(68 kept for the rest of the runtime\); serving at most 92 connections/,
    );
  },
});
