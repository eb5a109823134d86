/**
 * Loopback TCP ports for the servers tests start as child processes.
 *
 * "Pick a free port, close it, hand the number to a child" races: between the close and the
 * child's bind, anything on the machine can take the port (another test's server, or the local
 * end of any outgoing connection, which comes from the same ephemeral range). The child then
 * fails to start, or worse, the test talks to a stranger's server on that port. So:
 *  - a child that can bind port 0 is given 0 and its port read back from /proc
 *    ({@link waitForListeningPort}) — VictoriaMetrics does this;
 *  - a child that must be told its port up front (the runtime: `http.port` is 1..65535) is
 *    started with {@link startOnFreePort}, which waits until that very process listens on the
 *    port and starts it again on another port when a stranger took it.
 * Linux only (/proc), like the process tests that use it.
 */

/** Attempts {@link startOnFreePort} makes when a stranger takes the port before the child binds. */
export const PORT_ATTEMPTS = 3;
/** How long {@link startOnFreePort} and {@link waitForListeningPort} wait for a child to listen. */
export const LISTEN_TIMEOUT_MS = 30_000;

/**
 * A loopback TCP port that was free a moment ago. Racy when handed to a server (see the module
 * comment); fine as a port nothing should listen on (a refused-connection target).
 */
export function freePort(): number {
  const l = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const port = (l.addr as Deno.NetAddr).port;
  l.close();
  return port;
}

/** Whether some process listens on the loopback TCP port now. */
export function portTaken(port: number): boolean {
  try {
    Deno.listen({ hostname: "127.0.0.1", port }).close();
    return false;
  } catch (err) {
    if (err instanceof Deno.errors.AddrInUse) return true;
    throw err;
  }
}

/**
 * TCP ports the process `pid` listens on: its socket descriptors (/proc/PID/fd) matched against
 * the LISTEN entries of /proc/PID/net/tcp and tcp6. Empty when the process is gone.
 */
export function listeningPorts(pid: number): number[] {
  const inodes = new Set<string>();
  try {
    for (const fd of Deno.readDirSync(`/proc/${pid}/fd`)) {
      try {
        const m = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/${pid}/fd/${fd.name}`));
        if (m) inodes.add(m[1]!);
      } catch {
        // descriptor closed while listing
      }
    }
  } catch {
    return []; // process ended
  }
  const ports = new Set<number>();
  for (const table of ["tcp", "tcp6"]) {
    let text = "";
    try {
      text = Deno.readTextFileSync(`/proc/${pid}/net/${table}`);
    } catch {
      continue;
    }
    // sl local_address rem_address st tx_queue:rx_queue tr:tm->when retrnsmt uid timeout inode
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10 || f[3] !== "0A" || !inodes.has(f[9]!)) continue; // 0A = LISTEN
      ports.add(parseInt((f[1]!.split(":")[1])!, 16));
    }
  }
  return [...ports].sort((a, b) => a - b);
}

/** A started child: its pid and a promise that settles when it ends. */
export interface WatchedChild {
  readonly pid: number;
  readonly ended: Promise<unknown>;
  /**
   * Ports it must listen on besides the one waited for (a broker's second listener, picked with
   * {@link freePort} too): it counts as listening only on all of them, and a stranger on any of
   * them is the free-port race.
   */
  readonly alsoPorts?: readonly number[];
}

/** Why a child did not come to listen on its port. */
export class NotListeningError extends Error {
  /** The child ended while another process held its port: the free-port race, worth a retry. */
  readonly portTakenByStranger: boolean;
  constructor(message: string, portTakenByStranger: boolean) {
    super(message);
    this.name = "NotListeningError";
    this.portTakenByStranger = portTakenByStranger;
  }
}

/**
 * Waits until `child` itself listens on a TCP port (`port` when given, else any) and returns
 * that port. Throws a {@link NotListeningError} when the child ends first or after `timeoutMs`.
 */
export async function waitForListeningPort(
  child: WatchedChild,
  o: { port?: number | undefined; timeoutMs?: number | undefined } = {},
): Promise<number> {
  const timeoutMs = o.timeoutMs ?? LISTEN_TIMEOUT_MS;
  let ended = false;
  child.ended.then(() => (ended = true), () => (ended = true));
  const deadline = performance.now() + timeoutMs;
  const also = child.alsoPorts ?? [];
  const on = (o.port === undefined ? "a port" : `port ${o.port}`) +
    also.map((a) => ` and port ${a}`).join("");
  // Seen listening at the look before: a port is taken as listened on only when two looks in a
  // row find it. The runtime binds its port once at start-up and releases it at once (a probe,
  // src/host/serve.ts checkServe) long before it serves: one look that hit that moment, on a
  // loaded machine, made a test's first request meet a closed port (connection refused or reset).
  let seen: number | undefined;
  for (;;) {
    const wasEnded = ended; // read before looking, so a bind just before the end still counts
    const ports = listeningPorts(child.pid);
    const found = o.port === undefined
      ? ports[0]
      : ports.find((p) => p === o.port && also.every((a) => ports.includes(a)));
    if (found !== undefined && found === seen) return found;
    seen = found;
    if (found !== undefined) {
      await new Promise((r) => setTimeout(r, 20));
      continue;
    }
    if (wasEnded) {
      const stranger = o.port !== undefined && [o.port, ...also].some(portTaken);
      throw new NotListeningError(
        `process ${child.pid} ended before listening on ${on}` +
          (stranger ? " (another process holds it)" : ""),
        stranger,
      );
    }
    if (performance.now() > deadline) {
      throw new NotListeningError(
        `process ${child.pid} did not listen on ${on} within ${timeoutMs} ms`,
        false,
      );
    }
    await new Promise((r) => setTimeout(r, 20));
  }
}

/**
 * Starts a server child that must be told its port: `start(port)` on a free port, then waits
 * until that child listens on it. When the child ended because a stranger took the port in
 * between, `discard` cleans up after it and the child is started again on another port, up to
 * {@link PORT_ATTEMPTS} times; any other failure is thrown after `discard`. A child with more
 * ports to bind names them in `watch` ({@link WatchedChild.alsoPorts}), picked again by `start`.
 */
export async function startOnFreePort<T>(
  start: (port: number) => T | Promise<T>,
  watch: (started: T) => WatchedChild,
  discard: (started: T) => Promise<void>,
  o: { timeoutMs?: number | undefined } = {},
): Promise<{ port: number; started: T }> {
  for (let attempt = 1;; attempt++) {
    const port = freePort();
    const started = await start(port);
    try {
      await waitForListeningPort(watch(started), { port, timeoutMs: o.timeoutMs });
      return { port, started };
    } catch (err) {
      await discard(started);
      const race = err instanceof NotListeningError && err.portTakenByStranger;
      if (!race || attempt >= PORT_ATTEMPTS) throw err;
    }
  }
}
