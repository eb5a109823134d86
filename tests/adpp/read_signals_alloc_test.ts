/**
 * The poll path's ReadSignals decoding allocates nothing per sample (src/adpp/read_signals.ts).
 * A file of its own: the random answers of read_signals_test.ts (bigints, bytes, non-ASCII text)
 * leave the decoder's type feedback polymorphic, and the code V8 then makes boxes a few numbers;
 * what this pins is the decoding of a provider's ordinary answers.
 */
import assert from "node:assert/strict";
import {
  decodeReadSignalsInto,
  encodeResponse,
  fastResponseId,
  PreparedRead,
  SampleBatch,
  timestampToMs,
  typedValueFromWire,
  type WireSignalValue,
} from "../../src/adpp/mod.ts";
import { sameValue } from "../../src/common/mod.ts";

Deno.test("decoding a ReadSignals answer into its SampleBatch allocates nothing per sample, nor does writing a PreparedRead (the poll path, every poll)", () => {
  const values: WireSignalValue[] = [];
  for (let i = 0; i < 10; i++) {
    values.push({
      signal_id: `sig${i}`,
      value: i % 4 === 0
        ? { type: 4, double_value: 20 + i * 0.37 }
        : i % 4 === 1
        ? { type: 2, int64_value: 1_000_000_007 * i }
        : i % 4 === 2
        ? { type: 1, bool_value: true }
        : { type: 5, string_value: "running" },
      timestamp: { seconds: 1_764_000_000 + i, nanos: 123_456_789 },
      quality: 1,
    });
  }
  const bytes = encodeResponse({
    request_id: 77,
    status: { code: 1 },
    read_signals: { device_id: "tempctl0", values },
  });
  const batch = new SampleBatch(10);
  const prepared = new PreparedRead({ device_id: "tempctl0", signal_ids: ["a", "b", "c"] });
  const out = new Uint8Array(256);
  const rounds = 2000; // 20 000 samples: little enough that no scavenge hides garbage
  const run = () => {
    for (let r = 0; r < rounds; r++) {
      if (fastResponseId(bytes) !== 77 || !decodeReadSignalsInto(bytes, batch)) throw new Error();
      prepared.writeRequest(out, 0, 1_000 + r);
    }
  };
  for (let i = 0; i < 20; i++) run(); // optimised before measuring
  // The median change of three passes (one can see a scavenge or code installed by V8); a
  // change either way counts: garbage shows as growth, or as a drop when it set off a scavenge.
  const growths: number[] = [];
  for (let pass = 0; pass < 3; pass++) {
    const before = Deno.memoryUsage().heapUsed;
    run();
    growths.push(Deno.memoryUsage().heapUsed - before);
  }
  const grown = growths.map(Math.abs).sort((a, b) => a - b)[1];
  // The generated decoder's three objects per sample would be well over 1 MB per pass.
  assert.ok(grown! < 100_000, `heap grew by ${growths.join(", ")} bytes over 20000 samples`);
  assert.equal(batch.count, 10);
  values.forEach((sv, i) => {
    assert.equal(batch.signalIds[i], sv.signal_id);
    assert.ok(sameValue(batch.typedValue(i)!, typedValueFromWire(sv.value)!), `value ${i}`);
    assert.equal(batch.timestampMs(i), timestampToMs(sv.timestamp));
  });
});
