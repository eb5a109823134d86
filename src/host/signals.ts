/**
 * The process's signals and its exit, for the composition root (app/process.ts: the service's
 * stop signals and SIGHUP; main.ts: the fleet view's Ctrl-C and SIGTERM, a crash's exit).
 */

/** Calls `listener` on every `signal` until the returned function is called. */
export function onSignal(signal: Deno.Signal, listener: () => void): () => void {
  Deno.addSignalListener(signal, listener);
  return () => Deno.removeSignalListener(signal, listener);
}

/** Ends the process now with `code`: nothing queued runs (stderr written so far is out). */
export function exitProcess(code: number): never {
  Deno.exit(code);
}
