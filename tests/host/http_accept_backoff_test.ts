/**
 * The connection layer's accept loops (src/host/_http_connections.ts) back off after a failed
 * accept (EMFILE/ENFILE and the like: the listener is still good): the plain listener's and the
 * HTTPS relay's TLS listener's alike, doubling from ACCEPT_ERROR_BACKOFF_MIN_MS up to
 * ACCEPT_ERROR_BACKOFF_MAX_MS, back to the minimum after an accept that succeeds. A persistent
 * failure must not spin (the TLS loop retried every 10 ms for ever). Shutdown wakes both loops'
 * back-offs at once, without the clock moving.
 *
 * Listeners scripted in process (accept() fails as told; a real socket cannot be made to fail
 * accept() on demand in-process: tests/http/connection_limits_test.ts does it with a low
 * `ulimit -n` in a child process), time on a manual clock: each back-off is seen as the delay of
 * the timer it armed, and ends by advancing the clock by exactly that much.
 */
import assert from "node:assert/strict";
import {
  ACCEPT_ERROR_BACKOFF_MAX_MS,
  ACCEPT_ERROR_BACKOFF_MIN_MS,
  ConnectionLayer,
} from "../../src/host/_http_connections.ts";
import { flushMicrotasks, ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";

type Step = "fail" | "conn";

/** A listener whose accepts follow `script`, then wait until it is closed (then they fail). */
function scriptedListener(script: Step[]) {
  let accepts = 0;
  let closed: (() => void) | null = null;
  const closedP = new Promise<never>((_, reject) => {
    closed = () => reject(new Error("listener closed"));
  });
  closedP.catch(() => {});
  let port = 40000;
  const listener = {
    addr: { transport: "tcp", hostname: "127.0.0.1", port: 1 },
    accept(): Promise<unknown> {
      accepts++;
      const step = script.shift();
      if (step === "fail") return Promise.reject(new Error("Too many open files (os error 24)"));
      if (step === "conn") {
        return Promise.resolve({
          remoteAddr: { transport: "tcp", hostname: "127.0.0.1", port: port++ },
          close() {},
        });
      }
      return closedP;
    },
    close() {
      closed?.();
    },
  };
  return { listener, accepts: () => accepts };
}

function layerOf(plain: Step[], tls: Step[]) {
  const clock = new ManualClock().background(/#armSweeper/);
  const p = scriptedListener(plain);
  const t = scriptedListener(tls);
  const layer = new ConnectionLayer({
    listener: p.listener as unknown as Deno.Listener,
    tlsListener: t.listener as unknown as Deno.TlsListener,
    maxConnections: 8,
    requestHeaderTimeoutMs: 10_000,
    keepAliveTimeoutMs: 10_000,
    handler: () => Promise.resolve(new Response("")),
    onError: () => new Response("", { status: 500 }),
    log: testLogger(),
    serveOnConnection: () => {
      throw new Error("no connection is served in this test");
    },
    clock,
    standInHeaders: null,
  });
  return { clock, layer, plain: p, tls: t };
}

/** The back-off delays armed after each of `n` failed accepts, each ended by the clock. */
async function backoffs(clock: ManualClock, n: number): Promise<number[][]> {
  const seen: number[][] = [];
  for (let i = 0; i < n; i++) {
    await flushMicrotasks();
    const delays = clock.pendingDelays();
    seen.push(delays);
    if (delays.length !== 1) break;
    clock.advance(delays[0]!);
  }
  return seen;
}

const DOUBLING = [10, 20, 40, 80, 160, 320, 640, 1000, 1000, 1000].map((d) => [d]);

Deno.test("ConnectionLayer: a failing plain accept backs off from ACCEPT_ERROR_BACKOFF_MIN_MS doubling up to ACCEPT_ERROR_BACKOFF_MAX_MS", async () => {
  assert.deepEqual([ACCEPT_ERROR_BACKOFF_MIN_MS, ACCEPT_ERROR_BACKOFF_MAX_MS], [10, 1000]);
  const { clock, layer, plain } = layerOf(new Array(10).fill("fail"), []);
  assert.deepEqual(await backoffs(clock, 10), DOUBLING);
  await flushMicrotasks();
  assert.equal(plain.accepts(), 11, "one accept per back-off, then one waiting");
  assert.equal(layer.stats().acceptErrors, 10);
  await layer.shutdown();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("ConnectionLayer: a failing TLS accept backs off as the plain one, back to the minimum after an accept that succeeds", async () => {
  const script: Step[] = [...new Array(10).fill("fail"), "conn", "fail", "fail"];
  const { clock, layer, tls } = layerOf([], script);
  assert.deepEqual(await backoffs(clock, 10), DOUBLING);
  assert.deepEqual(await backoffs(clock, 2), [[10], [20]], "reset by the accept that succeeded");
  await flushMicrotasks();
  assert.equal(tls.accepts(), 14, "one accept per back-off, then one waiting");
  assert.equal(layer.stats().acceptErrors, 12);
  await layer.shutdown();
  assert.equal(clock.pendingTimers, 0);
});

Deno.test("ConnectionLayer: shutdown wakes both accept loops' back-offs at once, the clock standing still", async () => {
  const { clock, layer } = layerOf(["fail"], ["fail"]);
  await flushMicrotasks();
  assert.deepEqual(clock.pendingDelays(), [10, 10], "both loops back off");
  const stopping = layer.shutdown();
  await flushMicrotasks();
  assert.deepEqual(
    clock.pendingDelays().filter((d) => d === ACCEPT_ERROR_BACKOFF_MIN_MS),
    [],
    "a back-off timer still armed: its loop sleeps on",
  );
  await stopping; // never settles while a loop sleeps (the clock does not move)
  assert.equal(clock.pendingTimers, 0);
});
