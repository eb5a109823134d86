/**
 * The one place HTTP tests boot a runtime: a real Kernel over real simulated provider processes
 * (or, with `start: false`, a Kernel that was never started — no processes, no providers up),
 * the service's run registry (in a temporary folder) and telemetry writer as startService builds
 * them, an HttpApi over them all, and optionally a real socket server.
 */
import type { Clock } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import { boundedEntryText } from "../../src/audit/mod.ts";
import { type HttpServerHandle, journalFiles, serveHttp } from "../../src/host/mod.ts";
import { HttpApi, type HttpApiOptions, type HttpServices } from "../../src/http/mod.ts";
import { Kernel } from "../../src/app/kernel.ts";
import { httpServicesOf } from "../../src/app/process.ts";
import { RunRegistry } from "../../src/runs/mod.ts";
import {
  loadInfluxClient,
  telemetryOptionsFromConfig,
  TelemetryWriter,
} from "../../src/telemetry/mod.ts";
import { startRuntime, testLogger } from "./kernel.ts";
import { assertApiAnswer } from "./openapi_check.ts";
import { simProvider, testConfig, type TestConfigOptions } from "./sim_config.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";

/**
 * Services a test may put in place of the fixture's own: a fake, or a real one the test set up
 * (and stops itself). An entry given as `undefined` keeps the fixture's own.
 */
export type ServiceOverrides = Partial<
  Pick<
    HttpServices,
    "modes" | "parameters" | "estop" | "automation" | "telemetry" | "runs" | "alarms"
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
  readonly #stopServices: () => Promise<void>;

  /** `stopServices` stops what the fixture started besides the runtime (after the runtime). */
  constructor(
    runtime: Kernel,
    services: HttpServices,
    api: HttpApi,
    stopServices: () => Promise<void> = () => Promise.resolve(),
  ) {
    this.runtime = runtime;
    this.services = services;
    this.api = api;
    this.config = runtime.config;
    this.#stopServices = stopServices;
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
    if (res.headers.get("content-type")?.startsWith("application/json")) json = JSON.parse(text);
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
    try {
      await this.runtime.stop();
    } finally {
      await this.#stopServices();
    }
  }
}

/** Boots a runtime with simulated providers and an HttpApi over it. */
export async function startHttpFixture(o: HttpFixtureOptions = {}): Promise<HttpFixture> {
  const n = o.providers ?? 1;
  const config = testConfig({
    providers: Array.from({ length: n }, (_, i) => simProvider(`sim${i}`)),
    ...o.config,
  });
  const runtime = o.start === false
    ? new Kernel(config, { spawn: spawnProcess, clock: systemClock, log: testLogger() })
    : await startRuntime(config);
  let services: FixtureServices;
  try {
    services = await fixtureServices(runtime, o.services);
  } catch (err) {
    await runtime.stop();
    throw err;
  }
  if (o.apiClock) {
    const host = { ...services.services.host, clock: o.apiClock };
    Object.defineProperty(services.services, "host", { value: host, enumerable: true });
  }
  const api = new HttpApi(services.services, { apiToken: "", ...o.api });
  return new HttpFixture(runtime, services.services, api, services.stop);
}

/** A runtime's HttpServices as a fixture serves them, and how to stop what was started for them. */
export interface FixtureServices {
  readonly services: HttpServices;
  /** Stops the run registry and telemetry writer the fixture started (call after the runtime). */
  readonly stop: () => Promise<void>;
}

/**
 * The runtime's services as the service gives them to the HTTP layer (httpServicesOf), with a run
 * registry (journal in a temporary folder) and a telemetry writer built and wired as startService
 * (src/app/process.ts) does, and no configuration reloads. A service in `overrides` is used
 * instead of the fixture's own and left to the test.
 */
export async function fixtureServices(
  runtime: Kernel,
  overrides: ServiceOverrides = {},
): Promise<FixtureServices> {
  const config = runtime.config;
  const stops: Array<() => Promise<void>> = [];
  const stop = async () => {
    let failure: unknown = null;
    for (const s of stops.splice(0).reverse()) await s().catch((err) => failure ??= err);
    if (failure !== null) throw failure;
  };
  try {
    let telemetry = overrides.telemetry;
    if (telemetry === undefined) {
      const writer = new TelemetryWriter(telemetryOptionsFromConfig(config, {
        clock: systemClock,
        logger: testLogger(),
        healthSnapshot: () => runtime.providerHealthLive(),
      }));
      if (config.telemetry.enabled) await loadInfluxClient();
      writer.start(runtime.bus);
      stops.push(() => writer.stop(Math.max(200, config.runtime.shutdownTimeoutMs / 2)));
      telemetry = writer;
    }
    let runs = overrides.runs;
    if (runs === undefined) {
      const dataDir = await Deno.makeTempDir({ prefix: "http-fixture-runs-" });
      stops.push(() => Deno.remove(dataDir, { recursive: true }));
      const writer = telemetry instanceof TelemetryWriter ? telemetry : null;
      const registry = new RunRegistry({
        dataDir,
        runtimeName: config.runtime.name,
        pollingIntervalMs: config.polling.intervalMs,
        files: journalFiles,
        clock: systemClock,
        logger: testLogger(),
        automationVersion: () => runtime.automation?.automationVersion() ?? null,
        telemetrySink: (event, run) => writer?.recordRunEvent(event, run.experiment_label),
      });
      runtime.automation?.setOpenRunId(() => registry.openRunId());
      runtime.audit.onEntry((entry) => {
        if (entry.action === "call" && registry.openRunId() !== null) {
          registry.recordCall(JSON.parse(boundedEntryText(entry)));
        }
      });
      await registry.start();
      stops.push(() => registry.shutdown());
      registry.attach(runtime.bus);
      runs = registry;
    }
    const services = httpServicesOf(runtime, {
      runs,
      telemetry,
      configReloads: () => ({ success: 0, failure: 0, lastSuccessEpochSeconds: null }),
    });
    // Descriptors, not a spread: the getters of httpServicesOf (config, alarms) stay getters.
    const given = Object.entries(Object.getOwnPropertyDescriptors(overrides))
      .filter(([, d]) => d.get !== undefined || d.value !== undefined);
    Object.defineProperties(services, Object.fromEntries(given));
    return { services, stop };
  } catch (err) {
    await stop();
    throw err;
  }
}
