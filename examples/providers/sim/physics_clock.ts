import type { SimDevice } from "./sim_device.ts";

/**
 * Most steps one catch-up runs (10 minutes at 10 Hz): a provider nobody asked for longer than
 * that skips the rest, as a stalled timer loop would (and one request never computes for long).
 */
export const MAX_CATCH_UP_STEPS = 6000;

/**
 * The physics of `non_interacting` mode, advanced when a request looks at a device rather than by
 * a timer: every step is 1 / tick_rate_hz long, and `advance()` runs the steps due since the last
 * one. Nothing outside a request can observe the devices, so each request sees the state a timer
 * ticking at that rate would have produced, while an idle sim needs no timer at all (the first
 * timer costs a Deno process ~2.4 MiB of RSS; bench/README.md, fifth round).
 */
export class PhysicsClock {
  readonly #devices: readonly SimDevice[];
  readonly #stepMs: number;
  readonly #nowMs: () => number;
  /** Time up to which the devices have been stepped. */
  #steppedToMs: number;

  constructor(devices: readonly SimDevice[], tickRateHz: number, nowMs: () => number) {
    this.#devices = devices;
    this.#stepMs = 1000 / tickRateHz;
    this.#nowMs = nowMs;
    this.#steppedToMs = nowMs();
  }

  /** Runs the steps due by now (at most MAX_CATCH_UP_STEPS; the time beyond is skipped). */
  advance(): void {
    const now = this.#nowMs();
    const due = Math.floor((now - this.#steppedToMs) / this.#stepMs);
    if (due <= 0) return;
    const steps = Math.min(due, MAX_CATCH_UP_STEPS);
    this.#steppedToMs = steps === due ? this.#steppedToMs + due * this.#stepMs : now;
    const dt = this.#stepMs / 1000;
    for (let i = 0; i < steps; i++) {
      for (const d of this.#devices) d.tick(dt);
    }
  }
}
