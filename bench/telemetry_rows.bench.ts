/**
 * Micro-benchmark of the telemetry work done per signal change while telemetry is on: a
 * state_update event -> rowForEvent -> formatRow (one line-protocol line). The writer runs this
 * for every published change, i.e. on every poll of a noisy signal.
 * Run: `deno bench --allow-all bench/telemetry_rows.bench.ts`. Not a test; no timing is asserted.
 */
import type { RuntimeEvent } from "../src/events/mod.ts";
import { formatRow, MEASUREMENT_NAMES, rowForEvent } from "../src/telemetry/mod.ts";

const EVENTS: RuntimeEvent[] = Array.from({ length: 100 }, (_, i) => ({
  kind: "state_update",
  provider_id: "sim0",
  device_id: "analogsensor0",
  signal_id: `ch${i}`,
  value: { type: "double", double: 24.5 + i * 0.001 },
  quality: "OK",
  timestamp_ms: 1760000000000 + i,
}));

let sink = 0;

Deno.bench("rowForEvent + formatRow, 100 double signal changes (measurement_names runtime)", () => {
  const names = MEASUREMENT_NAMES.runtime;
  for (const e of EVENTS) sink += formatRow(rowForEvent("lab1", e, names)!)!.length;
});

Deno.bench("rowForEvent + formatRow, 100 double signal changes (measurement_names anolis)", () => {
  const names = MEASUREMENT_NAMES.anolis;
  for (const e of EVENTS) sink += formatRow(rowForEvent("lab1", e, names)!)!.length;
});

globalThis.addEventListener("unload", () => {
  if (sink < 0) console.log(sink);
});
