/**
 * The heap the telemetry writer's point memory (PointSequencer, src/telemetry/_point_sequencer.ts)
 * holds once full: it remembers the last MAX_REMEMBERED_POINTS (series, millisecond) pairs of
 * the rows it wrote, which any run with telemetry on reaches after that many rows. Feeds it
 * 3 x MAX_REMEMBERED_POINTS signal rows of realistic lines (10 providers, 4 devices) and prints
 * the heap it holds after a full GC, in MiB.
 *
 *   deno run -A --v8-flags=--expose-gc bench/telemetry_points_heap.ts
 */
import { MAX_REMEMBERED_POINTS, PointSequencer } from "../src/telemetry/_point_sequencer.ts";

// deno-lint-ignore no-explicit-any
const gc = (globalThis as any).gc as (() => void) | undefined;
if (gc === undefined) {
  console.error("run with --v8-flags=--expose-gc");
  Deno.exit(2);
}
const T0 = 1_733_612_345_678;
const line = (i: number) =>
  `runtime_signal,runtime=demo,provider_id=sim${i % 10},device_id=tempctl${i % 4},` +
  `signal_id=tc1_temp value=${(20 + Math.random()).toFixed(6)},quality="OK" ${T0 + i}`;

gc();
const before = Deno.memoryUsage().heapUsed;
const points = new PointSequencer();
let bytes = 0;
for (let i = 0; i < 3 * MAX_REMEMBERED_POINTS; i++) bytes += points.distinct(line(i)).length;
gc();
const after = Deno.memoryUsage().heapUsed;
// (Read after the GC: the sequencer is alive when the heap is measured.)
points.useDatabase("kept");
console.log(
  `point memory full (${MAX_REMEMBERED_POINTS} points, ${bytes} bytes of lines fed): ` +
    `${((after - before) / 1048576).toFixed(2)} MiB of heap`,
);
