/**
 * A connection bound the open-file limit lowers at start-up is checked against
 * http.thread_pool_size and the event streams' share as the configured one is (config
 * "max_connections leaves N connection(s) for requests ..."): an operator learns that the bound in
 * force leaves requests no more connections than requests may be in flight.
 */
import assert from "node:assert/strict";
import { httpReservedFds, serveHttp } from "../../src/host/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { infoLines } from "../helpers/sparkplug_host.ts";
import { testConfig } from "../helpers/sim_config.ts";

async function startWithLimit(spare: number): Promise<string[]> {
  const { lines, log } = infoLines();
  const config = testConfig({ http: { maxConnections: 128, threadPoolSize: 40 } });
  const limit = httpReservedFds(config.providers.length) + spare;
  const rt = await startRuntime(config, {
    host: { log, serve: (o) => serveHttp({ ...o, openFileLimit: limit }) },
  });
  try {
    assert.equal(rt.http!.maxConnections, Math.min(128, spare), "the bound in force");
  } finally {
    await rt.stop();
  }
  return lines;
}

Deno.test("a connection bound the open-file limit lowers below thread_pool_size plus the streams' share is warned about", async () => {
  // 60 connections: streams may hold 30, leaving 30 for requests, not above 40.
  const lines = await startWithLimit(60);
  const warned = lines.filter((l) => /thread_pool_size/.test(l));
  assert.equal(warned.length, 1, `one warning about the bound in force:\n${lines.join("\n")}`);
  assert.match(
    warned[0]!,
    /^WARN .*the connection bound in force \(60, http\.max_connections 128 lowered to fit the open-file limit\) leaves 30 connection\(s\) for requests once event streams hold theirs \(30, at most half\), not above thread_pool_size \(40\)/,
  );
});

Deno.test("a connection bound the open-file limit lowers but that still leaves requests more than thread_pool_size is not warned about", async () => {
  // 100 connections: streams may hold 32, leaving 68 for requests.
  const lines = await startWithLimit(100);
  assert.deepEqual(lines.filter((l) => /thread_pool_size/.test(l)), []);
  assert.equal(lines.filter((l) => /does not fit the open-file limit/.test(l)).length, 1);
});
