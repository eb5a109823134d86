import assert from "node:assert/strict";
import {
  AdppClient,
  decodeRequest,
  encodeFrame,
  encodeResponse,
  FRAME_READ_CHUNK_BYTES,
  FrameDecoderStream,
  mapProviderCode,
  MAX_LATE_CALLS,
  neverWritten,
  OtherDeviceAnswerError,
  PIPE_BUF,
  PreparedRead,
  PROVIDER_STATUS_MESSAGE_CHARS,
  ProviderStatusError,
  SampleBatch,
  StatusCode,
  type WireRequest,
  type WireResponse,
} from "../../src/adpp/mod.ts";
import { PROVIDER_TEXT_CHARS, QUOTED_DEVICE_ID_CHARS, RuntimeError } from "../../src/common/mod.ts";
import { byteStream } from "../helpers/byte_stream.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";

/**
 * A scripted peer: reads the client's requests, lets the test write arbitrary bytes back. The
 * client's deadlines run on `clock`, which moves only when the test moves it.
 */
function pair() {
  const clock = new ManualClock();
  const toProvider = new TransformStream<Uint8Array, Uint8Array>();
  const fromProvider = new TransformStream<Uint8Array, Uint8Array>();
  const client = new AdppClient(fromProvider.readable, toProvider.writable, { clock });
  const requests = toProvider.readable.pipeThrough(new FrameDecoderStream()).getReader();
  const out = fromProvider.writable.getWriter();
  return {
    client,
    clock,
    async nextRequest(): Promise<WireRequest> {
      const { value } = await requests.read();
      return decodeRequest(value!);
    },
    reply(r: WireResponse) {
      return out.write(encodeFrame(encodeResponse(r)));
    },
    raw(bytes: Uint8Array) {
      return out.write(bytes);
    },
    async end() {
      await out.close().catch(() => {});
      await client.close();
      await requests.cancel().catch(() => {});
    },
  };
}

const OK = { code: StatusCode.OK, message: "ok" };

Deno.test("AdppClient numbers requests from 1 and matches out-of-order responses by id", async () => {
  const p = pair();
  const a = p.client.request("describe_device", { device_id: "a" }, 1000);
  const b = p.client.request("describe_device", { device_id: "b" }, 1000);
  const ra = await p.nextRequest();
  const rb = await p.nextRequest();
  assert.equal(ra.request_id, 1);
  assert.equal(rb.request_id, 2);
  await p.reply({ request_id: 2, status: OK, describe_device: { device: { device_id: "b" } } });
  await p.reply({ request_id: 1, status: OK, describe_device: { device: { device_id: "a" } } });
  assert.equal((await a).device?.device_id, "a");
  assert.equal((await b).device?.device_id, "b");
  await p.end();
});

Deno.test("AdppClient times out with DEADLINE_EXCEEDED and discards the late answer", async () => {
  const p = pair();
  const slow = p.client.request("list_devices", {}, 30);
  const req = await p.nextRequest();
  p.clock.advance(29);
  assert.equal(p.client.inFlight, 1);
  p.clock.advance(1);
  await assert.rejects(slow, (e) => e instanceof RuntimeError && e.code === "DEADLINE_EXCEEDED");
  await p.reply({ request_id: req.request_id, status: OK, list_devices: {} }); // late
  const next = p.client.request("list_devices", {}, 1000);
  const req2 = await p.nextRequest();
  await p.reply({ request_id: req2.request_id, status: OK, list_devices: { devices: [] } });
  assert.deepEqual(await next, {});
  assert.equal(p.client.open, true, "a late reply must not end the session");
  await p.end();
});

/** A call request's payload (what the provider may carry out). */
const CALL = { device_id: "d", function_id: 1, function_name: "set", args: {} };

const deadlineExceeded = (e: unknown) =>
  e instanceof RuntimeError && e.code === "DEADLINE_EXCEEDED";

Deno.test("AdppClient keeps a call that timed out as late until its late answer comes; other requests and later calls are not waited for", async () => {
  const p = pair();
  const call = p.client.request("call", CALL, 30);
  const list = p.client.request("list_devices", {}, 30);
  const [rCall, rList] = [await p.nextRequest(), await p.nextRequest()];
  p.clock.advance(30);
  await assert.rejects(call, deadlineExceeded);
  await assert.rejects(list, deadlineExceeded);
  assert.equal(p.client.lateCalls, 1, "only the call is late, not the list_devices");
  const before = p.client.nextRequestId;
  // A call sent after the mark and timed out too: not among those waited for.
  const after = p.client.request("call", CALL, 30);
  const rAfter = await p.nextRequest();
  p.clock.advance(30);
  await assert.rejects(after, deadlineExceeded);
  assert.equal(p.client.lateCalls, 2);
  const waited = p.client.lateCallsAnswered(before, new AbortController().signal);
  let settled = false;
  void waited.then(() => settled = true);
  await p.reply({ request_id: rList.request_id, status: OK, list_devices: {} }); // late, not a call
  await p.reply({ request_id: rAfter.request_id, status: OK, call: {} }); // late, after the mark
  await waitFor("the later call's late answer", () => p.client.lateCalls === 1 ? true : null);
  assert.equal(settled, false, "the call sent before the mark is still at the provider");
  await p.reply({ request_id: rCall.request_id, status: OK, call: {} }); // late
  assert.equal(await waited, true);
  assert.equal(p.client.lateCalls, 0);
  assert.equal(p.client.open, true, "a late answer must not end the session");
  await p.end();
});

Deno.test("AdppClient.lateCallsAnswered is false when its signal aborts first, and true once the session ends", async () => {
  const p = pair();
  const call = p.client.request("call", CALL, 30);
  await p.nextRequest();
  p.clock.advance(30);
  await assert.rejects(call, deadlineExceeded);
  const before = p.client.nextRequestId;
  const bound = new AbortController();
  const waited = p.client.lateCallsAnswered(before, bound.signal);
  bound.abort();
  assert.equal(await waited, false);
  const untilEnd = p.client.lateCallsAnswered(before, new AbortController().signal);
  await p.end();
  assert.equal(await untilEnd, true, "a session that ended carries nothing out");
  assert.equal(p.client.lateCalls, 0);
});

Deno.test("AdppClient.endedWithCallsBefore: a session closed while the provider held a call (late, or waiting for its answer) before the mark says so; answered ones and later ones do not count", async () => {
  // A late call, answered late before the close: nothing held.
  const p = pair();
  const answered = p.client.request("call", CALL, 30);
  const rAnswered = await p.nextRequest();
  p.clock.advance(30);
  await assert.rejects(answered, deadlineExceeded);
  await p.reply({ request_id: rAnswered.request_id, status: OK, call: {} });
  await waitFor("the late answer", () => p.client.lateCalls === 0 ? true : null);
  // A read in flight at the close: not a call, carries nothing out.
  const read = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  const mark = p.client.nextRequestId;
  assert.equal(p.client.endedWithCallsBefore(mark), false, "not ended");
  await p.client.close();
  await assert.rejects(read);
  assert.equal(p.client.endedWithCallsBefore(mark), false, "no call held at the close");
  await p.end();

  // A late call and a call waiting for its answer at the close: held, both.
  for (const held of ["late", "waiting"] as const) {
    const q = pair();
    const call = q.client.request("call", CALL, 30);
    await q.nextRequest();
    if (held === "late") {
      q.clock.advance(30);
      await assert.rejects(call, deadlineExceeded);
    }
    const before = q.client.nextRequestId;
    // A call sent after the mark, waiting at the close: not among those the mark counts.
    const after = q.client.request("call", CALL, 1000);
    await q.nextRequest();
    const waited = q.client.lateCallsAnswered(before, new AbortController().signal);
    await q.client.close();
    if (held === "waiting") await assert.rejects(call);
    await assert.rejects(after);
    assert.equal(await waited, true, "the session ended");
    assert.equal(q.client.lateCalls, 0);
    assert.equal(q.client.endedWithCallsBefore(before), true, `a ${held} call held at the close`);
    assert.equal(q.client.endedWithCallsBefore(1), false, "none before the first request");
    await q.end();
  }
});

Deno.test("AdppClient keeps at most MAX_LATE_CALLS late calls; one forgotten keeps lateCallsAnswered false until the session ends", async () => {
  const p = pair();
  const ids: number[] = [];
  // Batches of at most the in-flight bound (64), each timed out.
  for (let sent = 0; sent < MAX_LATE_CALLS + 1;) {
    const batch = Math.min(64, MAX_LATE_CALLS + 1 - sent);
    const calls = Array.from({ length: batch }, () => p.client.request("call", CALL, 30));
    for (let i = 0; i < batch; i++) ids.push((await p.nextRequest()).request_id!);
    p.clock.advance(30);
    for (const c of calls) await assert.rejects(c, deadlineExceeded);
    sent += batch;
  }
  assert.equal(p.client.lateCalls, MAX_LATE_CALLS, "bounded: the oldest was forgotten");
  const before = p.client.nextRequestId;
  // Every late call still kept is answered: the forgotten one may still be carried out.
  for (const id of ids.slice(1)) await p.reply({ request_id: id, status: OK, call: {} });
  await waitFor("the late answers", () => p.client.lateCalls === 0 ? true : null);
  const bound = new AbortController();
  const waited = p.client.lateCallsAnswered(before, bound.signal);
  bound.abort();
  assert.equal(await waited, false, "a forgotten late call is never claimed answered");
  const untilEnd = p.client.lateCallsAnswered(before, new AbortController().signal);
  await p.end();
  assert.equal(await untilEnd, true);
});

Deno.test("AdppClient: a shorter deadline after a longer one still expires on time", async () => {
  // Deadlines are per request: a short one issued after a long one must not wait for it.
  const p = pair();
  const long = p.client.request("list_devices", {}, 10_000);
  const short = p.client.request("list_devices", {}, 20);
  const [rLong] = [await p.nextRequest(), await p.nextRequest()];
  p.clock.advance(20);
  await assert.rejects(short, (e) => e instanceof RuntimeError && e.code === "DEADLINE_EXCEEDED");
  assert.equal(p.client.inFlight, 1, "the long request is still pending");
  await p.reply({ request_id: rLong.request_id, status: OK, list_devices: { devices: [] } });
  assert.deepEqual(await long, {});
  await p.end();
});

Deno.test("AdppClient: one deadline timer per session, not one per request", async () => {
  // A timer made and cleared per request (per poll at 10 Hz) was most of what V8 promoted to its
  // old space (bench/README.md, "The timers V8 promoted").
  const p = pair();
  const answered: Promise<unknown>[] = [];
  for (let i = 0; i < 3; i++) answered.push(p.client.request("list_devices", {}, 1000));
  assert.equal(p.clock.pendingTimers, 1, "three requests in flight share one timer");
  for (let i = 0; i < 3; i++) {
    const r = await p.nextRequest();
    await p.reply({ request_id: r.request_id, status: OK, list_devices: {} });
  }
  await Promise.all(answered);
  // The answered requests leave the timer armed; the next requests do not add one.
  for (let i = 0; i < 5; i++) {
    p.clock.advance(10);
    const next = p.client.request("list_devices", {}, 1000);
    const r = await p.nextRequest();
    await p.reply({ request_id: r.request_id, status: OK, list_devices: {} });
    await next;
    assert.equal(p.clock.pendingTimers, 1);
  }
  // When it fires with nothing pending it is not re-armed.
  p.clock.advance(1000);
  assert.equal(p.clock.pendingTimers, 0);
  // A later request still expires exactly at its own deadline.
  const late = p.client.request("list_devices", {}, 40);
  await p.nextRequest();
  p.clock.advance(39);
  assert.equal(p.client.inFlight, 1);
  p.clock.advance(1);
  await assert.rejects(late, (e) => e instanceof RuntimeError && e.code === "DEADLINE_EXCEEDED");
  await p.end();
});

Deno.test("AdppClient expires several pending requests in turn and keeps the answered ones", async () => {
  const p = pair();
  const a = p.client.request("list_devices", {}, 20);
  const b = p.client.request("list_devices", {}, 60);
  const c = p.client.request("list_devices", {}, 60);
  const reqs = [await p.nextRequest(), await p.nextRequest(), await p.nextRequest()];
  const order: string[] = [];
  const expired = (name: string, r: Promise<unknown>) =>
    r.then(
      () => order.push(`${name} ok`),
      (e) => order.push(`${name} ${(e as RuntimeError).code}`),
    );
  const settled = [expired("a", a), expired("b", b), expired("c", c)];
  await p.reply({ request_id: reqs[2]!.request_id, status: OK, list_devices: {} }); // c answered
  await settled[2];
  p.clock.advance(60);
  await Promise.all(settled);
  assert.deepEqual(order, ["c ok", "a DEADLINE_EXCEEDED", "b DEADLINE_EXCEEDED"]);
  assert.equal(p.client.inFlight, 0);
  assert.equal(p.client.open, true);
  await p.end();
});

Deno.test("AdppClient: requests pending when the session ends are rejected UNAVAILABLE, not expired", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 20);
  await p.nextRequest();
  await p.end();
  await assert.rejects(pending, (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE");
  // Its deadline timer went with the session.
  assert.equal(p.clock.pendingTimers, 0);
  assert.equal(p.client.inFlight, 0);
});

Deno.test("AdppClient: a frame still waiting to be written when the session ends is never written", async () => {
  // The first write blocks (a provider that does not read); the second request waits behind it.
  // Its promise is rejected when the session ends, so the provider must never receive it.
  const written: Uint8Array[] = [];
  let unblock!: () => void;
  const blocked = new Promise<void>((r) => (unblock = r));
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      written.push(chunk);
      if (written.length === 1) await blocked;
    },
  });
  const client = new AdppClient(new ReadableStream<Uint8Array>(), writable, {
    clock: new ManualClock(),
  });
  const first = client.request("list_devices", {}, 10_000);
  await waitFor("the first frame to be written", () => written.length > 0);
  const second = client.request("call", { device_id: "motor0", function_id: 1 }, 10_000);
  await Promise.resolve();
  assert.equal(written.length, 1, "the second frame waits behind the first");
  assert.equal(splitFrames(written[0]!).length, 1, "the first write has the first frame alone");
  const closed = client.close();
  const firstErr = await first.then(() => null, (e) => e);
  const secondErr = await second.then(() => null, (e) => e);
  assert.ok(firstErr instanceof RuntimeError && firstErr.code === "UNAVAILABLE", `${firstErr}`);
  assert.ok(secondErr instanceof RuntimeError && secondErr.code === "UNAVAILABLE", `${secondErr}`);
  // The call never reached the provider, and says so; the request handed to the pipe may have.
  assert.equal(neverWritten(secondErr), true, "the call's frame was never written");
  assert.equal(neverWritten(firstErr), false, "the first frame was handed to the pipe");
  assert.equal(
    client.endedWithCallsBefore(client.nextRequestId),
    false,
    "a call never written is not one the provider held at the end",
  );
  unblock();
  await closed;
  assert.equal(written.length, 1, "the call's frame was dropped, not written after the end");
});

/**
 * A provider's stdin that does not read (a pipe full): the first write is taken and held until
 * `drain()`, as a write into a full pipe waits for its reader; every write is kept in `written`.
 */
function heldStdin() {
  const written: Uint8Array[] = [];
  let drain!: () => void;
  const drained = new Promise<void>((r) => (drain = r));
  const writable = new WritableStream<Uint8Array>({
    async write(chunk) {
      written.push(chunk.slice());
      if (written.length === 1) await drained;
    },
  });
  return { writable, written, drain };
}

/** The request ids of every frame written so far, in order. */
function writtenIds(written: readonly Uint8Array[]): number[] {
  return written.flatMap((w) => splitFrames(w).map((f) => decodeRequest(f).request_id ?? 0));
}

Deno.test("AdppClient: a call whose frame still waits behind a write the provider does not take is taken back at its deadline, never written, and is no late call", async () => {
  const stdin = heldStdin();
  const stdout = new TransformStream<Uint8Array, Uint8Array>();
  const clock = new ManualClock();
  const client = new AdppClient(stdout.readable, stdin.writable, { clock });
  // Handed to the pipe (held there): the provider may read it once it reads again.
  const handed = client.request("call", CALL, 30).then(() => null, (e) => e);
  await written(stdin, 1);
  // Waits in the outbox behind it.
  const queued = client.request("call", CALL, 30).then(() => null, (e) => e);
  clock.advance(30);
  const handedErr = await handed;
  const queuedErr = await queued;
  assert.ok(deadlineExceeded(handedErr), `${handedErr}`);
  assert.equal(neverWritten(handedErr), false, "handed to the pipe: it may still be carried out");
  assert.ok(deadlineExceeded(queuedErr), `${queuedErr}`);
  assert.match(`${queuedErr}`, /could not be written within 30 ms .*never sent/);
  assert.equal(neverWritten(queuedErr), true, "taken back: the provider never gets it");
  assert.equal(client.lateCalls, 1, "only the call handed to the pipe is late");
  // The pipe drains: the next request goes out, the call taken back never does.
  stdin.drain();
  const next = client.request("list_devices", {}, 10_000);
  await written(stdin, 2);
  assert.deepEqual(writtenIds(stdin.written), [1, 3]);
  const out = stdout.writable.getWriter();
  await out.write(encodeFrame(encodeResponse({ request_id: 3, status: OK, list_devices: {} })));
  assert.deepEqual(await next, {});
  assert.equal(client.open, true);
  await out.close();
  await client.close();
});

Deno.test("AdppClient: a frame of one turn after the PIPE_BUF write the provider does not take is taken back at its deadline; the frames of that write stay", async () => {
  const stdin = heldStdin();
  const clock = new ManualClock();
  const client = new AdppClient(new ReadableStream<Uint8Array>(), stdin.writable, { clock });
  // Three frames of about 1.5 KB: two fill the first write (at most PIPE_BUF), the third waits.
  const ids = ["a", "b", "c"].map((d) => d.padEnd(1500, "x"));
  const reads = ids.map((d, i) =>
    client.request("read_signals", { device_id: d }, i === 2 ? 30 : 10_000).then(
      () => null,
      (e) => e,
    )
  );
  await written(stdin, 1);
  assert.equal(splitFrames(stdin.written[0]!).length, 2, "the first write takes two frames");
  clock.advance(30);
  const err = await reads[2];
  assert.ok(deadlineExceeded(err), `${err}`);
  assert.equal(neverWritten(err), true);
  assert.equal(client.inFlight, 2, "the two frames handed to the pipe still wait for answers");
  stdin.drain();
  const more = client.request("list_devices", {}, 10_000).then(() => null, (e) => e);
  await written(stdin, 2);
  assert.deepEqual(writtenIds(stdin.written), [1, 2, 4], "the third frame is never written");
  await client.close();
  for (const r of [...reads, more]) await r;
});

/**
 * A provider's stdin that takes `accepted` frames and then fails every write as a pipe whose
 * reader has gone (the provider exited): EPIPE, "Broken pipe".
 */
function closingStdin(accepted: number) {
  const written: Uint8Array[] = [];
  let failed!: () => void;
  const writeFailed = new Promise<void>((r) => (failed = r));
  const writable = new WritableStream<Uint8Array>({
    write(chunk) {
      if (written.length >= accepted) {
        failed();
        throw new Deno.errors.BrokenPipe("Broken pipe (os error 32)");
      }
      written.push(chunk);
    },
  });
  return { writable, written, writeFailed };
}

/** The frames of one write (uint32 little-endian length prefixes), their bodies. */
function splitFrames(bytes: Uint8Array): Uint8Array[] {
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const out: Uint8Array[] = [];
  for (let at = 0; at < bytes.length;) {
    const n = view.getUint32(at, true);
    out.push(bytes.subarray(at + 4, at + 4 + n));
    at += 4 + n;
  }
  return out;
}

/** Waits until `n` writes reached the stdin. */
async function written(stdin: { written: unknown[] }, n: number): Promise<void> {
  await waitFor(`${n} write(s)`, () => stdin.written.length >= n);
}

Deno.test("AdppClient: the requests of one turn go out in one write, in order; a failed one fails them all, and none after", async () => {
  const stdin = closingStdin(1);
  const stdout = new TransformStream<Uint8Array, Uint8Array>();
  const client = new AdppClient(stdout.readable, stdin.writable, { clock: new ManualClock() });
  // A poll pass over four devices: one write wakes the provider once for all of them.
  const polls = ["d0", "d1", "d2", "d3"].map((d) =>
    client.request("read_signals", { device_id: d }, 10_000)
  );
  await written(stdin, 1);
  const frames = splitFrames(stdin.written[0]!);
  assert.deepEqual(frames.map((f) => decodeRequest(f).read_signals?.device_id), [
    "d0",
    "d1",
    "d2",
    "d3",
  ]);
  const out = stdout.writable.getWriter();
  for (const [i, p] of polls.entries()) {
    await out.write(
      encodeFrame(
        encodeResponse({ request_id: i + 1, status: OK, read_signals: { device_id: `d${i}` } }),
      ),
    );
    assert.equal((await p).device_id, `d${i}`);
  }
  // The next turn's requests: a second write, which fails (the provider went): all of them fail.
  const more = [
    client.request("list_devices", {}, 10_000),
    client.request("list_devices", {}, 10_000),
  ];
  for (const m of more) {
    await assert.rejects(m, (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE");
  }
  assert.equal(stdin.written.length, 1);
  await out.close();
  await client.close();
});

Deno.test("AdppClient: frames of one turn beyond PIPE_BUF bytes are split into writes of at most PIPE_BUF", async () => {
  const stdin = closingStdin(100);
  const client = new AdppClient(new ReadableStream<Uint8Array>(), stdin.writable, {
    clock: new ManualClock(),
  });
  const ids = Array.from({ length: 40 }, (_, i) => `device-with-a-long-name-${i}`.padEnd(200, "x"));
  const requests = ids.map((d) => client.request("read_signals", { device_id: d }, 10_000));
  await waitFor(
    "every frame written",
    () => stdin.written.reduce((n, w) => n + splitFrames(w).length, 0) === 40,
  );
  assert.ok(stdin.written.length > 1);
  for (const w of stdin.written) assert.ok(w.length <= PIPE_BUF, `a write of ${w.length} bytes`);
  const sent = stdin.written.flatMap((w) =>
    splitFrames(w).map((f) => decodeRequest(f).read_signals?.device_id)
  );
  assert.deepEqual(sent, ids, "in request order");
  await client.close();
  for (const r of requests) await r.catch(() => {});
});

Deno.test("AdppClient: the outbox the client frames requests into is its own: a burst that grew it, and the turns after, reach the writer intact", async () => {
  // The client frames each turn's requests into a buffer it keeps from turn to turn; a writer may
  // keep what it was given (a pipe's queue): every write must stay as it was when written.
  const stdin = closingStdin(Infinity);
  const client = new AdppClient(new ReadableStream<Uint8Array>(), stdin.writable, {
    clock: new ManualClock(),
    maxInFlight: 256,
  });
  const sent: string[] = [];
  const pending: Promise<unknown>[] = [];
  const turn = async (deviceIds: string[]) => {
    for (const d of deviceIds) {
      sent.push(d);
      pending.push(client.request("read_signals", { device_id: d }, 10_000).catch(() => {}));
    }
    await waitFor(
      `${sent.length} frames written`,
      () => stdin.written.reduce((n, w) => n + splitFrames(w).length, 0) === sent.length,
    );
  };
  // More frames and bytes than an emptied outbox keeps, then turns of a poll pass's size.
  await turn(Array.from({ length: 100 }, (_, i) => `burst-${i}`.padEnd(1000, "x")));
  for (let t = 0; t < 6; t++) await turn([`t${t}-a`, `t${t}-b`, `t${t}-c`]);
  await turn(Array.from({ length: 20 }, (_, i) => `again-${i}`.padEnd(300, "y")));
  for (let t = 6; t < 9; t++) await turn([`t${t}-a`]);
  const got = stdin.written.flatMap((w) =>
    splitFrames(w).map((f) => decodeRequest(f).read_signals?.device_id)
  );
  assert.deepEqual(got, sent);
  await client.close();
  await Promise.all(pending);
});

Deno.test("AdppClient: a write that fails because the provider exited does not fail a request whose answer is still to be read", async () => {
  // The race: the provider answers a call and exits; a poll written before the runtime has read
  // that answer fails with EPIPE. The answer is in the pipe: the call gets it, the poll alone
  // fails, and the session ends once no written request awaits its answer.
  const stdin = closingStdin(1);
  const stdout = new TransformStream<Uint8Array, Uint8Array>();
  const client = new AdppClient(stdout.readable, stdin.writable, { clock: new ManualClock() });
  const call = client.request("call", { device_id: "chaos0", function_id: 6 }, 10_000);
  await written(stdin, 1); // the call went out in a write of its own (an earlier turn)
  const poll = client.request("read_signals", { device_id: "motor0" }, 10_000);
  await stdin.writeFailed;
  await assert.rejects(poll, (e) => {
    assert.ok(e instanceof RuntimeError);
    assert.equal(e.code, "UNAVAILABLE");
    assert.match(e.message, /write failed: Broken pipe/);
    return true;
  });
  assert.equal(client.open, false, "nothing more can be written");
  await assert.rejects(
    client.request("list_devices", {}, 10_000),
    (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE",
  );
  assert.equal(stdin.written.length, 1, "no frame is written after the failed one");
  const out = stdout.writable.getWriter();
  await out.write(encodeFrame(encodeResponse({ request_id: 1, status: OK, call: {} })));
  assert.deepEqual(await call, {});
  // Nothing written waits for an answer any more: the session ends (and stops reading stdout).
  const end = await client.ended;
  assert.equal(end.reason, "transport_error");
  assert.match(end.message, /^write failed: Broken pipe/);
  await client.close();
});

Deno.test("AdppClient: after a failed write, stdout reaching its end fails the requests still waiting", async () => {
  const stdin = closingStdin(1);
  const stdout = new TransformStream<Uint8Array, Uint8Array>();
  const client = new AdppClient(stdout.readable, stdin.writable, { clock: new ManualClock() });
  const first = client.request("list_devices", {}, 10_000);
  await written(stdin, 1);
  const failing = client.request("list_devices", {}, 10_000);
  await assert.rejects(failing, (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE");
  await stdout.writable.close(); // the provider exited without answering
  await assert.rejects(first, (e) => {
    assert.ok(e instanceof RuntimeError);
    assert.equal(e.code, "UNAVAILABLE");
    assert.match(e.message, /write failed: Broken pipe/);
    return true;
  });
  assert.equal((await client.ended).reason, "transport_error");
  await client.close();
});

Deno.test("AdppClient: a failed write with no other request waiting ends the session at once", async () => {
  const stdin = closingStdin(0);
  const client = new AdppClient(new ReadableStream<Uint8Array>(), stdin.writable, {
    clock: new ManualClock(),
  });
  await assert.rejects(
    client.request("list_devices", {}, 10_000),
    (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE",
  );
  assert.equal((await client.ended).reason, "transport_error");
  await client.close();
});

Deno.test("AdppClient: after a failed write, a written request that is never answered ends by its deadline, and the session with it", async () => {
  const stdin = closingStdin(1);
  const clock = new ManualClock();
  const client = new AdppClient(new ReadableStream<Uint8Array>(), stdin.writable, { clock });
  const unanswered = client.request("list_devices", {}, 50);
  await written(stdin, 1);
  const failing = client.request("list_devices", {}, 10_000);
  await assert.rejects(failing, (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE");
  assert.equal(client.open, false);
  clock.advance(49);
  assert.equal(client.inFlight, 1, "the written request waits for its answer until its deadline");
  clock.advance(1);
  await assert.rejects(
    unanswered,
    (e) => e instanceof RuntimeError && e.code === "DEADLINE_EXCEEDED",
  );
  const end = await client.ended;
  assert.equal(end.reason, "transport_error");
  await client.close();
});

Deno.test("AdppClient maps a non-OK status and keeps the session", async () => {
  const p = pair();
  const call = p.client.request("call", { device_id: "x" }, 1000);
  const req = await p.nextRequest();
  await p.reply({
    request_id: req.request_id,
    status: { code: StatusCode.FAILED_PRECONDITION, message: "closed mode" },
  });
  await assert.rejects(call, (e) => {
    assert.ok(e instanceof ProviderStatusError);
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.equal(e.providerCode, StatusCode.FAILED_PRECONDITION);
    assert.match(e.message, /closed mode/);
    return true;
  });
  assert.equal(p.client.open, true);
  await p.end();
});

Deno.test("AdppClient cuts a provider's 100 KB status message to PROVIDER_STATUS_MESSAGE_CHARS and keeps a short one as sent", async () => {
  const p = pair();
  const long = p.client.request("call", { device_id: "x" }, 1000);
  const short = p.client.request("call", { device_id: "x" }, 1000);
  const exact = p.client.request("call", { device_id: "x" }, 1000);
  const kept = 'bus "down"\nERROR not forged here';
  const messages = ["m".repeat(100_000), kept, "e".repeat(PROVIDER_STATUS_MESSAGE_CHARS)];
  for (const message of messages) {
    const req = await p.nextRequest();
    await p.reply({ request_id: req.request_id, status: { code: StatusCode.INTERNAL, message } });
  }
  const [cut, asSent, atBound] = await Promise.all(
    [long, short, exact].map((call) =>
      call.then(() => "answered OK", (e: ProviderStatusError) => e.message)
    ),
  );
  assert.equal(
    cut,
    `provider answered INTERNAL: ${"m".repeat(PROVIDER_STATUS_MESSAGE_CHARS)}\u2026`,
  );
  assert.equal(asSent, `provider answered INTERNAL: ${kept}`);
  assert.equal(atBound, `provider answered INTERNAL: ${messages[2]}`);
  assert.equal(p.client.open, true);
  await p.end();
});

Deno.test("AdppClient: a ReadSignals answered for a 100 KB device id fails with OtherDeviceAnswerError holding that id cut to QUOTED_DEVICE_ID_CHARS, in its message and its details", async () => {
  const p = pair();
  const batch = new SampleBatch(1);
  const failed = new Promise<Error | null>((resolve) =>
    p.client.sendRead(new PreparedRead({ device_id: "tempctl0" }), 1000, batch, resolve)
  );
  const req = await p.nextRequest();
  const other = "x".repeat(100_000);
  await p.reply({
    request_id: req.request_id,
    status: OK,
    read_signals: { device_id: other, values: [{ signal_id: "t", value: { double_value: 1 } }] },
  });
  const err = await failed;
  assert.ok(err instanceof OtherDeviceAnswerError);
  const cut = `${"x".repeat(QUOTED_DEVICE_ID_CHARS)}\u2026`;
  assert.equal(err.details?.answered_device_id, cut);
  assert.equal(err.answeredDeviceId, cut);
  assert.equal(
    err.message,
    `provider answered a ReadSignals of device "tempctl0" for device ${JSON.stringify(cut)}`,
  );
  assert.equal(batch.count, 0, "the other device's samples are not given");
  assert.equal(p.client.open, true);
  await p.end();
});

Deno.test("AdppClient: OtherDeviceAnswerError's message escapes DEL and C1 controls in the answered device id", async () => {
  const p = pair();
  const failed = new Promise<Error | null>((resolve) =>
    p.client.sendRead(
      new PreparedRead({ device_id: "tempctl0" }),
      1000,
      new SampleBatch(1),
      resolve,
    )
  );
  const req = await p.nextRequest();
  // DEL, CSI (a terminal's escape sequence start), NEL (a line break) and U+2028.
  await p.reply({
    request_id: req.request_id,
    status: OK,
    read_signals: { device_id: "a\u007fb\u009b2J\u0085c\u2028d", values: [] },
  });
  const err = await failed;
  assert.ok(err instanceof OtherDeviceAnswerError);
  assert.equal(
    err.message,
    'provider answered a ReadSignals of device "tempctl0" for device ' +
      '"a\\u007fb\\u009b2J\\u0085c\\u2028d"',
  );
  // The details keep the id as the provider sent it (cut only).
  assert.equal(err.answeredDeviceId, "a\u007fb\u009b2J\u0085c\u2028d");
  await p.end();
});

Deno.test("AdppClient refuses an OK response without the expected payload", async () => {
  const p = pair();
  const call = p.client.request("read_signals", { device_id: "x" }, 1000);
  const req = await p.nextRequest();
  await p.reply({ request_id: req.request_id, status: OK, call: {} });
  await assert.rejects(call, (e) => e instanceof RuntimeError && e.code === "INTERNAL");
  await p.end();
});

Deno.test("AdppClient ends the session on a response id that matches no request", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  await p.reply({ request_id: 99, status: OK, list_devices: {} });
  await assert.rejects(pending, (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE");
  assert.equal((await p.client.ended).reason, "protocol_violation");
  await assert.rejects(p.client.request("list_devices", {}, 100), /session ended/);
  await p.end();
});

Deno.test("AdppClient ends the session on an unparseable frame", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  await p.raw(encodeFrame(new Uint8Array([0xff, 0xff, 0xff])));
  await assert.rejects(pending, /session ended/);
  assert.equal((await p.client.ended).reason, "protocol_violation");
  await p.end();
});

Deno.test("AdppClient ends the session on an oversize frame prefix", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  const prefix = new Uint8Array(4);
  new DataView(prefix.buffer).setUint32(0, 2 * 1024 * 1024, true);
  await p.raw(prefix);
  await assert.rejects(pending, /session ended/);
  const end = await p.client.ended;
  assert.equal(end.reason, "protocol_violation");
  assert.match(end.message, /exceeds/);
  await p.end();
});

Deno.test("AdppClient names text written between frames (a print to stdout), its length prefix split across reads, quoted up to the next frame", async () => {
  const p = pair();
  const first = p.client.request("list_devices", {}, 1000);
  const req = await p.nextRequest();
  const text = new TextEncoder().encode('moving to "12.5"\n');
  const answer = encodeFrame(encodeResponse({ request_id: req.request_id, status: OK }));
  // An answer, then the text: its first two bytes end the read, the rest comes in the next one.
  await p.raw(Uint8Array.from([...answer, ...text.subarray(0, 2)]));
  await assert.rejects(first, (e) => e instanceof RuntimeError && e.code === "INTERNAL");
  const pending = p.client.request("list_devices", {}, 1000);
  // The rest of the text, and the answer the provider wrote after it: quoted up to that frame
  // (whose length prefix starts with a control byte here: 12, a form feed).
  const second = await p.nextRequest();
  const after = encodeFrame(
    encodeResponse({
      request_id: second.request_id,
      status: { code: StatusCode.OK, message: "okay" },
    }),
  );
  assert.equal(after[0], 12);
  await p.raw(Uint8Array.from([...text.subarray(2), ...after]));
  await assert.rejects(pending, /session ended/);
  const end = await p.client.ended;
  assert.equal(end.reason, "protocol_violation");
  assert.equal(
    end.message,
    'bad frame: frame length 1769369453 exceeds 1048576: text, not an ADPP frame (printed to the stream?): "moving to \\"12.5\\"\\n"',
  );
  await p.end();
});

Deno.test("AdppClient quotes at most PROVIDER_TEXT_CHARS of text written between frames", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  await p.raw(new TextEncoder().encode(`${"y".repeat(10_000)}\u00e9 and more`));
  await assert.rejects(pending, /session ended/);
  const end = await p.client.ended;
  assert.equal(
    end.message,
    `bad frame: frame length 2038004089 exceeds 1048576: text, not an ADPP frame (printed to the stream?): "${
      "y".repeat(PROVIDER_TEXT_CHARS)
    }\u2026"`,
  );
  await p.end();
});

Deno.test("AdppClient does not call an oversize prefix of binary bytes text", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  await p.raw(Uint8Array.from([0x00, 0x00, 0x20, 0x00, 0x41, 0x42]));
  await assert.rejects(pending, /session ended/);
  assert.equal((await p.client.ended).message, "bad frame: frame length 2097152 exceeds 1048576");
  await p.end();
});

Deno.test("AdppClient reports EOF from the provider", async () => {
  const p = pair();
  const pending = p.client.request("list_devices", {}, 1000);
  await p.nextRequest();
  await p.end();
  await assert.rejects(pending, /session ended/);
});

Deno.test("AdppClient closes the provider's stdin when the session ends without close() (the provider exited)", async () => {
  const fromProvider = new TransformStream<Uint8Array, Uint8Array>();
  const toProvider = new TransformStream<Uint8Array, Uint8Array>();
  const client = new AdppClient(fromProvider.readable, toProvider.writable, {
    clock: new ManualClock(),
  });
  const stdin = toProvider.readable.getReader();
  await fromProvider.writable.close(); // stdout ends: the provider is gone
  assert.equal((await client.ended).reason, "eof");
  assert.deepEqual(await stdin.read(), { done: true, value: undefined });
});

Deno.test("mapProviderCode follows the contract's HTTP mapping", () => {
  const table: Array<[number, string]> = [
    [StatusCode.INVALID_ARGUMENT, "INVALID_ARGUMENT"],
    [StatusCode.OUT_OF_RANGE, "INVALID_ARGUMENT"],
    [StatusCode.NOT_FOUND, "NOT_FOUND"],
    [StatusCode.FAILED_PRECONDITION, "FAILED_PRECONDITION"],
    [StatusCode.UNAVAILABLE, "UNAVAILABLE"],
    [StatusCode.RESOURCE_EXHAUSTED, "UNAVAILABLE"],
    [StatusCode.DEADLINE_EXCEEDED, "DEADLINE_EXCEEDED"],
    [StatusCode.UNIMPLEMENTED, "INTERNAL"],
    [StatusCode.INTERNAL, "INTERNAL"],
    [StatusCode.DATA_LOSS, "INTERNAL"],
    [StatusCode.UNSPECIFIED, "INTERNAL"],
  ];
  for (const [wire, code] of table) assert.equal(mapProviderCode(wire), code, `wire ${wire}`);
});

Deno.test("AdppClient reads a provider's byte stream into its own reused buffer (BYOB)", async () => {
  // A provider's stdout is a byte stream. Read with a default reader, Deno allocates a fresh
  // 64 KiB buffer for every read (every poll answer); the client must offer its own instead.
  const answers = [1, 2, 3].map((id) =>
    encodeFrame(encodeResponse({ request_id: id, status: OK, get_health: {} }))
  );
  const views: number[] = [];
  const toProvider = new TransformStream<Uint8Array, Uint8Array>();
  const drain = toProvider.readable.pipeTo(new WritableStream());
  const client = new AdppClient(byteStream(answers, views), toProvider.writable, {
    clock: new ManualClock(),
  });
  for (let i = 0; i < 3; i++) assert.deepEqual(await client.request("get_health", {}, 1000), {});
  assert.equal(views.length, 3);
  assert.deepEqual(new Set(views), new Set([FRAME_READ_CHUNK_BYTES]));
  await client.close();
  await drain;
});

Deno.test("AdppClient dispatches every answer of one read in the same turn, in order (no promise per frame)", async () => {
  // A provider answers a poll pass in one write; the client hands all its answers over before
  // any other microtask runs.
  const answers = concatAll(
    [1, 2, 3].map((id) =>
      encodeFrame(encodeResponse({ request_id: id, status: OK, get_health: {} }))
    ),
  );
  const toProvider = new TransformStream<Uint8Array, Uint8Array>();
  const drain = toProvider.readable.pipeTo(new WritableStream());
  const client = new AdppClient(byteStream([answers]), toProvider.writable, {
    clock: new ManualClock(),
  });
  const order: string[] = [];
  const all = new Promise<void>((resolve) => {
    for (const id of [1, 2, 3]) {
      client.send("get_health", {}, 1000, (err, body) => {
        assert.equal(err, null);
        assert.deepEqual(body, {});
        order.push(`reply ${id}`);
        if (id === 1) queueMicrotask(() => order.push("microtask"));
        if (id === 3) resolve();
      });
    }
  });
  await all;
  await Promise.resolve();
  assert.deepEqual(order, ["reply 1", "reply 2", "reply 3", "microtask"]);
  await client.close();
  await drain;
});

Deno.test("AdppClient.send: a refusal is replied in a microtask, never synchronously", async () => {
  const p = pair();
  await p.end(); // the session has ended: every request is refused at once
  let replied: Error | null = null;
  const got = new Promise<void>((resolve) =>
    p.client.send("get_health", {}, 1000, (err) => {
      replied = err;
      resolve();
    })
  );
  assert.equal(replied, null, "not replied during send");
  await got;
  assert.ok(replied! instanceof RuntimeError);
  assert.equal((replied as RuntimeError).code, "UNAVAILABLE");
});

Deno.test("AdppClient: a reply that throws is reported as uncaught and the session goes on", async () => {
  const p = pair();
  const uncaught: unknown[] = [];
  const onError = (e: ErrorEvent) => {
    e.preventDefault();
    uncaught.push(e.error);
  };
  globalThis.addEventListener("error", onError);
  try {
    p.client.send("get_health", {}, 1000, () => {
      throw new Error("listener bug");
    });
    const req = await p.nextRequest();
    await p.reply({ request_id: req.request_id, status: OK, get_health: {} });
    await waitFor("the reply's error reported", () => uncaught.length === 1);
    assert.equal((uncaught[0] as Error).message, "listener bug");
    assert.equal(p.client.open, true);
    const next = p.client.request("get_health", {}, 1000);
    const req2 = await p.nextRequest();
    await p.reply({ request_id: req2.request_id, status: OK, get_health: {} });
    assert.deepEqual(await next, {});
  } finally {
    globalThis.removeEventListener("error", onError);
    await p.end();
  }
});

function concatAll(parts: Uint8Array[]): Uint8Array {
  const out = new Uint8Array(parts.reduce((n, x) => n + x.length, 0));
  let at = 0;
  for (const x of parts) {
    out.set(x, at);
    at += x.length;
  }
  return out;
}
