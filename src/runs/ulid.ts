/**
 * ULID generator (26 chars, Crockford base32: 48-bit ms time + 80-bit randomness). Ids sort by
 * time; within one millisecond, and when the clock steps back, the previous id's random part is
 * incremented so ids from one generator are strictly increasing.
 */

const ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
const RANDOM_BYTES = 10;
const MAX_TIME = 2 ** 48 - 1;

/** Matches a canonical ULID. */
export const ULID_PATTERN = /^[0-9A-HJKMNP-TV-Z]{26}$/;

/** Options: injected wall clock and randomness (tests make both deterministic). */
export interface UlidOptions {
  readonly now: () => number;
  /** Fills the array with random bytes; default crypto.getRandomValues. */
  readonly random?: ((bytes: Uint8Array) => void) | undefined;
}

/** Produces monotonic ULIDs. */
export class UlidGenerator {
  readonly #now: () => number;
  readonly #random: (bytes: Uint8Array) => void;
  #lastTime = -1;
  readonly #lastRandom = new Uint8Array(RANDOM_BYTES);

  constructor(options: UlidOptions) {
    this.#now = options.now;
    this.#random = options.random ?? ((b) => crypto.getRandomValues(b));
  }

  /**
   * Makes every later id greater than `ulid` (one an earlier process made: a restart whose clock
   * is behind the previous process's must not make ids that sort before that process's).
   * Nothing when `ulid` is not a ULID or not greater than the last id made.
   */
  advancePast(ulid: string): void {
    if (!ULID_PATTERN.test(ulid)) return;
    const time = decodeTime(ulid.slice(0, 10));
    const random = decodeRandom(ulid.slice(10));
    const last = this.#lastTime < 0
      ? ""
      : encodeTime(this.#lastTime) + encodeRandom(this.#lastRandom);
    if (ulid <= last) return;
    this.#lastTime = time;
    this.#lastRandom.set(random);
  }

  /** The next id; strictly greater than every id this generator returned before. */
  next(): string {
    let time = Math.min(MAX_TIME, Math.max(0, Math.floor(this.#now())));
    if (time <= this.#lastTime) {
      time = this.#lastTime;
      if (!increment(this.#lastRandom)) {
        // 2^80 ids in one ms cannot happen in practice; move to the next ms to stay monotonic.
        time = Math.min(MAX_TIME, time + 1);
        this.#random(this.#lastRandom);
      }
    } else {
      this.#random(this.#lastRandom);
    }
    this.#lastTime = time;
    return encodeTime(time) + encodeRandom(this.#lastRandom);
  }
}

/** Big-endian +1; false on overflow. */
function increment(bytes: Uint8Array): boolean {
  for (let i = bytes.length - 1; i >= 0; i--) {
    if (bytes[i]! < 255) {
      bytes[i]!++;
      return true;
    }
    bytes[i] = 0;
  }
  return false;
}

function encodeTime(time: number): string {
  let out = "";
  let t = time;
  for (let i = 0; i < 10; i++) {
    out = ALPHABET[t % 32] + out;
    t = Math.floor(t / 32);
  }
  return out;
}

function decodeTime(text: string): number {
  let t = 0;
  for (const c of text) t = t * 32 + ALPHABET.indexOf(c);
  return Math.min(MAX_TIME, t);
}

function decodeRandom(text: string): Uint8Array {
  let n = 0n;
  for (const c of text) n = (n << 5n) | BigInt(ALPHABET.indexOf(c));
  const bytes = new Uint8Array(RANDOM_BYTES);
  for (let i = RANDOM_BYTES - 1; i >= 0; i--) {
    bytes[i] = Number(n & 255n);
    n >>= 8n;
  }
  return bytes;
}

function encodeRandom(bytes: Uint8Array): string {
  let n = 0n;
  for (const b of bytes) n = (n << 8n) | BigInt(b);
  let out = "";
  for (let i = 0; i < 16; i++) {
    out = ALPHABET[Number(n & 31n)] + out;
    n >>= 5n;
  }
  return out;
}
