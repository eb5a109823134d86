/** Raw TCP helpers for the connection-layer tests: what a careless or hostile client does. */

const enc = new TextEncoder();
const dec = new TextDecoder();

/** Connects to 127.0.0.1:port. */
export function connect(port: number): Promise<Deno.TcpConn> {
  return Deno.connect({ hostname: "127.0.0.1", port });
}

/** Writes the whole string. */
export async function send(conn: Deno.Conn, text: string | Uint8Array): Promise<void> {
  const bytes = typeof text === "string" ? enc.encode(text) : text;
  let off = 0;
  while (off < bytes.length) off += await conn.write(bytes.subarray(off));
}

/** A keep-alive GET request. */
export function getRequest(path: string): string {
  return `GET ${path} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
}

/**
 * Reads one HTTP/1.1 response with a content-length body; null when the server closed first.
 * Throws after `timeoutMs` (closing `conn`), so a server that never answers cannot hang a test.
 */
export async function readResponse(
  conn: Deno.Conn,
  timeoutMs = 10_000,
): Promise<{ status: number; headers: string; body: string } | null> {
  let expired = false;
  const timer = setTimeout(() => {
    expired = true;
    try {
      conn.close();
    } catch { /* already closed */ }
  }, timeoutMs);
  try {
    return await readOne(conn);
  } catch (err) {
    if (expired) throw new Error(`no response within ${timeoutMs} ms`);
    throw err;
  } finally {
    clearTimeout(timer);
  }
}

async function readOne(
  conn: Deno.Conn,
): Promise<{ status: number; headers: string; body: string } | null> {
  let buf = new Uint8Array(0);
  const chunk = new Uint8Array(16 * 1024);
  for (;;) {
    const text = dec.decode(buf);
    const end = text.indexOf("\r\n\r\n");
    if (end >= 0) {
      const head = text.slice(0, end);
      const len = Number(/content-length:\s*(\d+)/i.exec(head)?.[1] ?? "0");
      const bodyBytes = buf.length - enc.encode(text.slice(0, end + 4)).length;
      if (bodyBytes >= len) {
        return {
          status: Number(head.split(" ")[1]),
          headers: head,
          body: text.slice(end + 4),
        };
      }
    }
    const n = await conn.read(chunk);
    if (n === null) return null;
    const next = new Uint8Array(buf.length + n);
    next.set(buf);
    next.set(chunk.subarray(0, n), buf.length);
    buf = next;
  }
}

/**
 * Waits until the server closes `conn` (EOF or reset), reading and discarding what it sends;
 * resolves with the ms since `since` (performance.now(); default: the call), or null when it is
 * still open after `limitMs`. Closes `conn`. A test that asserts the close came no sooner than a
 * server timeout passes `since` taken before what starts that timeout (the connect, the request):
 * the test process can run late after it, on a loaded machine, and the ms waited from the call
 * are then short of the server's.
 */
export async function closedWithin(
  conn: Deno.Conn,
  limitMs: number,
  since = performance.now(),
): Promise<number | null> {
  const t0 = since;
  const buf = new Uint8Array(4096);
  const reading = (async () => {
    try {
      while ((await conn.read(buf)) !== null) { /* discard */ }
    } catch {
      // reset by the server, or closed by us below
    }
    return performance.now() - t0;
  })();
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<null>((r) => (timer = setTimeout(() => r(null), limitMs)));
  const result = await Promise.race([reading, timeout]);
  clearTimeout(timer);
  try {
    conn.close();
  } catch {
    // already closed
  }
  await reading;
  return result;
}

/** Resolves after `ms`. */
export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/**
 * Sockets this process holds open on local port `port` other than the listening one: the server
 * side of the connections it accepted there. Counted from /proc/self/fd and /proc/net/tcp{,6}, so
 * that what other tests running in this process open (test files run side by side in one
 * process) does not count.
 */
export function acceptedSockets(port: number): number {
  const inodes = new Set<string>();
  for (const e of Deno.readDirSync("/proc/self/fd")) {
    try {
      const m = /^socket:\[(\d+)\]$/.exec(Deno.readLinkSync(`/proc/self/fd/${e.name}`));
      if (m) inodes.add(m[1]!);
    } catch {
      // closed meanwhile
    }
  }
  let n = 0;
  for (const table of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text = "";
    try {
      text = Deno.readTextFileSync(table);
    } catch {
      continue;
    }
    for (const line of text.split("\n").slice(1)) {
      const f = line.trim().split(/\s+/);
      if (f.length < 10) continue;
      const localPort = parseInt(f[1]!.split(":")[1]!, 16);
      const listening = f[3] === "0A";
      if (localPort === port && !listening && inodes.has(f[9]!)) n++;
    }
  }
  return n;
}
