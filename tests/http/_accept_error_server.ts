/**
 * A bare serveHttp in its own process, for tests/http/connection_limits_test.ts: no connection
 * bound fitted to the open-file limit (openFileLimit: null, max_connections 1000), so under a
 * low `ulimit -n` accept() itself fails with EMFILE. Like src/main.ts, an uncaught error or
 * unhandled rejection exits 4. Prints its port; every request answers the connection counters.
 */
import { createStderrLogger, type HttpServerHandle, serveHttp } from "../../src/host/mod.ts";

const crash = (what: unknown) => {
  console.error(`crash: ${what instanceof Error ? what.message : String(what)}`);
  Deno.exit(4);
};
globalThis.addEventListener("error", (e) => {
  e.preventDefault();
  crash(e.error ?? e.message);
});
globalThis.addEventListener("unhandledrejection", (e) => {
  e.preventDefault();
  crash(e.reason);
});

let server: HttpServerHandle | null = null;
server = await serveHttp({
  hostname: "127.0.0.1",
  port: 0,
  tlsCertPath: null,
  tlsKeyPath: null,
  authEnabled: false,
  allowInsecureBind: false,
  maxConnections: 1000,
  openFileLimit: null,
  requestHeaderTimeoutMs: 60_000,
  keepAliveTimeoutMs: 60_000,
  handler: () => Promise.resolve(Response.json(server?.connectionStats() ?? {})),
  log: createStderrLogger("info"),
});
console.log(server.port);
Deno.addSignalListener("SIGTERM", async () => {
  await server?.shutdown();
  Deno.exit(0);
});
