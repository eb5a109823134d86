/**
 * `sparkplug.max_message_bytes`: a metric left out of a DDATA/NDATA because alone it makes a
 * message over the bound is WARNed once per device (not once per process: a second device's was
 * never said), for at most MAX_TOO_LARGE_DEVICES_WARNED devices, then one line says the rest are
 * not logged; every one is counted (runtime_sparkplug_too_large_dropped_total). The node runs
 * among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { MAX_TOO_LARGE_DEVICES_WARNED } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { deviceCaps, edgeNodeRig, oneDevice, signalSpec } from "./_edge_node_rig.ts";

const P = "p";
const HUGE = "x".repeat(2000); // alone over a bound of 1024

function update(deviceId: string, text: string, id: number): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: deviceId,
      signal_id: "s",
      value: { type: "string", string: text },
      quality: "OK",
      timestamp_ms: 0,
    },
  } as PublishedEvent;
}

function rig(devices: number) {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: [{
      id: P,
      available: true,
      devices: Array.from(
        { length: devices },
        (_, i) => deviceCaps(P, `d${i}`, { signals: [signalSpec("s", "string")] }),
      ),
    }],
    log,
    maxMessageBytes: 1024,
  });
  const warns = () => lines.filter((l) => l.startsWith("WARN") && /left out/.test(l));
  return { r, warns };
}

Deno.test("SparkplugEdgeNode: a metric left out for its size is WARNed once per device, each counted", async () => {
  const { r, warns } = rig(2);
  await r.online();
  let id = 0;
  for (let round = 0; round < 3; round++) {
    r.emit(update("d0", HUGE + round, ++id));
    r.emit(update("d1", HUGE + round, ++id));
    await flushMicrotasks();
  }
  assert.equal(r.node.counts.tooLargeDropped, 6);
  const said = warns();
  assert.equal(said.length, 2, said.join("\n"));
  assert.match(said[0]!, /^WARN .*DDATA metric "s" of "p:d0" left out/);
  assert.match(said[1]!, /^WARN .*DDATA metric "s" of "p:d1" left out/);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: beyond MAX_TOO_LARGE_DEVICES_WARNED devices one line says further devices' are not logged", async () => {
  const { r, warns } = rig(MAX_TOO_LARGE_DEVICES_WARNED + 2);
  await r.online();
  let id = 0;
  for (let i = 0; i < MAX_TOO_LARGE_DEVICES_WARNED + 2; i++) r.emit(update(`d${i}`, HUGE, ++id));
  await flushMicrotasks();
  assert.equal(r.node.counts.tooLargeDropped, MAX_TOO_LARGE_DEVICES_WARNED + 2);
  const said = warns();
  assert.equal(said.length, MAX_TOO_LARGE_DEVICES_WARNED + 1);
  assert.match(
    said.at(-1)!,
    new RegExp(`^WARN .*more than ${MAX_TOO_LARGE_DEVICES_WARNED} devices`),
  );
  await r.stop();
});

Deno.test("SparkplugEdgeNode: the WARN of a metric left out for its size names the whole metric, a NUL in its name included", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: oneDevice(P, "d0", { signals: [signalSpec("s\u0000t", "string")] }),
    log,
    maxMessageBytes: 1024,
  });
  await r.online();
  const event = update("d0", HUGE, 1);
  r.emit({ ...event, event: { ...event.event, signal_id: "s\u0000t" } } as PublishedEvent);
  await flushMicrotasks();
  assert.equal(r.node.counts.tooLargeDropped, 1);
  const said = lines.filter((l) => l.startsWith("WARN") && /left out/.test(l));
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(said[0]!, /^WARN .*DDATA metric "s\\u0000t" of "p:d0" left out/);
  await r.stop();
});
