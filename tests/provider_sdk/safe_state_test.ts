import { deepStrictEqual, ok, rejects, strictEqual as equal } from "node:assert/strict";
import {
  encodeFrame,
  encodeRequest,
  MAX_FRAME_BYTES,
  PROVIDER_STATUS_MESSAGE_CHARS,
  StatusCode,
  type WireRequest,
} from "../../src/adpp/mod.ts";
import { type Logger, MAX_NAMED_IN_WARNING } from "../../src/common/mod.ts";
import {
  EOF_REQUESTS_WAIT_MS,
  MAX_LEASE_MS,
  ProviderExitCode,
  type ProviderHandler,
  SAFE_STATE_TIMEOUT_MS,
  type SafeStateReason,
  serveProvider,
  WireProviderState,
} from "../../src/provider_sdk/mod.ts";
import { macrotask } from "../helpers/turns.ts";
import { decodeFrames, ManualClock, openServe } from "./_harness.ts";

const LEASE_MS = 500;

/**
 * A one-output provider: `call` sets the output to the request's device_id length (any value
 * but 0), `applySafeState` puts it back to 0 and records why. `hold` makes the next Call wait.
 */
function outputProvider() {
  const state = {
    output: 0,
    applied: [] as SafeStateReason[],
    /** When set, Call waits for this promise before answering. */
    hold: null as Promise<void> | null,
    /** What applySafeState does instead of succeeding. */
    failWith: null as Error | "hang" | null,
  };
  const handler: ProviderHandler = {
    hello: () => ({ protocol_version: "v1", provider_name: "out", provider_version: "1" }),
    listDevices: () => ({ devices: [] }),
    describeDevice: () => ({}),
    readSignals: () => ({ device_id: "d", values: [] }),
    call: async (req) => {
      if (state.hold !== null) await state.hold;
      state.output = (req.device_id ?? "").length;
      return { device_id: req.device_id ?? "" };
    },
    getHealth: () => ({ provider: { state: WireProviderState.OK, message: "ok" }, devices: [] }),
    applySafeState: (reason) => {
      if (state.failWith === "hang") return new Promise<never>(() => {});
      if (state.failWith !== null) throw state.failWith;
      state.output = 0;
      state.applied.push(reason);
      return { devices: ["d"] };
    },
  };
  return { state, handler };
}

const hello = { request_id: 1, hello: { protocol_version: "v1" } };
const read = (id: number) => ({ request_id: id, read_signals: { device_id: "d" } });
const health = (id: number) => ({ request_id: id, get_health: {} });
const command = (id: number) => ({ request_id: id, call: { device_id: "motor" } });

Deno.test("serveProvider applies the safe state exactly when the lease runs out, once, and keeps serving", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const p = openServe(handler, { leaseMs: LEASE_MS, clock });
  try {
    equal((await p.request(command(1))).status?.code, StatusCode.OK);
    equal(state.output, 5);
    await clock.advance(LEASE_MS - 1);
    deepStrictEqual(state.applied, [], "one ms before the lease ends");
    await clock.advance(1);
    deepStrictEqual(state.applied, ["lease_expired"]);
    equal(state.output, 0);
    await clock.advance(10 * LEASE_MS);
    deepStrictEqual(state.applied, ["lease_expired"], "applied once per silence");
    equal(clock.pending, 0, "no timer armed while nothing arrives");

    // Still serving; a read does not undo the safe state.
    equal((await p.request(read(2))).status?.code, StatusCode.OK);
    equal(state.output, 0);
    const h = (await p.request(health(3))).get_health?.provider;
    equal(h?.state, WireProviderState.DEGRADED);
    equal(h?.message, "lease expired: safe state applied at 2030-01-01T00:00:00.500Z");
    deepStrictEqual(h?.metrics, {
      lease_ms: "500",
      lease_expiries: "1",
      safe_state_active: "true",
      safe_state_applied_at_ms: String(Date.UTC(2030, 0, 1) + LEASE_MS),
      safe_state_reason: "lease_expired",
    });
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider health stays DEGRADED after a lease expiry until the next Call answered OK", async () => {
  const clock = new ManualClock();
  const { handler } = outputProvider();
  const p = openServe(handler, { leaseMs: LEASE_MS, clock });
  try {
    await p.request(hello);
    await clock.advance(LEASE_MS);
    await p.request(read(2));
    equal((await p.request(health(3))).get_health?.provider?.state, WireProviderState.DEGRADED);
    equal((await p.request(command(4))).status?.code, StatusCode.OK);
    const h = (await p.request(health(5))).get_health?.provider;
    equal(h?.state, WireProviderState.OK);
    equal(h?.message, "ok");
    equal(h?.metrics?.safe_state_active, "false");
    equal(h?.metrics?.lease_expiries, "1", "the history stays in the metrics");
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider restarts the lease with every reply and arms no timer per request", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const p = openServe(handler, { leaseMs: LEASE_MS, clock });
  try {
    // 100 polls, 10 ms apart: the lease never runs out.
    for (let i = 0; i < 100; i++) {
      await p.request(read(i + 1));
      await clock.advance(10);
    }
    deepStrictEqual(state.applied, []);
    ok(clock.timersSet <= 3, `${clock.timersSet} timers for 100 requests`);
    await clock.advance(LEASE_MS - 11);
    deepStrictEqual(state.applied, [], "the lease counts from the last reply");
    await clock.advance(1);
    deepStrictEqual(state.applied, ["lease_expired"]);
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider does not count a request in progress against the lease", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const p = openServe(handler, { leaseMs: LEASE_MS, clock });
  try {
    await p.request(hello);
    let release = () => {};
    state.hold = new Promise((resolve) => release = resolve);
    await p.send(command(2));
    await clock.advance(4 * LEASE_MS);
    deepStrictEqual(state.applied, [], "busy, not silent");
    release();
    equal((await p.next()).status?.code, StatusCode.OK);
    equal(state.output, 5, "the command took effect");
    await clock.advance(LEASE_MS - 1);
    deepStrictEqual(state.applied, []);
    await clock.advance(1);
    deepStrictEqual(state.applied, ["lease_expired"]);
    equal(state.output, 0);
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider applies the safe state on stdin EOF and resolves 0, with or without a lease", async () => {
  for (const leaseMs of [0, LEASE_MS]) {
    const clock = new ManualClock();
    const { state, handler } = outputProvider();
    const p = openServe(handler, { leaseMs, clock });
    try {
      await p.request(command(1));
      equal(state.output, 5);
      equal(await p.closeInput(), ProviderExitCode.CLEAN);
      deepStrictEqual(state.applied, ["stdin_eof"]);
      equal(state.output, 0);
      equal(clock.pending, 0, "no timer left behind");
    } finally {
      await p.dispose();
    }
  }
});

Deno.test("serveProvider applies the safe state on a protocol error before resolving its exit code", async () => {
  const { state, handler } = outputProvider();
  const code = await serveProvider(handler, {
    readable: ReadableStream.from([new Uint8Array(4)]), // zero-length frame
    writable: new WritableStream(),
  });
  equal(code, ProviderExitCode.FRAMING);
  deepStrictEqual(state.applied, ["serve_error"]);
});

Deno.test("serveProvider stop applies the safe state at once, even with a request in progress", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const stop = new AbortController();
  const p = openServe(handler, { clock, stop: stop.signal });
  try {
    await p.request(command(1));
    state.hold = new Promise<void>(() => {}); // this Call never answers
    await p.send(command(2));
    await macrotask();
    stop.abort("SIGTERM");
    equal(await p.done, ProviderExitCode.CLEAN);
    deepStrictEqual(state.applied, ["SIGTERM"]);
    equal(state.output, 0);
  } finally {
    await p.dispose();
  }
});

/**
 * serveProvider on an open input that the test closes, its answers collected as written, its log
 * lines kept (WARN and ERROR prefixed).
 */
function servedUntilClosed(handler: ProviderHandler, clock: ManualClock) {
  const input = new TransformStream<Uint8Array, Uint8Array>();
  const writer = input.writable.getWriter();
  const answered: number[] = [];
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: () => {},
    warn: (m) => void lines.push(`WARN ${m}`),
    error: (m) => void lines.push(`ERROR ${m}`),
    child: () => logger,
  };
  const done = serveProvider(handler, {
    readable: input.readable,
    writable: new WritableStream({
      write: async (c) => void answered.push(...(await decodeFrames(c)).map((r) => r.request_id!)),
    }),
    clock,
    logger,
  });
  let settled = false;
  void done.then(() => settled = true);
  return {
    send: (...reqs: WireRequest[]) =>
      writer.write(concat(reqs.map((r) => encodeFrame(encodeRequest(r))))),
    close: () => writer.close(),
    done,
    answered,
    lines,
    settled: () => settled,
  };
}

function concat(frames: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(frames.reduce((n, f) => n + f.length, 0));
  let at = 0;
  for (const f of frames) {
    out.set(f, at);
    at += f.length;
  }
  return out;
}

Deno.test("serveProvider applies the safe state EOF_REQUESTS_WAIT_MS after stdin's EOF while a request hangs, once, and answers nothing more", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const s = servedUntilClosed(handler, clock);
  await s.send(command(1));
  await macrotask();
  deepStrictEqual(s.answered, [1]);
  let release = () => {};
  state.hold = new Promise<void>((resolve) => release = resolve); // the next Call hangs
  // One read: the Call that hangs and a read behind it.
  await s.send(command(2), read(3));
  await macrotask();
  await s.close();
  await macrotask();
  await clock.advance(EOF_REQUESTS_WAIT_MS - 1);
  equal(s.settled(), false, "the request in hand gets EOF_REQUESTS_WAIT_MS");
  deepStrictEqual(state.applied, []);
  await clock.advance(1);
  equal(await s.done, ProviderExitCode.CLEAN);
  deepStrictEqual(state.applied, ["stdin_eof"]);
  equal(state.output, 0);
  deepStrictEqual(s.lines, [
    `WARN stdin closed while request 2 (call) was still being served: applying the safe state ` +
    `without it, EOF_REQUESTS_WAIT_MS (${EOF_REQUESTS_WAIT_MS} ms) after the EOF; 1 more read ` +
    `after it, not served`,
  ]);
  equal(clock.pending, 0, "no timer left behind");
  // The hung Call ends after all: no second safe state, no answer.
  release();
  await macrotask();
  await macrotask();
  deepStrictEqual(state.applied, ["stdin_eof"]);
  deepStrictEqual(s.answered, [1]);
});

Deno.test("serveProvider answers a request in hand that ends within EOF_REQUESTS_WAIT_MS of stdin's EOF, then applies the safe state", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const s = servedUntilClosed(handler, clock);
  let release = () => {};
  state.hold = new Promise<void>((resolve) => release = resolve);
  await s.send(command(1), read(2));
  await macrotask();
  await s.close();
  await macrotask();
  await clock.advance(EOF_REQUESTS_WAIT_MS - 1);
  release();
  equal(await s.done, ProviderExitCode.CLEAN);
  deepStrictEqual(s.answered, [1, 2], "both requests in hand answered");
  deepStrictEqual(state.applied, ["stdin_eof"], "the safe state after the Call's effect");
  equal(state.output, 0);
  deepStrictEqual(s.lines, []);
  equal(clock.pending, 0, "no timer left behind");
});

Deno.test("serveProvider resolves 6 when the safe state fails or hangs on the way out", async () => {
  const clock = new ManualClock();
  const failing = outputProvider();
  failing.state.failWith = new Error("bus down");
  const p = openServe(failing.handler, { clock });
  equal(await p.closeInput(), ProviderExitCode.SAFE_STATE_FAILED);
  await p.dispose();

  const hanging = outputProvider();
  hanging.state.failWith = "hang";
  const q = openServe(hanging.handler, { clock });
  const closed = q.closeInput();
  await macrotask(); // EOF seen, the safe state started
  await clock.advance(SAFE_STATE_TIMEOUT_MS - 1);
  let settledEarly = false;
  void q.done.then(() => settledEarly = true);
  await macrotask();
  equal(settledEarly, false, "waits until SAFE_STATE_TIMEOUT_MS");
  await clock.advance(1);
  equal(await closed, ProviderExitCode.SAFE_STATE_FAILED);
  await q.dispose();
});

Deno.test("serveProvider reports a failed safe state after a lease expiry as FAULT", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const p = openServe(handler, { leaseMs: LEASE_MS, clock });
  try {
    await p.request(command(1));
    state.failWith = new Error("bus down");
    await clock.advance(LEASE_MS);
    const h = (await p.request(health(2))).get_health?.provider;
    equal(h?.state, WireProviderState.FAULT);
    equal(h?.message, "lease expired: safe state FAILED at 2030-01-01T00:00:00.500Z: bus down");
    equal(h?.metrics?.safe_state_error, "bus down");
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider cuts a failed safe state's error too large to frame in GetHealth and the log", async () => {
  const clock = new ManualClock();
  const { state, handler } = outputProvider();
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: (m) => void lines.push(m),
    warn: (m) => void lines.push(m),
    error: (m) => void lines.push(m),
    child: () => logger,
  };
  const p = openServe(handler, { leaseMs: LEASE_MS, clock, logger });
  try {
    await p.request(command(1));
    state.failWith = new Error("b".repeat(MAX_FRAME_BYTES + 1));
    await clock.advance(LEASE_MS);
    const exited = p.done.then((code) => Promise.reject(new Error(`provider exited ${code}`)));
    const answer = await Promise.race([p.request(health(2)), exited]);
    equal(answer.status?.code, StatusCode.OK);
    const h = answer.get_health?.provider;
    equal(h?.state, WireProviderState.FAULT);
    const cut = "b".repeat(PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026";
    equal(h?.metrics?.safe_state_error, cut);
    equal(
      h?.message,
      `lease expired: safe state FAILED at 2030-01-01T00:00:00.500Z: ${cut}`
        .slice(0, PROVIDER_STATUS_MESSAGE_CHARS) + "\u2026",
      "the whole message cut last, its prefix first",
    );
    equal(lines.length, 1);
    ok(lines[0]!.endsWith(`safe state FAILED after 0 ms: ${cut}`), lines[0]!.slice(0, 80));
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider leaves GetHealth untouched without a lease or a safe-state application", async () => {
  const { handler } = outputProvider();
  const p = openServe(handler, { clock: new ManualClock() });
  try {
    deepStrictEqual((await p.request(health(1))).get_health?.provider, {
      state: WireProviderState.OK,
      message: "ok",
    });
  } finally {
    await p.dispose();
  }
});

Deno.test("serveProvider refuses a lease without applySafeState and a lease out of range", async () => {
  const { handler } = outputProvider();
  const { applySafeState: _none, ...withoutSafeState } = handler;
  const io = { readable: new ReadableStream<Uint8Array>(), writable: new WritableStream() };
  await rejects(serveProvider(withoutSafeState, { ...io, leaseMs: 100 }), TypeError);
  for (const leaseMs of [-1, 1.5, MAX_LEASE_MS + 1]) {
    await rejects(serveProvider(handler, { ...io, leaseMs }), RangeError);
  }
  // The bounds themselves are accepted (the loop ends at once on the empty input).
  for (const leaseMs of [0, MAX_LEASE_MS]) {
    const code = await serveProvider(handler, {
      readable: ReadableStream.from([]),
      writable: new WritableStream(),
      leaseMs,
      clock: new ManualClock(),
    });
    equal(code, ProviderExitCode.CLEAN);
  }
});

Deno.test("serveProvider's safe-state log line names the first MAX_NAMED_IN_WARNING devices and counts the rest", async () => {
  const clock = new ManualClock();
  const { handler } = outputProvider();
  const ids = Array.from({ length: MAX_NAMED_IN_WARNING + 5 }, (_, i) => `dev${i}`);
  handler.applySafeState = () => ({ devices: ids });
  const lines: string[] = [];
  const logger: Logger = {
    debug: () => {},
    info: (m) => void lines.push(m),
    warn: (m) => void lines.push(m),
    error: (m) => void lines.push(m),
    child: () => logger,
  };
  const p = openServe(handler, { leaseMs: 0, clock, logger });
  try {
    await p.request(command(1));
    equal(await p.closeInput(), ProviderExitCode.CLEAN);
    const applied = lines.filter((l) => l.includes("safe state applied"));
    deepStrictEqual(applied, [
      `stdin closed: safe state applied to ${
        ids.slice(0, MAX_NAMED_IN_WARNING).join(", ")
      } and 5 more (0 ms)`,
    ]);
  } finally {
    await p.dispose();
  }
});
