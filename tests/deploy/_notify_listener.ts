/**
 * Test helper (run with --unstable-net): a fake systemd NOTIFY_SOCKET. Binds a unix datagram
 * socket at the path given as the first argument, prints `listening`, then one JSON string per
 * received datagram on stdout until it is killed. Receiving without a control buffer makes the
 * kernel close any passed fd (systemd-notify's BARRIER=1 pipe), which answers the barrier.
 */
const path = Deno.args[0];
if (!path) {
  console.error("usage: _notify_listener.ts SOCKET_PATH");
  Deno.exit(2);
}
const conn = Deno.listenDatagram({ transport: "unixpacket", path });
const out = Deno.stdout.writable.getWriter();
const encoder = new TextEncoder();
const decoder = new TextDecoder();
await out.write(encoder.encode("listening\n"));
for await (const [data] of conn) {
  await out.write(encoder.encode(JSON.stringify(decoder.decode(data)) + "\n"));
}
