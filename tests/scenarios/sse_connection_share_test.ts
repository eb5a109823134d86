/**
 * Event streams and the connection bound (README "HTTP connections", docs/http-api.md "Events"): an
 * open stream holds its connection for as long as it lasts and is never idle, so the connection
 * layer can never close it for a newcomer. Streams may therefore hold only part of
 * `http.max_connections`: however many pages are open, a client with something to say
 * (`POST /v0/estop`) still gets a connection. The `runtime` command as a real child process with the
 * simulated provider, real HTTP on loopback.
 */
import assert from "node:assert/strict";
import { startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";

Deno.test("Event streams cannot take every connection: with http.max_connections 8 and 8 pages streaming, POST /v0/estop still gets in", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-sse-share-" });
  const rt = await startRuntimeWithConfigOnFreePort(
    `${dir}/runtime.yaml`,
    (port) =>
      `runtime: {data_dir: ${dir}/data, shutdown_timeout_ms: 2000}
http: {port: ${port}, max_connections: 8, thread_pool_size: 4}
providers:
  - id: sim0
    command: ${Deno.execPath()}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]
`,
  );
  // One HTTP client per stream: each holds a connection of its own, as a browser page would.
  const clients: Deno.HttpClient[] = [];
  const streams: ReadableStreamDefaultReader<Uint8Array>[] = [];
  try {
    const statuses: number[] = [];
    const refusals: string[] = [];
    for (let i = 0; i < 8; i++) {
      const client = Deno.createHttpClient({});
      clients.push(client);
      const res = await fetch(`${rt.base}/v0/events`, {
        client,
        signal: AbortSignal.timeout(5000),
      });
      statuses.push(res.status);
      if (res.body === null) continue;
      if (res.status === 200) streams.push(res.body.getReader());
      else refusals.push(await res.text());
    }
    const client = Deno.createHttpClient({});
    clients.push(client);
    let estop: Response;
    try {
      estop = await fetch(`${rt.base}/v0/estop`, {
        method: "POST",
        client,
        signal: AbortSignal.timeout(5000),
      });
    } catch (err) {
      throw new assert.AssertionError({
        message: `POST /v0/estop got no answer with ${streams.length} event streams open ` +
          `(stream answers: ${statuses.join(", ")}): ${err}`,
      });
    }
    const text = await estop.text();
    assert.equal(
      estop.status,
      200,
      `POST /v0/estop with ${streams.length} event streams open (stream answers: ${
        statuses.join(", ")
      }): ${text}`,
    );
    assert.equal(JSON.parse(text).latched, true);
    // Half of the connections for streams; the ones refused are told why, naming the setting.
    assert.deepEqual(statuses, [200, 200, 200, 200, 503, 503, 503, 503]);
    assert.match(
      JSON.parse(refusals[0]!).status.message,
      /^Too many event streams: at most 4 may be open \(streams get at most half of the server's 8 connections, http\.max_connections\)$/,
    );
  } finally {
    for (const s of streams) await s.cancel().catch(() => {});
    for (const c of clients) c.close();
    assert.equal(await rt.stop(), 0, rt.stderr());
    await Deno.remove(dir, { recursive: true });
  }
});
