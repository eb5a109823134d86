/**
 * A provider that hangs on one device's read but answers its other devices at once: the answers of
 * a pass are applied in request order (docs/architecture.md), so an answer that came in behind the
 * hung read waits there -- in the priming pass of start() until that read times out (a poll
 * loop's cycle ends without it at the next grid instant: hung_sibling_poll_test.ts). Its samples
 * are dated by their arrival (`receivedMono`, "the monotonic time it arrived"; the wall clock
 * then), not by that late apply: a value `timeout_ms` old is never served, nor judged by alarms
 * and interlocks, as a fresh one. The programmable provider as a real child process (it answers
 * requests concurrently).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, startProgrammable, T } from "../helpers/programmable_provider.ts";
import { InputProblem, SignalInput } from "../../src/alarms/mod.ts";

const INTERVAL_MS = 100;
/** The provider's timeout_ms: how long the hung read holds the answer behind it. */
const TIMEOUT_MS = 1500;
/** health.staleness.stale_after_ms: far below TIMEOUT_MS. */
const STALE_MS = 400;

Deno.test("StateCache dates an answer held behind a hung read of another device by its arrival: its age and wall time are the answer's, so it is STALE when applied", async () => {
  const fx = await startProgrammable({
    devices: {
      // Requested first: its hung read holds every answer after it in the pass.
      a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
      b: { signals: [{ id: "y", type: T.DOUBLE }], values: [dbl("y", 2)] },
    },
  }, {
    intervalMs: INTERVAL_MS,
    timeoutMs: TIMEOUT_MS,
    staleness: { warnAfterMs: STALE_MS / 2, staleAfterMs: STALE_MS },
  });
  let started: Promise<void> | undefined;
  try {
    // Both answered once (a post-call poll each: no pass holds one behind the other).
    await fx.cache.pollDevice("p0", "a");
    await fx.cache.pollDevice("p0", "b");
    assert.equal(fx.cache.signal("p0", "b", "y")?.quality, "OK");
    const input = new SignalInput("p0/b/y", "p0", "b", "y");
    /** b's sample as each apply left it: its age then, its quality as read, its wall time. */
    const applied: {
      aDown: boolean;
      ageMs: number;
      quality: string;
      atMs: number;
      input: number;
    }[] = [];
    fx.cache.onDevicePolled((dev) => {
      if (dev.deviceId !== "b") return;
      const s = dev.signals.get("y")!;
      const mono = fx.clock.monoMs();
      applied.push({
        aDown: fx.cache.device("p0", "a")?.available === false,
        ageMs: mono - s.receivedMono,
        quality: fx.cache.qualityNow("p0", "b", "y", s),
        atMs: s.timestampMs,
        input: input.classify({ cache: fx.cache }, mono),
      });
    });
    const wallBefore = fx.clock.wallMs;
    await fx.program("a", { read: { hang: true } });
    // The priming pass of start(): a's read hangs, b's (sent with it, after it) is answered at
    // once -- before the provider answers this count, on the same pipe.
    const reads = (await fx.stats("b")).reads;
    started = fx.cache.start();
    await waitFor("b read again", async () => (await fx.stats("b")).reads > reads);
    // The wall clock moves on while a's read hangs and b's answer waits behind it.
    fx.clock.wallMs += 60_000;
    await waitFor("a's hung read timed out", () => fx.cache.device("p0", "a")?.available === false);
    // b's answer is applied right after a's failure, in request order.
    const held = applied.find((e) => e.aDown)!;
    assert.ok(
      held.ageMs >= TIMEOUT_MS / 2,
      `the held answer is aged from its arrival, not its apply (age ${held.ageMs} ms)`,
    );
    assert.equal(held.quality, "STALE", "GET /v0/state reads it STALE: older than its bound");
    assert.equal(held.input, InputProblem.AGE, "alarms and interlocks judge it stale");
    assert.equal(held.atMs, wallBefore, "dated by the wall clock when it arrived");
    // b itself is not failing: its answers carry its signal OK, only late.
    assert.equal(fx.cache.device("p0", "b")?.available, true);
    await started;
  } finally {
    await started?.catch(() => {});
    await fx.close();
  }
});
