/**
 * The poll path's ReadSignals decoder (src/adpp/read_signals.ts) against the generated decoder:
 * on random answers of every value kind, on hand-made wire bytes the generated encoder never
 * writes (unknown fields at every level, repeated singular fields, known field numbers with
 * another wire type, 64-bit integers beyond 2^53, fields out of order) and on every truncation
 * and byte flip of them, the fast path either declines (the generated decoder then decides) or
 * gives exactly what the generated decoder's objects give.
 */
import assert from "node:assert/strict";
import { ADPP_SCHEMA_JSON } from "../../src/adpp/_schema.ts";
import {
  AdppClient,
  decodeReadSignalsInto,
  decodeResponse,
  encodeFrame,
  encodeRequest,
  encodeResponse,
  fastResponseId,
  PreparedRead,
  ProviderStatusError,
  SampleBatch,
  StatusCode,
  timestampToMs,
  typedValueFromWire,
  type WireResponse,
  type WireSignalValue,
} from "../../src/adpp/mod.ts";
import { sameValue, type TypedValue } from "../../src/common/mod.ts";
import { ReferenceCodec, registerValueWrapper } from "./_reference_codec.ts";
import { prng, RandomMessages } from "./_random_message.ts";
import { wireRepeats, wireTypeAgrees } from "./_wire_reference.ts";

const PKG = "anolis.deviceprovider.v1";
registerValueWrapper(`${PKG}.Value`);
const ref = new ReferenceCodec(ADPP_SCHEMA_JSON);

// ---- a raw protobuf writer: bytes the generated encoder would never write ----

function varint(x: bigint): number[] {
  let v = BigInt.asUintN(64, x);
  const out: number[] = [];
  while (v >= 0x80n) {
    out.push(Number(v & 0x7fn) | 0x80);
    v >>= 7n;
  }
  out.push(Number(v));
  return out;
}
const tag = (field: number, wt: number) => varint(BigInt(field * 8 + wt));
const fVarint = (field: number, x: bigint | number) => [...tag(field, 0), ...varint(BigInt(x))];
const fLen = (field: number, bytes: number[]) => [
  ...tag(field, 2),
  ...varint(BigInt(bytes.length)),
  ...bytes,
];
const fDouble = (field: number, x: number) => [
  ...tag(field, 1),
  ...new Uint8Array(new Float64Array([x]).buffer),
];
const fFixed32 = (field: number, x: number) => [
  ...tag(field, 5),
  ...new Uint8Array(new Uint32Array([x >>> 0]).buffer),
];
const utf8 = (s: string) => [...new TextEncoder().encode(s)];

const BIG = [
  0n,
  1n,
  -1n,
  2n ** 53n - 1n,
  2n ** 53n,
  2n ** 53n + 1n,
  -(2n ** 53n) - 1n,
  2n ** 63n - 1n,
  -(2n ** 63n),
  2n ** 64n - 1n,
  2n ** 32n,
  300n,
];
const DOUBLES = [0, -0, 1.5, -2.25, NaN, Infinity, -Infinity, 1e308, 5e-324, 2 ** 53 + 2];
const STRS = ["", "a", "temp", "é", "😀", "\uFEFFx", "z".repeat(30)];

class RawGen {
  readonly #rnd: () => number;
  constructor(seed: number) {
    this.#rnd = prng(seed);
  }
  int(n: number): number {
    return Math.floor(this.#rnd() * n);
  }
  chance(p: number): boolean {
    return this.#rnd() < p;
  }
  pick<T>(xs: readonly T[]): T {
    return xs[this.int(xs.length)]!;
  }

  /** An unknown field (a number no message here uses), of any valid wire type. */
  unknown(): number[] {
    const field = 50 + this.int(1000);
    switch (this.int(4)) {
      case 0:
        return fVarint(field, this.pick(BIG));
      case 1:
        return fDouble(field, this.pick(DOUBLES));
      case 2:
        return fLen(field, utf8(this.pick(STRS)));
      default:
        return fFixed32(field, this.int(2 ** 32));
    }
  }

  /** A known field number with a wire type other than its own (skipped as unknown). */
  wrongType(field: number, own: number): number[] {
    const wt = this.pick([0, 1, 2, 5].filter((w) => w !== own));
    if (wt === 0) return fVarint(field, this.pick(BIG));
    if (wt === 1) return fDouble(field, this.pick(DOUBLES));
    if (wt === 2) return fLen(field, [1, 2, 3].slice(0, this.int(4)));
    return fFixed32(field, this.int(2 ** 32));
  }

  /** The fields of a message, shuffled, with unknown fields among them. */
  fields(parts: number[][]): number[] {
    const all = [...parts];
    for (let n = this.int(3); n > 0; n--) all.push(this.unknown());
    for (let i = all.length - 1; i > 0; i--) {
      const j = this.int(i + 1);
      [all[i], all[j]] = [all[j]!, all[i]!];
    }
    return all.flat();
  }

  value(): number[] {
    const parts: number[][] = [];
    for (let n = this.int(3); n > 0; n--) {
      switch (this.int(9)) {
        case 0:
          parts.push(fVarint(1, this.pick([0n, 1n, 2n, 3n, 4n, 5n, 6n, 99n, -1n])));
          break;
        case 1:
          parts.push(fVarint(2, this.pick([0n, 1n, 2n, 2n ** 40n])));
          break;
        case 2:
          parts.push(fVarint(3, this.pick(BIG)));
          break;
        case 3:
          parts.push(fVarint(4, this.pick(BIG)));
          break;
        case 4:
          parts.push(fDouble(5, this.pick(DOUBLES)));
          break;
        case 5:
          parts.push(fLen(6, utf8(this.pick(STRS))));
          break;
        case 6:
          parts.push(fLen(7, [0, 255, 7].slice(0, this.int(4))));
          break;
        case 7:
          parts.push(this.wrongType(1 + this.int(7), 0));
          break;
        default:
          parts.push(this.wrongType(5, 1));
      }
    }
    return this.fields(parts);
  }

  timestamp(): number[] {
    const parts: number[][] = [];
    for (let n = this.int(3); n > 0; n--) {
      if (this.chance(0.45)) parts.push(fVarint(1, this.pick(BIG)));
      else if (this.chance(0.8)) parts.push(fVarint(2, this.pick([0n, 1n, 999999999n, -1n])));
      else parts.push(this.wrongType(1, 0));
    }
    return this.fields(parts);
  }

  signalValue(): number[] {
    const parts: number[][] = [];
    for (let n = this.int(6); n > 0; n--) {
      switch (this.int(7)) {
        case 0:
          parts.push(fLen(1, utf8(this.pick(STRS))));
          break;
        case 1:
          parts.push(fLen(2, this.value()));
          break;
        case 2:
          parts.push(fLen(3, this.timestamp()));
          break;
        case 3:
          parts.push(fVarint(4, this.pick([0n, 1n, 2n, 3n, 4n, 77n, -5n])));
          break;
        case 4:
          parts.push(fLen(5, this.fields([fLen(1, utf8("k")), fLen(2, utf8("v"))])));
          break;
        case 5:
          parts.push(this.wrongType(4, 0));
          break;
        default:
          parts.push(this.wrongType(2, 2));
      }
    }
    return this.fields(parts);
  }

  readSignals(): number[] {
    const parts: number[][] = [];
    if (this.chance(0.7)) parts.push(fLen(1, utf8(this.pick(STRS))));
    for (let n = this.int(5); n > 0; n--) parts.push(fLen(2, this.signalValue()));
    if (this.chance(0.1)) parts.push(this.wrongType(2, 2));
    return this.fields(parts);
  }

  status(): number[] {
    const parts: number[][] = [fVarint(1, this.chance(0.9) ? 1n : this.pick([0n, 11n, 30n]))];
    if (this.chance(0.3)) parts.push(fLen(2, utf8(this.pick(STRS))));
    if (this.chance(0.2)) parts.push(fLen(3, this.fields([fLen(1, utf8("a")), fLen(2, [])])));
    return this.fields(parts);
  }

  response(id: number): Uint8Array {
    const parts: number[][] = [fVarint(1, BigInt(id)), fLen(2, this.status())];
    parts.push(fLen(13, this.readSignals()));
    if (this.chance(0.05)) parts.push(fLen(13, this.readSignals())); // twice: the last wins
    if (this.chance(0.05)) parts.push(fLen(this.pick([10, 14, 15]), [])); // another member
    if (this.chance(0.05)) parts.push(fLen(2, this.status())); // two statuses
    return new Uint8Array(this.fields(parts));
  }
}

// ---- the comparison ----

/** What the generated decoder gives for `bytes`: its response, or the error it throws. */
function generated(bytes: Uint8Array): WireResponse | Error {
  try {
    return decodeResponse(bytes);
  } catch (err) {
    return err as Error;
  }
}

function show(v: unknown): string {
  return Deno.inspect(v, { depth: 6, compact: true });
}

function sameTyped(a: TypedValue | null, b: TypedValue | null): boolean {
  if (a === null || b === null) return a === b;
  return sameValue(a, b) && a.type === b.type &&
    (a.type !== "double" || b.type !== "double" || a.non_finite === b.non_finite);
}

/** Asserts slot `i` of `batch` reads as `sv` reads through convert.ts. */
function assertSample(batch: SampleBatch, i: number, sv: WireSignalValue, what: string): void {
  assert.equal(batch.signalIds[i], sv.signal_id ?? "", `${what}: signal id`);
  assert.equal(batch.qualities[i], sv.quality ?? 0, `${what}: quality`);
  const typed = typedValueFromWire(sv.value);
  const mine = batch.typedValue(i);
  assert.ok(sameTyped(mine, typed), `${what}: value ${show(mine)} vs ${show(typed)}`);
  assert.equal(batch.timestampMs(i), timestampToMs(sv.timestamp), `${what}: timestamp`);
  assert.equal(batch.valueTypes[i], sv.value?.type ?? 0, `${what}: Value.type`);
  if (typed !== null) {
    for (const t of ["bool", "int64", "uint64", "double", "string", "bytes"] as const) {
      assert.equal(batch.typeAgrees(i, t), wireTypeAgrees(sv.value!, t), `${what}: agrees ${t}`);
    }
    // Repeats as wireRepeats does, against the value itself and against others.
    for (const t of [typed, ...PROBES]) {
      assert.equal(batch.repeats(i, t), wireRepeats(t, sv.value), `${what}: repeats ${show(t)}`);
    }
  }
}

const PROBES: TypedValue[] = [
  { type: "double", double: 1.5 },
  { type: "double", double: 0 },
  { type: "bool", bool: true },
  { type: "bool", bool: false },
  { type: "string", string: "temp" },
  { type: "string", string: "" },
  { type: "int64", int64: 1 },
];

/**
 * Checks one answer both ways; returns whether the fast path took it. Declining is always
 * allowed; taking it is allowed only when the generated decoder gives the same samples.
 */
function check(bytes: Uint8Array, what: string): boolean {
  const gen = generated(bytes);
  // The same bytes inside a larger buffer (a frame in the read buffer): the same outcome.
  const padded = new Uint8Array(bytes.length + 7).fill(0xff);
  padded.set(bytes, 3);
  const inPlace = new SampleBatch(1);
  const idInPlace = fastResponseId(padded, 3, 3 + bytes.length);
  const okInPlace = idInPlace >= 0 && decodeReadSignalsInto(padded, inPlace);
  const id = fastResponseId(bytes);
  assert.equal(idInPlace, id, `${what}: id in place`);
  if (id < 0) return false;
  const batch = new SampleBatch(1);
  const ok = decodeReadSignalsInto(bytes, batch);
  assert.equal(okInPlace, ok, `${what}: decoded in place`);
  if (!ok) return false;
  if (gen instanceof Error) {
    assert.fail(`${what}: fast path took bytes the generated decoder refuses: ${gen.message}`);
  }
  assert.equal(id, gen.request_id ?? 0, `${what}: request id`);
  assert.equal(gen.status?.code, StatusCode.OK, `${what}: took a status that is not OK`);
  assert.equal(gen.payload, "read_signals", `${what}: took another payload`);
  const values = gen.read_signals!.values ?? [];
  assert.equal(batch.count, values.length, `${what}: sample count`);
  values.forEach((sv, i) => assertSample(batch, i, sv, `${what} sample ${i} ${show(sv)}`));
  assert.equal(inPlace.count, values.length, `${what}: sample count in place`);
  values.forEach((sv, i) => assertSample(inPlace, i, sv, `${what} in place ${i}`));
  // The fallback's fill reads the same.
  const filled = new SampleBatch(1);
  filled.fillFrom(values);
  values.forEach((sv, i) => assertSample(filled, i, sv, `${what} filled ${i}`));
  return true;
}

Deno.test("ReadSignals fast path: random answers of every value kind read as the generated decoder's", () => {
  const gen = new RandomMessages(0x5a17);
  const type = ref.type(`${PKG}.ReadSignalsResponse`);
  let taken = 0;
  const kinds = new Set<string>();
  for (let n = 0; n < 3000; n++) {
    const body = gen.message(type) as NonNullable<WireResponse["read_signals"]>;
    for (const sv of body.values ?? []) {
      const k = (sv as WireSignalValue | null)?.value;
      if (k && typeof k === "object") {
        for (const m of Object.keys(k)) kinds.add(m);
      }
    }
    let bytes: Uint8Array;
    try {
      bytes = encodeResponse({ request_id: n + 1, status: { code: 1 }, read_signals: body });
    } catch {
      continue; // an object the encoder refuses (a random shape it does not take)
    }
    if (check(bytes, `message ${n}`)) taken++;
  }
  assert.ok(taken > 2500, `the fast path took ${taken} of 3000`);
  for (
    const k of [
      "bool_value",
      "int64_value",
      "uint64_value",
      "double_value",
      "string_value",
      "bytes_value",
    ]
  ) {
    assert.ok(kinds.has(k), `covered ${k}`);
  }
});

Deno.test("ReadSignals fast path: hand-made wire bytes (unknown fields, repeats, wrong wire types, 64-bit edges) read as the generated decoder's", () => {
  const raw = new RawGen(0xbad5eed);
  let taken = 0;
  let declined = 0;
  for (let n = 0; n < 3000; n++) {
    const bytes = raw.response(n + 1);
    if (check(bytes, `raw ${n} ${Array.from(bytes).join(",")}`)) taken++;
    else declined++;
  }
  assert.ok(taken > 2000, `taken ${taken}`);
  assert.ok(declined > 50, `declined ${declined} (other members, statuses not OK, twice)`);
});

Deno.test("ReadSignals fast path: every truncation and byte flip is declined or read as the generated decoder reads it", () => {
  const raw = new RawGen(0xf1ee);
  const rnd = prng(7);
  for (let n = 0; n < 200; n++) {
    const bytes = raw.response(n + 1);
    for (let cut = 0; cut < bytes.length; cut++) {
      check(bytes.subarray(0, cut), `raw ${n} cut ${cut}`);
    }
    for (let k = 0; k < 40; k++) {
      const flipped = bytes.slice();
      const at = Math.floor(rnd() * flipped.length);
      flipped[at] = flipped[at]! ^ (1 << Math.floor(rnd() * 8));
      check(flipped, `raw ${n} flip ${Array.from(flipped).join(",")}`);
    }
  }
});

Deno.test("ReadSignals fast path: a batch refilled by a shorter answer keeps nothing of the longer one", () => {
  const batch = new SampleBatch(1); // grown past its slots too
  const long = encodeResponse({
    request_id: 1,
    status: { code: 1 },
    read_signals: {
      values: [
        { signal_id: "a", value: { string_value: "x" } },
        { signal_id: "b", value: { bytes_value: new Uint8Array([1]) }, timestamp: { seconds: 5 } },
        { signal_id: "c", value: { int64_value: 2n ** 60n + 1n }, quality: 1 },
      ],
    },
  });
  assert.equal(fastResponseId(long), 1);
  assert.ok(decodeReadSignalsInto(long, batch));
  assert.equal(batch.count, 3);
  assert.deepEqual(batch.typedValue(2), { type: "int64", int64: 2n ** 60n + 1n });
  const short = encodeResponse({
    request_id: 2,
    status: { code: 1 },
    read_signals: { values: [{ signal_id: "z" }] },
  });
  assert.equal(fastResponseId(short), 2);
  assert.ok(decodeReadSignalsInto(short, batch));
  assert.equal(batch.count, 1);
  assert.equal(batch.typedValue(0), null);
  assert.equal(batch.timestampMs(0), null);
  assert.deepEqual(batch.refs.filter((r) => r !== undefined), []);
});

// ---- through the client ----

function pipes() {
  const toClient = new TransformStream<Uint8Array, Uint8Array>();
  const toProvider = new TransformStream<Uint8Array, Uint8Array>();
  const writer = toClient.writable.getWriter();
  const clock = {
    monoMs: () => performance.now(),
    setTimer: (fn: () => void, ms: number) => setTimeout(fn, ms),
    clearTimer: (id: unknown) => clearTimeout(id as number),
  };
  const client = new AdppClient(toClient.readable, toProvider.writable, { clock });
  toProvider.readable.pipeTo(new WritableStream()).catch(() => {});
  const answer = (msg: WireResponse | Uint8Array) => {
    const body = msg instanceof Uint8Array ? msg : encodeResponse(msg);
    const frame = new Uint8Array(4 + body.length);
    new DataView(frame.buffer).setUint32(0, body.length, true);
    frame.set(body, 4);
    return writer.write(frame);
  };
  return { client, answer, writer };
}

function read(client: AdppClient, into: SampleBatch): Promise<SampleBatch> {
  return new Promise((resolve, reject) =>
    client.sendRead(
      new PreparedRead({ device_id: "d" }),
      5000,
      into,
      (err, b) => err ? reject(err) : resolve(b!),
    )
  );
}

Deno.test("AdppClient.sendRead: an OK answer lands in the batch; one the fast path leaves, too; an error status rejects", async () => {
  const { client, answer, writer } = pipes();
  const batch = new SampleBatch(2);
  const first = read(client, batch);
  await answer({
    request_id: 1,
    status: { code: 1 },
    read_signals: { values: [{ signal_id: "t", value: { double_value: 21.5 }, quality: 1 }] },
  });
  assert.equal(await first, batch);
  assert.deepEqual(batch.typedValue(0), { type: "double", double: 21.5 });

  // read_signals twice (the last wins): left to the generated decoder, filled from its objects.
  const second = read(client, batch);
  const twice = [
    ...fVarint(1, 2n),
    ...fLen(2, fVarint(1, 1n)),
    ...fLen(13, fLen(2, fLen(1, utf8("old")))),
    ...fLen(13, fLen(2, [...fLen(1, utf8("new")), ...fLen(2, fVarint(2, 1n))])),
  ];
  await answer(new Uint8Array(twice));
  assert.equal(await second, batch);
  assert.equal(batch.count, 1);
  assert.equal(batch.signalIds[0], "new");
  assert.deepEqual(batch.typedValue(0), { type: "bool", bool: true });

  const third = read(client, batch);
  await answer({ request_id: 3, status: { code: 11, message: "no such device" } });
  await assert.rejects(third, (e) => e instanceof ProviderStatusError && e.providerCode === 11);

  // Malformed read_signals bytes end the session as the generated decoder's error says.
  const fourth = read(client, batch);
  await answer(
    new Uint8Array([...fVarint(1, 4n), ...fLen(2, fVarint(1, 1n)), ...fLen(13, [18, 5, 10])]),
  );
  await assert.rejects(fourth, /provider session ended: unparseable response: malformed protobuf/);
  assert.equal((await client.ended).reason, "protocol_violation");
  await writer.close().catch(() => {});
  await client.close();
});

Deno.test("PreparedRead writes each request_id's Request byte for byte as encodeRequest does", () => {
  const payloads = [
    {},
    { device_id: "tempctl0" },
    { device_id: "d", signal_ids: ["a", "b", "é😀"] },
    { device_id: "x".repeat(300), signal_ids: ["s".repeat(200)], min_timestamp: { seconds: 5 } },
  ];
  const ids = [1, 2, 127, 128, 255, 16383, 16384, 2 ** 21, 2 ** 28 - 1, 2 ** 31, 2 ** 32 + 1];
  ids.push(2 ** 35, 2 ** 49 + 3, Number.MAX_SAFE_INTEGER);
  for (const payload of payloads) {
    const prepared = new PreparedRead(payload);
    assert.equal(prepared.error, null);
    for (const id of ids) {
      const want = encodeRequest({ request_id: id, read_signals: payload });
      const out = new Uint8Array(prepared.requestLength(id) + 3);
      const end = prepared.writeRequest(out, 3, id);
      assert.equal(prepared.requestLength(id), want.length, `length of id ${id}`);
      assert.equal(end, 3 + want.length);
      assert.deepEqual(out.subarray(3), want, `bytes of id ${id} ${show(payload)}`);
    }
  }
});

Deno.test("AdppClient.sendRead writes the frames send writes, and refuses a payload encodeRequest refuses as send does", async () => {
  const toProvider = new TransformStream<Uint8Array, Uint8Array>();
  const clock = {
    monoMs: () => performance.now(),
    setTimer: (fn: () => void, ms: number) => setTimeout(fn, ms),
    clearTimer: (id: unknown) => clearTimeout(id as number),
  };
  const client = new AdppClient(new ReadableStream(), toProvider.writable, { clock });
  const payload = { device_id: "d", signal_ids: ["a", "b"] };
  const prepared = new PreparedRead(payload);
  const batch = new SampleBatch();
  const replies: (Error | null)[] = [];
  for (let i = 0; i < 60; i++) {
    client.sendRead(prepared, 60_000, batch, (err) => replies.push(err));
  }
  const written: number[] = [];
  const reader = toProvider.readable.getReader();
  let want: number[] = [];
  for (let id = 1; id <= 60; id++) {
    want = [...want, ...encodeFrame(encodeRequest({ request_id: id, read_signals: payload }))];
  }
  while (written.length < want.length) written.push(...(await reader.read()).value!);
  assert.deepEqual(written, want);
  // A payload the encoder refuses: INVALID_ARGUMENT before anything is written, as send answers.
  const bad = new PreparedRead({ device_id: 7 as unknown as string });
  const viaSend = await new Promise<Error>((resolve) =>
    client.send("read_signals", { device_id: 7 as unknown as string }, 1000, (e) => resolve(e!))
  );
  const viaRead = await new Promise<Error>((resolve) =>
    client.sendRead(bad, 1000, batch, (e) => resolve(e!))
  );
  assert.equal(viaRead.message.replace(/request \d+/, ""), viaSend.message);
  assert.equal((viaRead as { code?: string }).code, "INVALID_ARGUMENT");
  reader.releaseLock();
  await client.close();
  assert.equal(replies.length, 60); // every request replied (the session ended)
});
