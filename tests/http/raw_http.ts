/**
 * HTTP/1.1 over a plain socket with hand-written request lines, so tests send exactly the `Host`,
 * `Origin` and `Content-Type` a browser (or an attacker's page) would — `fetch` would fill in or
 * forbid some of them.
 */

export interface RawResponse {
  readonly status: number;
  /** Lower-case names. */
  readonly headers: ReadonlyMap<string, string>;
  /** The body as sent (chunked encoding removed). */
  readonly body: string;
  // deno-lint-ignore no-explicit-any
  readonly json: any;
}

export interface RawRequest {
  readonly method: string;
  /** Request target as written on the request line (origin-form or absolute-form). */
  readonly target: string;
  /** Header lines in order; `Connection: close` is added. No Host unless given here. */
  readonly headers?: ReadonlyArray<readonly [string, string]>;
  /** Sent as is after the headers (add Content-Length or Transfer-Encoding yourself). */
  readonly body?: string;
  /** HTTP version on the request line (default HTTP/1.1). */
  readonly version?: string;
}

import { assertApiAnswer } from "../helpers/openapi_check.ts";

const encoder = new TextEncoder();
const decoder = new TextDecoder();

/** Sends one request on a fresh connection and reads the answer until the server closes. */
export async function rawRequest(port: number, r: RawRequest): Promise<RawResponse> {
  const lines = [`${r.method} ${r.target} ${r.version ?? "HTTP/1.1"}`];
  for (const [k, v] of r.headers ?? []) lines.push(`${k}: ${v}`);
  lines.push("Connection: close");
  const text = lines.join("\r\n") + "\r\n\r\n" + (r.body ?? "");
  const conn = await Deno.connect({ hostname: "127.0.0.1", port });
  try {
    await conn.write(encoder.encode(text));
    const chunks: Uint8Array[] = [];
    const buf = new Uint8Array(16 * 1024);
    for (;;) {
      const n = await conn.read(buf);
      if (n === null) break;
      chunks.push(buf.slice(0, n));
    }
    const res = parseResponse(decoder.decode(concat(chunks)), r.method === "HEAD");
    // Checked against GET /v0/openapi.json's document like every other answer.
    assertApiAnswer({
      method: r.method,
      path: r.target.startsWith("/") ? r.target : new URL(r.target).pathname,
      status: res.status,
      contentType: res.headers.get("content-type") ?? null,
      body: res.body,
    });
    return res;
  } finally {
    try {
      conn.close();
    } catch {
      // already closed by the server
    }
  }
}

/** A request with Host (and Content-Length for a body) filled in. */
export function browserLike(
  port: number,
  method: string,
  path: string,
  o: {
    host?: string | undefined;
    origin?: string | undefined;
    contentType?: string | undefined;
    body?: string | undefined;
  } = {},
): RawRequest {
  const headers: Array<[string, string]> = [["Host", o.host ?? `127.0.0.1:${port}`]];
  if (o.origin !== undefined) headers.push(["Origin", o.origin]);
  if (o.contentType !== undefined) headers.push(["Content-Type", o.contentType]);
  if (o.body !== undefined) headers.push(["Content-Length", String(encoder.encode(o.body).length)]);
  return { method, target: path, headers, ...(o.body === undefined ? {} : { body: o.body }) };
}

function parseResponse(text: string, head: boolean): RawResponse {
  const end = text.indexOf("\r\n\r\n");
  if (end < 0) throw new Error(`incomplete response: ${JSON.stringify(text.slice(0, 200))}`);
  const [statusLine, ...headerLines] = text.slice(0, end).split("\r\n");
  const status = Number(statusLine!.split(" ")[1]);
  const headers = new Map<string, string>();
  for (const l of headerLines) {
    const i = l.indexOf(":");
    headers.set(l.slice(0, i).trim().toLowerCase(), l.slice(i + 1).trim());
  }
  let body = text.slice(end + 4);
  if (!head && headers.get("transfer-encoding") === "chunked") body = unchunk(body);
  let json: unknown = undefined;
  if (body !== "" && headers.get("content-type")?.startsWith("application/json")) {
    json = JSON.parse(body);
  }
  return { status, headers, body, json };
}

function unchunk(s: string): string {
  let out = "";
  let at = 0;
  for (;;) {
    const eol = s.indexOf("\r\n", at);
    const size = parseInt(s.slice(at, eol), 16);
    if (!size) return out;
    out += s.slice(eol + 2, eol + 2 + size);
    at = eol + 2 + size + 2;
  }
}

function concat(chunks: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(chunks.reduce((n, c) => n + c.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}
