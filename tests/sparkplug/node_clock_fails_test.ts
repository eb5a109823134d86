/**
 * A node metric change (the mode, the e-stop latch) whose wall-clock read fails at the node's own
 * read too (#publishNode, #keepNode: the clock fails a third time in a row, after the two reads
 * of the change's announcement) is not left until some other node change: it is tried again in
 * NODE_CLOCK_RETRY_MS, WARNed once (not counted as an internal error), and reaches the host (or,
 * while the node is away, its history) once the clock works.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts); its wall clock throws while
 * the test says so.
 */
import assert from "node:assert/strict";
import type { PublishedEvent } from "../../src/events/mod.ts";
import { NODE_CLOCK_RETRY_MS } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const modeChange: PublishedEvent = {
  id: 1,
  event: { kind: "mode_change", previous_mode: "IDLE", new_mode: "MANUAL", timestamp_ms: 0 },
};

/** The rig with a wall clock that throws while `failing.now` holds, and its log lines. */
function failingRig() {
  const { log, lines } = capturingLogger();
  const r = edgeNodeRig({ log });
  const failing = { now: false };
  const wall = r.clock.nowMs.bind(r.clock);
  r.clock.nowMs = () => {
    if (failing.now) throw new Error("clock_gettime failed");
    return wall();
  };
  return { r, failing, lines };
}

/** The mode values of the NDATA (live, or historical too) the latest session published. */
function modesSent(r: ReturnType<typeof edgeNodeRig>, historical: boolean): unknown[] {
  const alias = r.nodeAlias("Runtime/Mode");
  return r.session.published.filter((m) => m.topic === "spBv1.0/g/NDATA/n").flatMap((m) =>
    (m.payload.metrics ?? []).filter((x) =>
      x.alias === alias && (x.is_historical === true) === historical
    )
  ).map((x) => x.string_value);
}

Deno.test("a mode change the node's own clock read cannot date goes out once the clock works (NODE_CLOCK_RETRY_MS)", async () => {
  const { r, failing, lines } = failingRig();
  await r.online();
  r.status.mode = "MANUAL";
  failing.now = true;
  r.emit(modeChange);
  await flushMicrotasks();
  assert.deepEqual(modesSent(r, false), [], "no NDATA without a time");
  assert.equal(r.node.counts.internalErrors, 0, "a failing clock is not an internal error");
  assert.equal(
    lines.filter((l) => l.includes("the wall clock failed dating a node metric change")).length,
    1,
    lines.join("\n"),
  );
  // Still failing at the first retry: tried again, said once.
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.deepEqual(modesSent(r, false), []);
  assert.equal(lines.filter((l) => l.includes("failed dating")).length, 1, lines.join("\n"));
  failing.now = false;
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  assert.deepEqual(modesSent(r, false), ["MANUAL"], "the host gets the mode once the clock works");
  assert.ok(
    lines.some((l) => l.includes("dates the node's messages again (2 read(s) failed)")),
    lines.join("\n"),
  );
  assert.equal(r.clock.pendingTimers, 0, "no retry left once it went out");
  await r.stop();
});

Deno.test("a mode change the node's clock cannot date while the broker is away reaches the host's history", async () => {
  const { r, failing } = failingRig();
  await r.online();
  r.session.cut();
  await flushMicrotasks();
  r.status.mode = "MANUAL";
  failing.now = true;
  r.emit(modeChange);
  await flushMicrotasks();
  failing.now = false;
  r.clock.advance(1);
  // The mode goes back before the node is back: only its history can tell the host of MANUAL.
  await r.clock.advanceAsync(NODE_CLOCK_RETRY_MS);
  r.status.mode = "IDLE";
  r.emit(modeChange);
  await flushMicrotasks();
  await r.clock.advanceAsync(testConfig().sparkplug.reconnectMs);
  r.session.up();
  await flushMicrotasks();
  assert.deepEqual(modesSent(r, true), ["MANUAL", "IDLE"], "MANUAL kept as history");
  await r.stop();
});
