/**
 * The running service: the runtime kernel plus run records, telemetry and the HTTP server, under
 * the process lifecycle (signals, readiness notification, shutdown budget, exit codes).
 *
 * Start order: run journal replay -> telemetry + run journaling on the event bus -> providers
 * (fail-fast, bounded by startup_timeout_ms) -> HTTP -> READY. Stop order: HTTP (streams first)
 * -> runtime (polling, providers) -> run journal -> telemetry flush, all within
 * runtime.shutdown_timeout_ms.
 */
import type { Logger } from "./common/mod.ts";
import type { Config } from "./config/mod.ts";
import { EXIT_INTERNAL_ERROR, EXIT_OK, EXIT_STARTUP_FAILURE, type ExitCode } from "./exit_codes.ts";
import {
  detachNotifySocket,
  httpReservedFds,
  type HttpServerHandle,
  journalFiles,
  type LineLogger,
  notifyReady,
  notifyStopping,
  serveHttp,
  spawnProcess,
  systemClock,
} from "./host/mod.ts";
import { HttpApi, type HttpServices, resolveApiToken } from "./http/mod.ts";
import { RunRegistry } from "./runs/mod.ts";
import { Runtime } from "./runtime.ts";
import { telemetryOptionsFromConfig, TelemetryWriter } from "./telemetry/mod.ts";

/** Extra time past runtime.shutdown_timeout_ms before the process exits regardless. */
const SHUTDOWN_GRACE_MS = 1000;

/** Everything a running service holds; `stop()` ends it. */
export interface Service {
  readonly runtime: Runtime;
  readonly http: HttpServerHandle | null;
  readonly telemetry: TelemetryWriter;
  readonly runs: RunRegistry;
  stop(): Promise<void>;
}

function envVar(name: string): string | undefined {
  try {
    return Deno.env.get(name);
  } catch {
    return undefined;
  }
}

/** Builds and starts the whole service; throws (after cleaning up) when start-up fails. */
export async function startService(config: Config, log: Logger): Promise<Service> {
  const clock = systemClock;
  const runtime = new Runtime(config, { spawn: spawnProcess, clock, log });
  const telemetry = new TelemetryWriter(telemetryOptionsFromConfig(config, {
    envToken: envVar("INFLUXDB_TOKEN"),
    clock,
    logger: log.child("telemetry"),
    healthSnapshot: () => runtime.providerHealthLive(),
  }));
  const runs = new RunRegistry({
    dataDir: config.runtime.dataDir,
    runtimeName: config.runtime.name,
    pollingIntervalMs: config.polling.intervalMs,
    files: journalFiles,
    clock,
    logger: log.child("runs"),
    automationVersion: () => runtime.automation?.automationVersion() ?? null,
    telemetrySink: (event, run) => telemetry.recordRunEvent(event, run.experiment_label),
  });
  runtime.automation?.setOpenRunId(() => runs.openRunId());

  let http: HttpServerHandle | null = null;
  let api: HttpApi | null = null;
  const stop = async () => {
    api?.close();
    await http?.shutdown();
    await runtime.stop();
    await runs.shutdown();
    await telemetry.stop(Math.max(200, config.runtime.shutdownTimeoutMs / 2));
  };

  try {
    await runs.start();
    // Subscribed before the providers start: the priming poll's first samples must be written
    // too (a signal that never changes is never published again).
    telemetry.start(runtime.bus);
    runs.attach(runtime.bus);
    await runtime.start();
    if (config.http.enabled) {
      api = new HttpApi(
        httpServicesOf(runtime, { telemetry, runs }),
        { apiToken: resolveApiToken(config.http, envVar("RUNTIME_API_TOKEN")) },
      );
      http = await serveHttp({
        hostname: config.http.bind,
        port: config.http.port,
        tlsCertPath: config.http.tlsCertPath,
        tlsKeyPath: config.http.tlsKeyPath,
        authEnabled: config.http.authEnabled,
        allowInsecureBind: config.http.allowInsecureBind,
        tlsAllowExpiredCert: config.http.tlsAllowExpiredCert,
        maxConnections: config.http.maxConnections,
        requestHeaderTimeoutMs: config.http.requestHeaderTimeoutMs,
        keepAliveTimeoutMs: config.http.keepAliveTimeoutMs,
        reservedFds: httpReservedFds(config.providers.length),
        handler: api.handle,
        log: log.child("http"),
        onShutdown: () => api?.close(),
      });
      log.info(
        `API listening on ${http.tls ? "https" : "http"}://${http.hostname}:${http.port}/v0`,
      );
    } else {
      log.info("http.enabled is false: running headless");
    }
  } catch (err) {
    await stop().catch(() => {});
    throw err;
  }
  return { runtime, http, telemetry, runs, stop };
}

/** The runtime's services as the HTTP layer sees them, plus the service-level ones. */
export function httpServicesOf(
  runtime: Runtime,
  extra: Pick<HttpServices, "telemetry" | "runs"> = {},
): HttpServices {
  return {
    config: runtime.config,
    host: runtime.host,
    bus: runtime.bus,
    registry: runtime.registry,
    cache: runtime.cache,
    router: runtime.router,
    providerHealth: () => runtime.providerHealth(),
    uptimeSeconds: () => runtime.uptimeSeconds(),
    modes: runtime.modes,
    estop: runtime.estop,
    ...(runtime.parameters ? { parameters: runtime.parameters } : {}),
    ...(runtime.automation ? { automation: runtime.automation } : {}),
    ...extra,
  };
}

/**
 * Runs the service until SIGINT/SIGTERM and resolves with the process exit code:
 * 0 after a clean shutdown, 3 when start-up fails, 4 when shutdown itself fails or overruns.
 */
export async function runService(config: Config, log: LineLogger): Promise<ExitCode> {
  // Providers must not inherit NOTIFY_SOCKET: with NotifyAccess=all one could report READY early.
  detachNotifySocket();
  // Signals are watched from the start, so a SIGTERM during start-up still stops providers
  // cleanly (once start-up, bounded by startup_timeout_ms, has finished or failed).
  const signal = waitForStopSignal();

  let service: Service;
  try {
    service = await startService(config, log);
  } catch (err) {
    signal.dispose();
    log.error(`start-up failed: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT_STARTUP_FAILURE;
  }
  await notifyReady(log);

  log.info(`${await signal.received} received: shutting down`);
  await notifyStopping(log);

  // The budget is enforced: whatever is still running past it must not keep the process alive.
  const budget = config.runtime.shutdownTimeoutMs + SHUTDOWN_GRACE_MS;
  let timer: ReturnType<typeof setTimeout> | undefined;
  const overrun = new Promise<"overrun">((r) => (timer = setTimeout(() => r("overrun"), budget)));
  try {
    const outcome = await Promise.race([service.stop().then(() => "done" as const), overrun]);
    if (outcome === "overrun") {
      log.error(`shutdown exceeded ${budget} ms; exiting anyway`);
      return EXIT_INTERNAL_ERROR;
    }
    log.info("shutdown complete");
    return EXIT_OK;
  } catch (err) {
    log.error(`shutdown failed: ${err instanceof Error ? err.message : String(err)}`);
    return EXIT_INTERNAL_ERROR;
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves with the first SIGINT/SIGTERM; `dispose` removes the listeners. */
function waitForStopSignal(): { received: Promise<string>; dispose: () => void } {
  const handlers: Array<[Deno.Signal, () => void]> = [];
  const dispose = () => {
    for (const [s, f] of handlers) Deno.removeSignalListener(s, f);
    handlers.length = 0;
  };
  const received = new Promise<string>((resolve) => {
    for (const sig of ["SIGINT", "SIGTERM"] as const) {
      const h = () => {
        dispose();
        resolve(sig);
      };
      handlers.push([sig, h]);
      Deno.addSignalListener(sig, h);
    }
  });
  return { received, dispose };
}
