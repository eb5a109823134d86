/**
 * A bare HTTP/2 client over TLS (ALPN h2) that writes its own frames, for what node:http2 cannot
 * do: open a stream after the server's graceful GOAWAY (last stream id 2^31-1) and before its
 * PING is answered, the window in which a server still accepts new streams. It reads every frame;
 * it grants the connection window as data arrives but never a stream's, so a stream with a long
 * answer stalls as with a client that stopped reading.
 */

const FRAME_DATA = 0;
const FRAME_HEADERS = 1;
const FRAME_RST_STREAM = 3;
const FRAME_SETTINGS = 4;
const FRAME_PING = 6;
const FRAME_GOAWAY = 7;
const FRAME_WINDOW_UPDATE = 8;
const FLAG_END_STREAM = 0x1;
const FLAG_ACK = 0x1;
const FLAG_END_HEADERS = 0x4;

function frame(type: number, flags: number, stream: number, payload: Uint8Array): Uint8Array {
  const out = new Uint8Array(9 + payload.length);
  const v = new DataView(out.buffer);
  v.setUint32(0, payload.length << 8); // 24-bit length, then the type byte
  out[3] = type;
  out[4] = flags;
  v.setUint32(5, stream & 0x7fffffff);
  out.set(payload, 9);
  return out;
}

/** An HPACK block of literal fields without indexing (names and values under 127 bytes). */
function headerBlock(fields: [string, string][]): Uint8Array {
  const bytes: number[] = [];
  const enc = new TextEncoder();
  for (const [name, value] of fields) {
    const n = enc.encode(name);
    const val = enc.encode(value);
    if (n.length > 126 || val.length > 126) throw new RangeError(`header too long: ${name}`);
    bytes.push(0x00, n.length, ...n, val.length, ...val);
  }
  return new Uint8Array(bytes);
}

function u32(n: number): Uint8Array {
  const b = new Uint8Array(4);
  new DataView(b.buffer).setUint32(0, n);
  return b;
}

/** One raw HTTP/2 connection and what it has received so far. */
export class RawH2Client {
  readonly #conn: Deno.TlsConn;
  /** Streams whose response HEADERS arrived. */
  readonly headers = new Set<number>();
  /** Streams ended by the server (END_STREAM or RST_STREAM). */
  readonly ended = new Set<number>();
  /** DATA bytes received per stream. */
  readonly data = new Map<number, number>();
  /** GOAWAY frames received: their last stream ids. */
  readonly goaways: number[] = [];
  /** PING payloads received and not answered yet. */
  readonly pings: Uint8Array[] = [];
  /** The connection has ended (end of file or a failed read). */
  closed = false;
  readonly done: Promise<void>;

  private constructor(conn: Deno.TlsConn) {
    this.#conn = conn;
    this.done = this.#readLoop();
  }

  static async connect(port: number, caCert: string): Promise<RawH2Client> {
    const conn = await Deno.connectTls({
      hostname: "localhost",
      port,
      caCerts: [caCert],
      alpnProtocols: ["h2"],
    });
    const hs = await conn.handshake();
    if (hs.alpnProtocol !== "h2") {
      conn.close();
      throw new Error(`ALPN: the server chose ${hs.alpnProtocol}, not h2`);
    }
    const client = new RawH2Client(conn);
    await client.#write(new TextEncoder().encode("PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n"));
    await client.#write(frame(FRAME_SETTINGS, 0, 0, new Uint8Array(0)));
    return client;
  }

  /** Opens stream `id` with a request without body. */
  request(id: number, method: string, path: string): Promise<void> {
    const block = headerBlock([
      [":method", method],
      [":scheme", "https"],
      [":path", path],
      [":authority", "localhost"],
    ]);
    return this.#write(frame(FRAME_HEADERS, FLAG_END_HEADERS | FLAG_END_STREAM, id, block));
  }

  /** Answers the PINGs received so far (as any client does). */
  async ackPings(): Promise<void> {
    for (const p of this.pings.splice(0)) await this.#write(frame(FRAME_PING, FLAG_ACK, 0, p));
  }

  close(): void {
    try {
      this.#conn.close();
    } catch {
      // closed by the server
    }
  }

  async #write(bytes: Uint8Array): Promise<void> {
    let off = 0;
    while (off < bytes.length) off += await this.#conn.write(bytes.subarray(off));
  }

  async #readLoop(): Promise<void> {
    let buf = new Uint8Array(0);
    const chunk = new Uint8Array(64 * 1024);
    try {
      for (;;) {
        const n = await this.#conn.read(chunk);
        if (n === null) break;
        const next = new Uint8Array(buf.length + n);
        next.set(buf);
        next.set(chunk.subarray(0, n), buf.length);
        buf = next;
        while (buf.length >= 9) {
          const head = new DataView(buf.buffer, buf.byteOffset, 9);
          const len = head.getUint32(0) >>> 8; // 24-bit length
          if (buf.length < 9 + len) break;
          const type = head.getUint8(3);
          const flags = head.getUint8(4);
          const stream = head.getUint32(5) & 0x7fffffff;
          const payload = buf.slice(9, 9 + len);
          buf = buf.slice(9 + len);
          await this.#onFrame(type, flags, stream, payload);
        }
      }
    } catch {
      // the connection was cut
    }
    this.closed = true;
  }

  async #onFrame(type: number, flags: number, stream: number, payload: Uint8Array) {
    switch (type) {
      case FRAME_SETTINGS:
        if ((flags & FLAG_ACK) === 0) {
          await this.#write(frame(FRAME_SETTINGS, FLAG_ACK, 0, new Uint8Array(0)));
        }
        break;
      case FRAME_PING:
        if ((flags & FLAG_ACK) === 0) this.pings.push(payload);
        break;
      case FRAME_GOAWAY:
        this.goaways.push(new DataView(payload.buffer).getUint32(0) & 0x7fffffff);
        break;
      case FRAME_HEADERS:
        this.headers.add(stream);
        if (flags & FLAG_END_STREAM) this.ended.add(stream);
        break;
      case FRAME_RST_STREAM:
        this.ended.add(stream);
        break;
      case FRAME_DATA:
        this.data.set(stream, (this.data.get(stream) ?? 0) + payload.length);
        // The connection's window only: a stream's own window is never granted (not read).
        if (payload.length > 0) {
          await this.#write(frame(FRAME_WINDOW_UPDATE, 0, 0, u32(payload.length)));
        }
        if (flags & FLAG_END_STREAM) this.ended.add(stream);
        break;
    }
  }
}
