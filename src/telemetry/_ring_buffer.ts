/**
 * A FIFO bounded in entries (`capacity`) and, optionally, in bytes (`maxBytes`, each entry's size
 * as `sizeOf` estimates it), that evicts its oldest entries when a push would pass either bound.
 * Used for the event queue and the retry buffer: memory stays bounded whatever the producer does,
 * however large its entries.
 */
export class RingBuffer<T> {
  readonly capacity: number;
  /** Bound on the sum of the entries' sizes; Infinity when the buffer counts entries only. */
  readonly maxBytes: number;
  #sizeOf: (item: T) => number;
  #items: (T | undefined)[];
  #sizes: (number | undefined)[];
  #head = 0;
  #length = 0;
  #bytes = 0;

  constructor(
    capacity: number,
    bytes?: { readonly maxBytes: number; readonly sizeOf: (item: T) => number },
  ) {
    this.capacity = Math.max(0, Math.floor(capacity));
    this.maxBytes = bytes === undefined ? Infinity : Math.max(0, bytes.maxBytes);
    this.#sizeOf = bytes === undefined ? () => 0 : bytes.sizeOf;
    this.#items = new Array(this.capacity);
    this.#sizes = new Array(this.capacity);
  }

  get length(): number {
    return this.#length;
  }

  /** The sum of the entries' sizes (0 when the buffer counts entries only). */
  get bytes(): number {
    return this.#bytes;
  }

  /**
   * Appends, evicting the oldest entries until both bounds hold; returns how many entries were
   * lost: the evicted ones, or 1 when the item itself cannot fit (capacity 0, or larger than
   * `maxBytes` alone: it is not kept and nothing is evicted for it).
   */
  push(item: T): number {
    if (this.capacity === 0) return 1;
    const size = this.#sizeOf(item);
    if (size > this.maxBytes) return 1;
    let evicted = 0;
    while (
      this.#length > 0 && (this.#length === this.capacity || this.#bytes + size > this.maxBytes)
    ) {
      this.#dropOldest();
      evicted++;
    }
    const at = (this.#head + this.#length) % this.capacity;
    this.#items[at] = item;
    this.#sizes[at] = size;
    this.#bytes += size;
    this.#length++;
    return evicted;
  }

  /** Appends all in order; returns the number of entries lost (see push). */
  pushAll(items: readonly T[]): number {
    let evicted = 0;
    for (const item of items) evicted += this.push(item);
    return evicted;
  }

  /** Removes and returns the oldest entry. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#dropOldest();
    return item;
  }

  /** Copies the `n` oldest entries without removing them. */
  peek(n: number): T[] {
    const count = Math.min(n, this.#length);
    const out: T[] = new Array(count);
    for (let i = 0; i < count; i++) out[i] = this.#items[(this.#head + i) % this.capacity] as T;
    return out;
  }

  /** Removes the `n` oldest entries. */
  dropFront(n: number): void {
    const count = Math.min(n, this.#length);
    for (let i = 0; i < count; i++) this.#dropOldest();
  }

  /** Empties the buffer; returns how many entries it held. */
  clear(): number {
    const n = this.#length;
    this.dropFront(n);
    this.#head = 0;
    this.#bytes = 0;
    return n;
  }

  #dropOldest(): void {
    this.#items[this.#head] = undefined;
    this.#bytes -= this.#sizes[this.#head] ?? 0;
    this.#sizes[this.#head] = 0;
    this.#head = (this.#head + 1) % this.capacity;
    this.#length--;
  }
}
