/**
 * The one place HTTP tests boot a runtime: a real Kernel over real simulated provider processes
 * (or, with `start: false`, a Kernel that was never started — no processes, no providers up),
 * an HttpApi over the kernel's services (Kernel.services, as production hands them to its API;
 * run records and audit journaled in a temporary folder), and optionally a real socket server.
 * withRunsFixture: the same API over a never-started Kernel, with a real run registry of its own.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import { type HttpServerHandle, journalFiles, serveHttp, systemClock } from "../../src/host/mod.ts";
import { HttpApi, type HttpApiOptions, type HttpServices } from "../../src/http/mod.ts";
import { RunRegistry } from "../../src/runs/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { newKernel, startRuntime, testLogger } from "./kernel.ts";
import { assertApiAnswer } from "./openapi_check.ts";
import { simProvider, testConfig, type TestConfigOptions } from "./sim_config.ts";

/**
 * Services a test may put in place of the fixture's own: a fake, or a real one the test set up
 * (and stops itself). An entry given as `undefined` keeps the fixture's own.
 */
export type ServiceOverrides = Partial<
  Pick<
    HttpServices,
    | "modes"
    | "parameters"
    | "estop"
    | "automation"
    | "telemetry"
    | "runs"
    | "alarms"
    | "history"
    | "incidents"
  >
>;

export interface HttpFixtureOptions {
  /** Number of simulated providers sim0..simN-1 (default 1); ignored when config.providers is set. */
  providers?: number;
  /** Config overrides (polling interval, http auth/cors, ...). */
  config?: TestConfigOptions;
  /** false: construct the Kernel but do not start it (no provider processes). Default true. */
  start?: boolean;
  services?: ServiceOverrides;
  api?: Partial<HttpApiOptions>;
  /**
   * The clock of the HttpApi's time and timers (SSE keep-alive, body reads), e.g. a ManualClock
   * (tests/helpers/clock.ts); default the Kernel's (systemClock).
   */
  apiClock?: Clock;
}

/** What a direct handler call returned, body parsed as JSON when it is JSON. */
export interface FixtureResponse {
  status: number;
  headers: Headers;
  // deno-lint-ignore no-explicit-any
  json: any;
  text: string;
}

export interface RequestOptions {
  /** A JS value is sent as JSON; a string is sent verbatim. */
  body?: unknown;
  headers?: Record<string, string>;
  remoteAddr?: string;
}

/** A runtime + API under test; `close()` releases everything (servers, streams, processes). */
export class HttpFixture {
  readonly runtime: Kernel;
  readonly services: HttpServices;
  readonly api: HttpApi;
  readonly config: Config;
  readonly #servers: HttpServerHandle[] = [];

  constructor(runtime: Kernel, services: HttpServices, api: HttpApi) {
    this.runtime = runtime;
    this.services = services;
    this.api = api;
    this.config = runtime.config;
  }

  /**
   * Calls the handler directly (no socket); default remote address is loopback. The answer is
   * checked against GET /v0/openapi.json's document (openapi_check.ts): one that breaks it fails
   * the test (an event stream: by status and content type).
   */
  async request(method: string, path: string, o: RequestOptions = {}): Promise<FixtureResponse> {
    const init: RequestInit = { method, headers: { ...o.headers } };
    if (o.body !== undefined) {
      init.body = typeof o.body === "string" ? o.body : JSON.stringify(o.body);
      (init.headers as Record<string, string>)["content-type"] ??= "application/json";
    }
    const res = await this.api.handle(new Request(`http://localhost${path}`, init), {
      remoteAddr: o.remoteAddr ?? "127.0.0.1",
    });
    const contentType = res.headers.get("content-type");
    const streaming = (contentType ?? "").startsWith("text/event-stream");
    const text = streaming ? "" : await res.text();
    if (streaming) await res.body?.cancel();
    assertApiAnswer({ method, path, status: res.status, contentType, body: text });
    let json: unknown = undefined;
    // JSON, not JSON Lines (application/jsonl: an incident's export).
    if (/^application\/json\s*(;|$)/.test(contentType ?? "")) json = JSON.parse(text);
    return { status: res.status, headers: res.headers, json, text };
  }

  /** Serves the API on a real socket (127.0.0.1, free port unless given). */
  async serve(
    o: { tlsCertPath?: string; tlsKeyPath?: string; hostname?: string } = {},
  ): Promise<HttpServerHandle> {
    const http = this.config.http;
    const server = await serveHttp({
      hostname: o.hostname ?? "127.0.0.1",
      port: 0,
      tlsCertPath: o.tlsCertPath ?? null,
      tlsKeyPath: o.tlsKeyPath ?? null,
      authEnabled: http.authEnabled,
      allowInsecureBind: http.allowInsecureBind,
      handler: this.api.handle,
      log: testLogger(),
      onShutdown: () => this.api.close(),
    });
    this.#servers.push(server);
    return server;
  }

  async close(): Promise<void> {
    this.api.close();
    await Promise.all(this.#servers.map((s) => s.shutdown()));
    await this.runtime.stop();
  }
}

/** Boots a runtime with simulated providers and an HttpApi over it. */
export async function startHttpFixture(o: HttpFixtureOptions = {}): Promise<HttpFixture> {
  const n = o.providers ?? 1;
  const config = testConfig({
    providers: Array.from({ length: n }, (_, i) => simProvider(`sim${i}`)),
    ...o.config,
  });
  const runtime = o.start === false ? newKernel(config) : await startRuntime(config);
  const services = fixtureServices(runtime, o.services, o.apiClock);
  const api = new HttpApi(services, { apiToken: "", ...o.api });
  return new HttpFixture(runtime, services, api);
}

/**
 * The kernel's HttpServices (Kernel.services: what production hands the API), with the services
 * in `overrides` in place of the kernel's own (left to the test), and the API's clock replaced.
 */
export function fixtureServices(
  runtime: Kernel,
  overrides: ServiceOverrides = {},
  apiClock?: Clock,
): HttpServices {
  // Descriptors, not a spread: the getters of Kernel.services (config) stay getters.
  const services = Object.defineProperties(
    {},
    Object.getOwnPropertyDescriptors(runtime.services),
  ) as HttpServices;
  const given = Object.entries(Object.getOwnPropertyDescriptors(overrides))
    .filter(([, d]) => d.get !== undefined || d.value !== undefined);
  Object.defineProperties(services, Object.fromEntries(given));
  if (apiClock) {
    const host = { ...services.host, clock: apiClock };
    Object.defineProperty(services, "host", { value: host, enumerable: true });
  }
  return services;
}

/** How withRunsFixture builds its run registry. */
export interface RunsFixtureOptions {
  /** Prefix of the temporary folder the registry journals in (removed afterwards). */
  readonly prefix: string;
  /** The registry's runtime name, the prefix of its run ids (default "t"). */
  readonly runtimeName?: string;
  /**
   * The registry's data folder, made ready inside the temporary folder `dir` (default `dir`
   * itself): e.g. a folder under a regular file, which the registry cannot create.
   */
  readonly dataDir?: (dir: string) => string | Promise<string>;
  /**
   * Whatever the test wrote must replay cleanly: once the registry is shut down, a fresh one over
   * the same folder starts with no corrupt line and available (default: not checked).
   */
  readonly replays?: boolean;
}

/** What withRunsFixture hands its test: the API, the run registry behind it, the folder. */
export interface RunsFixture {
  readonly fx: HttpFixture;
  readonly runs: RunRegistry;
  /** The temporary folder (the registry's data folder unless `dataDir` placed it elsewhere). */
  readonly dir: string;
}

/**
 * Runs `fn` against an HttpApi over a never-started Kernel (no provider process) whose runs
 * service is a real RunRegistry, started, journaling in a fresh temporary folder on the system
 * clock; then closes the API, shuts the registry down (checks its journals replay, with `replays`)
 * and removes the folder, whatever `fn` did.
 */
export async function withRunsFixture(
  o: RunsFixtureOptions,
  fn: (f: RunsFixture) => Promise<void>,
): Promise<void> {
  const dir = await Deno.makeTempDir({ prefix: o.prefix });
  try {
    const dataDir = o.dataDir ? await o.dataDir(dir) : dir;
    const registry = () =>
      new RunRegistry({
        dataDir,
        runtimeName: o.runtimeName ?? "t",
        pollingIntervalMs: 100,
        files: journalFiles,
        clock: systemClock,
        logger: testLogger(),
      });
    const runs = registry();
    await runs.start();
    try {
      const fx = await startHttpFixture({ start: false, services: { runs } });
      try {
        await fn({ fx, runs, dir });
      } finally {
        await fx.close();
      }
    } finally {
      await runs.shutdown();
    }
    if (o.replays) {
      const again = registry();
      await again.start();
      try {
        assert.deepEqual(again.startupReport().corruptLines, []);
        assert.equal(again.info().available, true);
      } finally {
        await again.shutdown();
      }
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}
