import type { PublishedEvent, RuntimeEvent } from "./catalogue.ts";

/** A subscriber callback: must not block (push into its own bounded queue and return). */
export type EventListener = (event: PublishedEvent) => void;

/**
 * Synchronous, typed fan-out. Ids are process-global, monotonic from 1 and shared by all kinds.
 * Subscribers own their queues (SSE clients, telemetry), so a slow consumer never slows publish.
 */
export class EventBus {
  #nextId = 1;
  readonly #listeners = new Set<EventListener>();
  readonly #onListenerError: (err: unknown) => void;

  constructor(options: { onListenerError?: (err: unknown) => void } = {}) {
    this.#onListenerError = options.onListenerError ?? (() => {});
  }

  /** Publishes to every subscriber; returns the assigned event id. */
  publish(event: RuntimeEvent): number {
    const published: PublishedEvent = { id: this.#nextId++, event };
    for (const listener of this.#listeners) {
      try {
        listener(published);
      } catch (err) {
        this.#onListenerError(err);
      }
    }
    return published.id;
  }

  /** Adds a listener; the returned function removes it. */
  subscribe(listener: EventListener): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Events published since start. */
  get publishedCount(): number {
    return this.#nextId - 1;
  }

  get subscriberCount(): number {
    return this.#listeners.size;
  }
}
