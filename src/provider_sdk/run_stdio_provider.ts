import type { Logger } from "../common/mod.ts";
import { type ProviderHandler, serveProvider } from "./serve.ts";

/** Options of runStdioProvider. */
export interface RunStdioProviderOptions {
  /** Where the loop logs (stderr: stdout carries the protocol). */
  readonly logger?: Logger;
  /** See ProviderIo.leaseMs: 0 or absent = no lease. */
  readonly leaseMs?: number;
}

/** Signals that stop a stdio provider: safe state first, then exit. */
const STOP_SIGNALS = ["SIGTERM", "SIGINT"] as const;

/**
 * Serves `handler` on the process's stdin/stdout and exits the process with the loop's exit code
 * (0 on clean stdin EOF, 2 framing, 3 unparseable request, 4 serialise, 5 write failure, 6 safe
 * state failed on the way out). SIGTERM and SIGINT apply the handler's safe state and exit 0.
 */
export async function runStdioProvider(
  handler: ProviderHandler,
  options: RunStdioProviderOptions = {},
): Promise<never> {
  const stop = new AbortController();
  const listeners = STOP_SIGNALS.map((sig) => {
    const onSignal = () => {
      options.logger?.info(`${sig} received, stopping`);
      stop.abort(sig);
    };
    Deno.addSignalListener(sig, onSignal);
    return () => Deno.removeSignalListener(sig, onSignal);
  });
  const code = await serveProvider(handler, {
    readable: Deno.stdin.readable,
    writable: Deno.stdout.writable,
    stop: stop.signal,
    ...(options.logger === undefined ? {} : { logger: options.logger }),
    ...(options.leaseMs === undefined ? {} : { leaseMs: options.leaseMs }),
  });
  for (const remove of listeners) remove();
  Deno.exit(code);
}
