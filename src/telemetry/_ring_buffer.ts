/**
 * A fixed-capacity FIFO that evicts its oldest entries when full. Used for the event queue and
 * the retry buffer: memory stays bounded whatever the producer does.
 */
export class RingBuffer<T> {
  readonly capacity: number;
  #items: (T | undefined)[];
  #head = 0;
  #length = 0;

  constructor(capacity: number) {
    this.capacity = Math.max(0, Math.floor(capacity));
    this.#items = new Array(this.capacity);
  }

  get length(): number {
    return this.#length;
  }

  /** Appends; returns how many old entries were evicted (0 or 1; 1 always when capacity is 0). */
  push(item: T): number {
    if (this.capacity === 0) return 1;
    let evicted = 0;
    if (this.#length === this.capacity) {
      this.#items[this.#head] = undefined;
      this.#head = (this.#head + 1) % this.capacity;
      this.#length--;
      evicted = 1;
    }
    this.#items[(this.#head + this.#length) % this.capacity] = item;
    this.#length++;
    return evicted;
  }

  /** Appends all in order; returns the number of evictions. */
  pushAll(items: readonly T[]): number {
    let evicted = 0;
    for (const item of items) evicted += this.push(item);
    return evicted;
  }

  /** Removes and returns the oldest entry. */
  shift(): T | undefined {
    if (this.#length === 0) return undefined;
    const item = this.#items[this.#head];
    this.#items[this.#head] = undefined;
    this.#head = (this.#head + 1) % this.capacity;
    this.#length--;
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
    for (let i = 0; i < count; i++) {
      this.#items[this.#head] = undefined;
      this.#head = (this.#head + 1) % this.capacity;
    }
    this.#length -= count;
  }

  /** Empties the buffer; returns how many entries it held. */
  clear(): number {
    const n = this.#length;
    this.dropFront(n);
    this.#head = 0;
    return n;
  }
}
