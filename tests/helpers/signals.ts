/**
 * Signals for a service a test runs in its own process (runService's `onSignal`): sent to the
 * service's listeners, not to the process. `deno test --parallel` runs test files as workers of
 * one process, so a real signal to it (a kill of Deno.pid) reaches every listener of every
 * file running meanwhile: another file's service, Playwright's browser launcher (which closes its
 * browsers on SIGTERM). Tests that need the real signal send it to a runtime child process.
 */
import type { SignalSource } from "../../src/app/process.ts";

/** A stand for the process's signals: `onSignal` to hand the service, `send` to deliver one. */
export interface SignalStand {
  readonly onSignal: SignalSource;
  /** Delivers `signal` to its listeners in a later task, as the host's signal stream does. */
  send(signal: Deno.Signal): void;
}

/** A fresh {@link SignalStand}. */
export function signalStand(): SignalStand {
  const listeners = new Map<Deno.Signal, Set<() => void>>();
  return {
    onSignal(signal, listener) {
      const set = listeners.get(signal) ?? new Set();
      listeners.set(signal, set);
      // A wrapper each: the same listener added twice is two listeners (Deno's own are too).
      const one = () => listener();
      set.add(one);
      return () => set.delete(one);
    },
    send(signal) {
      setTimeout(() => {
        for (const listener of [...(listeners.get(signal) ?? [])]) listener();
      }, 0);
    },
  };
}
