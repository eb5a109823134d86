/**
 * A TCP relay to a broker's port that a test can cut: every connection through it closed at once,
 * without an MQTT DISCONNECT (the broker sees its client's socket die), and new ones closed until
 * `restore` (tests/sparkplug/fleet_reconnect_death_test.ts, bdseq_test.ts).
 */
export function cuttableRelay(brokerPort: number) {
  const listener = Deno.listen({ hostname: "127.0.0.1", port: 0 });
  const conns = new Set<Deno.Conn>();
  const pipes: Promise<unknown>[] = [];
  let open = true;
  const close = (c: Deno.Conn) => {
    conns.delete(c);
    try {
      c.close();
    } catch { /* closed by its pipe */ }
  };
  const accepting = (async () => {
    for await (const down of listener) {
      if (!open) {
        close(down);
        continue;
      }
      const up = await Deno.connect({ hostname: "127.0.0.1", port: brokerPort });
      conns.add(down).add(up);
      pipes.push(down.readable.pipeTo(up.writable).catch(() => {}));
      pipes.push(up.readable.pipeTo(down.writable).catch(() => {}));
    }
  })().catch(() => {});
  return {
    url: `mqtt://127.0.0.1:${(listener.addr as Deno.NetAddr).port}`,
    cut() {
      open = false;
      for (const c of [...conns]) close(c);
    },
    restore() {
      open = true;
    },
    async dispose() {
      listener.close();
      await accepting;
      for (const c of [...conns]) close(c);
      await Promise.all(pipes);
    },
  };
}
