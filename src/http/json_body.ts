/**
 * Request bodies: bounded in size and in the time a client may take to send them, then parsed as
 * JSON. Every failure is a 400 INVALID_ARGUMENT naming the problem.
 */
import {
  type Clock,
  concatBytes,
  integerWrittenExactly,
  invalidArgument,
  quoteProviderText,
  RuntimeError,
} from "../common/mod.ts";

/** Largest accepted request body (64 KiB): every v0 body is a few hundred bytes. */
export const MAX_BODY_BYTES = 64 * 1024;
/** A client that has not sent its whole body after this long is answered 400 (docs/http-api.md). */
export const BODY_READ_TIMEOUT_MS = 5000;
/**
 * How long the e-stop waits for its optional body (the reason) before it triggers without it;
 * shorter than BODY_READ_TIMEOUT_MS because a slow client must not delay the answer (the latch
 * itself never waits for the body).
 */
export const ESTOP_REASON_READ_TIMEOUT_MS = 1000;
/**
 * Deepest nesting of arrays and objects in a request body (the body's own object is level 1).
 * Checked on the text before it is parsed, so nothing deeper reaches a handler, the run journal
 * or telemetry.
 */
export const MAX_JSON_DEPTH = 32;

export interface BodyLimits {
  readonly maxBytes: number;
  readonly timeoutMs: number;
  /** The timer of `timeoutMs` (HttpApi passes the runtime's clock). */
  readonly clock: Pick<Clock, "setTimer" | "clearTimer">;
}

/**
 * `limits` with its read time cut to ESTOP_REASON_READ_TIMEOUT_MS: the bound of every body read
 * on a priority route (the e-stop's reason, the first bytes the content-type check reads of the
 * clear's HTTP/2 body), so none holds a priority slot, shared with the e-stop, longer.
 */
export function priorityBodyLimits(limits: BodyLimits): BodyLimits {
  return { ...limits, timeoutMs: Math.min(limits.timeoutMs, ESTOP_REASON_READ_TIMEOUT_MS) };
}

/**
 * What a request says of its body: `none` (no body to read), `declared` (a non-zero
 * Content-Length or any Transfer-Encoding) or `unknown` (it may carry one it does not declare).
 *
 * None: `Content-Length: 0` or no body at all (a Request built in-process). Deno.serve gives
 * every POST a body stream (of 0 bytes when none was sent), so `req.body === null` alone is never
 * true there, and it does not say which HTTP version a request came in on. An HTTP/1.1 request
 * with neither Content-Length nor Transfer-Encoding (`curl -X POST` without `-d`) has a body of
 * length zero (RFC 9112 section 6.3), but an HTTP/2 request without content-length may still carry
 * DATA frames (RFC 9113 section 8.1), and may write a literal `host` header as an HTTP/1.1 one
 * does (section 8.3.1): both are `unknown`, and only reading tells (an HTTP/1.1 one's body ends
 * at once).
 */
export function bodyPresence(req: Request): "none" | "declared" | "unknown" {
  // Transfer-Encoding overrides Content-Length (RFC 9112 section 6.3).
  if (req.headers.has("transfer-encoding")) return "declared";
  // Header values come trimmed (Fetch normalizes them).
  const length = req.headers.get("content-length");
  if (length !== null) return /^0+$/.test(length) ? "none" : "declared";
  return req.body === null ? "none" : "unknown";
}

/**
 * Whether the e-stop takes a request as one without a body (its reason is then not waited for,
 * nor shown as arriving): bodyPresence `none`, or `unknown` with a Host header, which an HTTP/1.1
 * request carries (RFC 9112 section 3.2; it then has none). An HTTP/2 request that writes a
 * literal `host` header loses its reason, never its stop. Every other body is read
 * (readBodyBytes).
 */
export function declaresNoBody(req: Request): boolean {
  const presence = bodyPresence(req);
  return presence === "none" || (presence === "unknown" && req.headers.has("host"));
}

/** Reads the raw body; throws INVALID_ARGUMENT when it is over the limit or arrives too slowly. */
export async function readBodyBytes(req: Request, limits: BodyLimits): Promise<Uint8Array> {
  const declared = req.headers.get("content-length");
  if (declared !== null && Number(declared) > limits.maxBytes) {
    await req.body?.cancel().catch(() => {});
    throw tooLarge(limits.maxBytes);
  }
  if (bodyPresence(req) === "none") {
    // Nothing to wait for: no read timer, and the empty stream is released, not left unread.
    await req.body?.cancel().catch(() => {});
    return new Uint8Array(0);
  }
  return concatBytes(await readChunks(req.body!, limits, Infinity));
}

/**
 * Whether a body that is not declared (bodyPresence `unknown`: HTTP/2 without content-length)
 * has any bytes: read, under the limits as readBodyBytes, up to its first bytes or its end. An
 * empty body is then read to its end (a later read finds it empty); of a non-empty one the rest
 * is discarded unread (its request is to be refused). Throws as readBodyBytes.
 */
export async function undeclaredBodyArrives(req: Request, limits: BodyLimits): Promise<boolean> {
  if (req.body === null) return false;
  return (await readChunks(req.body, limits, 1)).length > 0;
}

/**
 * The chunks of `body` up to its end or until `enough` bytes came (then the rest is cancelled),
 * under the limits: more than `limits.maxBytes` is refused, so is a body not received within
 * `limits.timeoutMs`.
 */
async function readChunks(
  body: ReadableStream<Uint8Array>,
  limits: BodyLimits,
  enough: number,
): Promise<Uint8Array[]> {
  const reader = body.getReader();
  let timedOut = false;
  const clock = limits.clock;
  const timer = clock.setTimer(() => {
    timedOut = true;
    reader.cancel().catch(() => {});
  }, limits.timeoutMs);
  const chunks: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < enough) {
      const { done, value } = await reader.read();
      if (done) break;
      if (value.byteLength === 0) continue;
      total += value.byteLength;
      if (total > limits.maxBytes) {
        await reader.cancel().catch(() => {});
        throw tooLarge(limits.maxBytes);
      }
      chunks.push(value);
    }
    if (total >= enough) await reader.cancel().catch(() => {});
  } catch (err) {
    if (err instanceof RuntimeError) throw err;
    if (timedOut) throw slow(limits.timeoutMs);
    throw invalidArgument(`body: could not be read (${(err as Error)?.message ?? err})`);
  } finally {
    clock.clearTimer(timer);
    reader.releaseLock();
  }
  if (timedOut) throw slow(limits.timeoutMs);
  return chunks;
}

/**
 * Reads and parses a JSON body. Resolves `undefined` for an empty (or whitespace-only) body so
 * routes with an optional body can tell "absent" from "invalid".
 */
export async function readJsonBody(req: Request, limits: BodyLimits): Promise<unknown> {
  const bytes = await readBodyBytes(req, limits);
  let text: string;
  try {
    text = new TextDecoder("utf-8", { fatal: true }).decode(bytes);
  } catch {
    throw invalidArgument("Invalid JSON: body is not valid UTF-8");
  }
  if (text.trim() === "") return undefined;
  if (jsonDepthExceeds(text, MAX_JSON_DEPTH)) {
    throw invalidArgument(
      `Invalid JSON: nested deeper than ${MAX_JSON_DEPTH} levels (arrays and objects)`,
    );
  }
  try {
    return JSON.parse(text, noteRoundedIntegers);
  } catch (err) {
    if (err instanceof RuntimeError) throw err;
    throw invalidArgument(`Invalid JSON: ${(err as Error).message}`);
  }
}

/**
 * A string of the body (a member's value or its name) holding a lone surrogate (`"\ud800"`, an
 * escape JSON.parse takes): refused as the bytes of invalid UTF-8 are, not sent on (a provider's
 * string would arrive with U+FFFD in its place, _proto_writer.ts) or stored as something else.
 */
function refuseLoneSurrogate(key: string, value: unknown): void {
  if (!key.isWellFormed()) {
    throw invalidArgument(
      `Invalid JSON: the member name ${quoteProviderText(key)} holds a lone surrogate ` +
        "(a \\uD800-\\uDFFF escape without its pair): not Unicode text",
    );
  }
  if (typeof value === "string" && !value.isWellFormed()) {
    throw invalidArgument(
      `Invalid JSON: ${key === "" ? "the body" : `member ${quoteProviderText(key)}`} holds a ` +
        "string with a lone surrogate (a \\uD800-\\uDFFF escape without its pair): not " +
        "Unicode text",
    );
  }
}

/**
 * The numbers of parsed bodies that parsing rounded to an integer (a fraction lost, digits beyond
 * 2^53 dropped): by the object or array that holds them, the JSON text of each by its key. Weak:
 * it lives as long as the body.
 */
const ROUNDED = new WeakMap<object, Map<string, string>>();

/**
 * The JSON text of `holder[key]` when that number is an integer only because parsing rounded it
 * (`9007199254740991.4`, `2.0000000000000001`, `9007199254740993`) or is beyond any double
 * (`1e400`, read as Infinity); undefined for any other member. An integer field (int64, uint64)
 * refuses such a number; a double field takes a rounded one.
 */
export function roundedIntegerText(holder: object, key: string): string | undefined {
  return ROUNDED.get(holder)?.get(key);
}

/**
 * Whether the JSON number text `source` denotes an integer (`9007199254740993`, `1.0e3`), not a
 * fraction (`1.0000000000000001`): in a free-form member, where any double is welcome, only an
 * integer that parsing rounded (roundedIntegerText) is refused.
 */
export function denotesInteger(source: string): boolean {
  const m = /^-?(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(source);
  if (m === null) return false;
  const fraction = (m[2] ?? "").replace(/0+$/, "");
  if (fraction === "") return true;
  return Number(m[3] ?? "0") >= fraction.length;
}

/**
 * Whether the JSON number text `source` denotes the same decimal as `n` written back as JSON
 * (`6.02e23` and `6.02e+23`, `1e22` and `1e+22`): a free-form member stores `n` as that text, so
 * nothing the client wrote is lost, though the double is not exactly the decimal.
 */
export function storedAsWritten(source: string, n: number): boolean {
  const a = canonicalDecimal(source);
  return a !== null && a === canonicalDecimal(JSON.stringify(n));
}

/** A JSON number's text as sign, significant digits and exponent (`-602e21`); null if not one. */
function canonicalDecimal(text: string): string | null {
  const m = /^(-?)(\d+)(?:\.(\d+))?(?:[eE]([+-]?\d+))?$/.exec(text);
  if (m === null) return null;
  const fraction = m[3] ?? "";
  const digits = (m[2]! + fraction).replace(/^0+/, "");
  if (digits === "") return "0";
  const significant = digits.replace(/0+$/, "");
  const exp = Number(m[4] ?? "0") - fraction.length + (digits.length - significant.length);
  return `${m[1]}${significant}e${exp}`;
}

/**
 * JSON.parse reviver: notes the numbers parsed into an integer that their text is not, and the
 * numbers beyond any double (`1e400`, read as Infinity; JSON has no such value, so stored as null);
 * refuses a lone surrogate in any string (refuseLoneSurrogate).
 */
function noteRoundedIntegers(
  this: object,
  key: string,
  value: unknown,
  context?: { source?: string },
): unknown {
  refuseLoneSurrogate(key, value);
  if (typeof value !== "number") return value;
  const source = context?.source;
  if (source === undefined) return value;
  if (
    Number.isFinite(value) && (!Number.isInteger(value) || integerWrittenExactly(source, value))
  ) {
    return value;
  }
  let keys = ROUNDED.get(this);
  if (keys === undefined) ROUNDED.set(this, keys = new Map());
  keys.set(key, source);
  return value;
}

/** Reads a body that must be a JSON object (missing body included: it is not an object). */
export async function readJsonObject(
  req: Request,
  limits: BodyLimits,
): Promise<Record<string, unknown>> {
  const value = await readJsonBody(req, limits);
  if (value === undefined) throw invalidArgument("body: missing, expected a JSON object");
  if (!isPlainObject(value)) throw invalidArgument("body: must be a JSON object");
  return value;
}

/**
 * Whether JSON text nests arrays/objects deeper than `max` (brackets inside strings do not
 * count). Linear in the text; the text need not be valid JSON (JSON.parse judges that after).
 */
export function jsonDepthExceeds(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c) i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b || c === 0x7b) {
      if (++depth > max) return true;
    } else if (c === 0x5d || c === 0x7d) {
      depth--;
    }
  }
  return false;
}

/** A JSON object (not an array, not null). */
export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

function tooLarge(max: number): RuntimeError {
  return invalidArgument(`body: larger than the ${max}-byte limit`);
}

function slow(ms: number): RuntimeError {
  return invalidArgument(`body: not received completely within ${ms} ms`);
}
