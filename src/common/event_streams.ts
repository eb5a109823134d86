/**
 * The bound on concurrent event streams (SSE), shared by the HTTP layer that enforces it and the
 * configuration check that warns when http.max_connections leaves requests too few connections.
 */

/** Concurrent event streams allowed (as anolis: the 33rd gets 503). */
export const MAX_SSE_CLIENTS = 32;

/**
 * The event streams allowed on a server holding at most `maxConnections` connections: an open
 * stream holds its connection and is never idle (the connection layer never closes it for a
 * newcomer), so streams get at most half of them and the rest stays for requests, an e-stop
 * among them. MAX_SSE_CLIENTS from 64 connections up (the default 128 included); at least 1.
 */
export function maxStreamsFor(maxConnections: number): number {
  return Math.max(1, Math.min(MAX_SSE_CLIENTS, Math.floor(maxConnections / 2)));
}

/**
 * What `maxConnections` leaves requests once event streams hold their share (maxStreamsFor), when
 * that is not above `threadPoolSize` (then, with every one of them holding a request in flight, a
 * new one -- an e-stop too -- is refused); null when it is. One rule for the configured bound
 * (config warning) and the bound in force (lowered to fit the open-file limit: HttpApi).
 */
export function requestConnectionsShort(
  maxConnections: number,
  threadPoolSize: number,
): { readonly left: number; readonly streams: number; readonly text: string } | null {
  const streams = maxStreamsFor(maxConnections);
  const left = maxConnections - streams;
  if (left > threadPoolSize) return null;
  return {
    left,
    streams,
    text: `leaves ${left} connection(s) for requests once event streams hold theirs (${streams}, ` +
      `at most half), not above thread_pool_size (${threadPoolSize}): when every one has a ` +
      "request in flight, a new one (an e-stop too) is refused",
  };
}
