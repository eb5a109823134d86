/** Loopback addresses, shared by the bind safety gate and (later) client checks. */

/** Loopback: 127.0.0.0/8, ::1 and localhost (any other address is reachable from the network). */
export function isLoopback(bind: string): boolean {
  const host = bind.trim().toLowerCase().replace(/^\[(.*)\]$/, "$1");
  if (host === "localhost" || host === "::1" || host === "0:0:0:0:0:0:0:1") return true;
  const v4 = host.replace(/^::ffff:/, "");
  const m = /^(\d{1,3})\.(\d{1,3})\.(\d{1,3})\.(\d{1,3})$/.exec(v4);
  return m !== null && m[1] === "127" && m.slice(2).every((o) => Number(o) <= 255);
}
