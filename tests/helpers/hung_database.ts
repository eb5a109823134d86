/**
 * A loopback HTTP "database" that accepts every connection, reads it, and never answers: what a
 * database that hangs looks like to the telemetry writer's real client (a real socket, no fake).
 */
export function hungDatabase() {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns: Deno.Conn[] = [];
  const reads: Promise<void>[] = [];
  let received = "";
  const decoder = new TextDecoder();
  const accepting = (async () => {
    for await (const conn of listener) {
      conns.push(conn);
      reads.push((async () => {
        const buf = new Uint8Array(64 * 1024);
        try {
          for (;;) {
            const n = await conn.read(buf);
            if (n === null) return;
            received += decoder.decode(buf.subarray(0, n), { stream: true });
          }
        } catch {
          // closed by the test or the client
        }
      })());
    }
  })();
  return {
    url: `http://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    /** Everything the client sent so far (requests included). */
    received: () => received,
    /** Closes the listener and every connection, and waits for their reads to end. */
    async close() {
      listener.close();
      for (const c of conns) {
        try {
          c.close();
        } catch {
          // closed by the client already
        }
      }
      await accepting.catch(() => {});
      await Promise.all(reads);
    },
  };
}
