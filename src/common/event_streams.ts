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
