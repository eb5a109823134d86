/**
 * `sparkplug.store_forward.max_messages: 0` (or a `max_bytes` below one DDATA) keeps nothing:
 * every DDATA while the broker is away is dropped at once. The drops are WARNed once per stretch,
 * as the docs say, not twice per poll pass (a "full" WARN and a "drained" line for every DDATA
 * dropped). The node among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { MAX_IN_FLIGHT } from "../../src/sparkplug/mod.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { deviceCaps, edgeNodeRig, signalSpec } from "./_edge_node_rig.ts";

const P = "p0";

function update(value: number): PublishedEvent {
  return {
    id: 1,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: "dev0",
      signal_id: "a",
      value: { type: "double", double: value },
      quality: "OK",
      timestamp_ms: 0,
    },
  };
}

for (
  const storeForward of [{ maxMessages: 0, maxBytes: 16777216 }, { maxMessages: 10, maxBytes: 8 }]
) {
  Deno.test(`store and forward that keeps nothing (${JSON.stringify(storeForward)}) WARNs its drops once per outage`, async () => {
    const { log, lines } = capturingLogger();
    const caps = deviceCaps(P, "dev0", { signals: [signalSpec("a", "double")] });
    const r = edgeNodeRig({
      providers: [{ id: P, available: true, devices: [caps] }],
      storeForward,
      log,
    });
    await r.online();
    r.session.down();
    await flushMicrotasks();
    for (let i = 0; i < 20; i++) {
      r.emit(update(i));
      await flushMicrotasks();
    }
    assert.equal(r.node.counts.storeDropped, 20);
    const sf = lines.filter((l) => l.includes("store-and-forward"));
    assert.equal(sf.length, 1, sf.join("\n"));
    assert.match(sf[0]!, /^WARN\b.*store-and-forward full/);
    // Back online: the stretch ends (one line), and the next outage is WARNed again.
    await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
    r.session.up();
    await flushMicrotasks();
    r.emit(update(100));
    await flushMicrotasks();
    const drained = lines.filter((l) => l.includes("store-and-forward drained"));
    assert.equal(drained.length, 1, lines.join("\n"));
    r.session.down();
    await flushMicrotasks();
    r.emit(update(101));
    await flushMicrotasks();
    assert.equal(lines.filter((l) => l.includes("store-and-forward full")).length, 2);
    await r.stop();
  });
}

Deno.test("store and forward that keeps nothing WARNs its drops once while the writes in flight are full", async () => {
  const { log, lines } = capturingLogger();
  const caps = deviceCaps(P, "dev0", { signals: [signalSpec("a", "double")] });
  const r = edgeNodeRig({
    providers: [{ id: P, available: true, devices: [caps] }],
    storeForward: { maxMessages: 0, maxBytes: 16777216 },
    log,
    hold: true,
  });
  await r.online();
  for (let i = 0; r.session.inFlight < MAX_IN_FLIGHT; i++) {
    r.emit(update(i));
    await flushMicrotasks();
  }
  for (let i = 0; i < 20; i++) {
    r.emit(update(-i));
    await flushMicrotasks();
  }
  assert.equal(r.node.counts.storeDropped, 20);
  const sf = lines.filter((l) => l.includes("store-and-forward"));
  assert.equal(sf.length, 1, sf.slice(0, 6).join("\n"));
  await r.stop();
});
