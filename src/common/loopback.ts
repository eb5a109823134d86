/**
 * Loopback hosts, decided once for the configuration check of http.bind, the bind gate at start
 * (host/serve.ts), the loopback exemption of authentication (http/auth.ts) and the request
 * policy (http/request_policy.ts): they must never disagree about an address.
 */

/**
 * Whether a host (a bind address, a client address, a Host header's name) is loopback:
 * `localhost`, 127.0.0.0/8, `::1` in any spelling of it (`0:0:0:0:0:0:0:1`, `[::1]`), and
 * IPv4-mapped loopback (`::ffff:127.0.0.1`). Anything else is reachable from the network.
 */
export function isLoopbackHost(host: string): boolean {
  const h = host.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (h === "localhost" || h === "::1" || h === "0:0:0:0:0:0:0:1") return true;
  const v4 = h.replace(/^(?:0:0:0:0:0:|::)ffff:/, "");
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(v4);
  return m !== null && m[1] === "127" && m.slice(2).every((o) => Number(o) <= 255);
}
