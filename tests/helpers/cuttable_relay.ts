/**
 * A TCP relay to a broker's port that a test can cut: every connection through it closed at once,
 * without an MQTT DISCONNECT (the broker sees its client's socket die), and new ones closed until
 * `restore` (tests/sparkplug/fleet_reconnect_death_test.ts, bdseq_test.ts). What the broker
 * sends its clients can be held back and let go as one write (`holdReplies`, `releaseReplies`):
 * packets the client then gets in one read (death_ack_command_broker_test.ts).
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
  /** The broker's bytes held back (holdReplies), in order; null while they pass. */
  let held: Uint8Array[] | null = null;
  /** Holds once a chunk passed that `after` matches (holdReplies). */
  let holdAfter: ((chunk: Uint8Array) => boolean) | null = null;
  const writers = new Map<Deno.Conn, WritableStreamDefaultWriter<Uint8Array>>();
  /** The broker's bytes to its client: passed, or held while `held`. */
  const replies = async (up: Deno.Conn, down: Deno.Conn) => {
    const writer = down.writable.getWriter();
    writers.set(down, writer);
    for await (const chunk of up.readable) {
      if (held !== null) {
        held.push(chunk);
        continue;
      }
      await writer.write(chunk);
      if (holdAfter?.(chunk)) {
        holdAfter = null;
        held = [];
      }
    }
    // The broker closed it: so does the client's side (as a pipe would).
    writers.delete(down);
    await writer.close();
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
      pipes.push(replies(up, down).catch(() => {}));
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
    /**
     * From the broker's next chunk that `after` matches on (that one passes), what it sends its
     * clients is held back until releaseReplies (one client through the relay).
     */
    holdReplies(after: (chunk: Uint8Array) => boolean) {
      holdAfter = after;
    },
    /** The bytes held back now (holdReplies), in order. */
    heldReplies(): Uint8Array {
      const chunks = held ?? [];
      const all = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
      let at = 0;
      for (const c of chunks) all.set(c, (at += c.length) - c.length);
      return all;
    },
    /** The bytes held back, as they came: the client gets them in one write; then they pass. */
    async releaseReplies() {
      const all = this.heldReplies();
      held = null;
      for (const w of writers.values()) await w.write(all).catch(() => {});
    },
    async dispose() {
      listener.close();
      await accepting;
      for (const c of [...conns]) close(c);
      await Promise.all(pipes);
    },
  };
}
