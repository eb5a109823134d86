/**
 * Two e-stop triggers that overlap: the second arrives while the first's ladder runs (an operator
 * presses the stop as an alarm's action fires). Both answer with the ladder they ran, the second
 * ladder runs after the first one's calls and read-back (never interleaved with them), the latch
 * keeps the first cause, and each trigger is counted and published.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { rig } from "../helpers/rig.ts";
import { macrotask } from "../helpers/turns.ts";
import { call, expectation } from "./_fixture.ts";
import { readbackProvider } from "./_readback.ts";

Deno.test("Estop triggered again while its ladder runs answers both, runs the ladder again after the first, keeps the first cause", async () => {
  const logFile = await Deno.makeTempFile({ prefix: "estop-overlap-" });
  const rt = (await rig({
    providers: [
      readbackProvider("rb", {
        dev0: { signals: { out: "bool" }, reads: [{ out: { v: false } }], actuate: "ok" },
      }, { logFile }),
    ],
    safety: {
      hooks: [call("rb/dev0", "set_output")],
      expect: [expectation("rb/dev0/out", { equals: false })],
    },
  })).kernel;
  const events: RuntimeEvent[] = [];
  const unsubscribe = rt.bus.subscribe((e) => events.push(e.event));
  try {
    await rt.modes.request("MANUAL");
    const settled: string[] = [];
    const first = rt.estop.trigger("operator", { cause: "api" }).then((r) => {
      settled.push("first");
      return r;
    });
    // The first trigger latched synchronously; its ladder has not answered yet.
    assert.equal(rt.estop.status().latched, true);
    // Once its stop has begun (its ladder's call is on the wire): a press before that joins it,
    // and is answered by it (docs/safety.md, "Presses are coalesced").
    await macrotask();
    const second = rt.estop.trigger("alarm action", { cause: "alarm:hot" }).then((r) => {
      settled.push("second");
      return r;
    });
    const [a, b] = await Promise.all([first, second]);
    assert.deepEqual(settled, ["first", "second"]);
    for (const r of [a, b]) {
      assert.equal(r.latched, true);
      assert.deepEqual(r.actions, [
        { device_handle: "rb/dev0", function: "set_output", success: true },
      ]);
      assert.equal(r.verification.outcome, "verified");
    }
    // Each ladder's call, then its read-back; the second ladder only after the first's.
    const log = Deno.readTextFileSync(logFile).split("\n").filter((l) => l !== "");
    assert.deepEqual(log, [
      "call dev0 set_output",
      "dev0 out",
      "call dev0 set_output",
      "dev0 out",
    ]);
    assert.equal(rt.estop.triggerCount, 2);
    const status = rt.estop.status();
    assert.equal(status.latched, true);
    assert.equal(status.cause, "api", "the latch keeps what latched it");
    assert.equal(rt.modes.current(), "FAULT");
    const changes = events.filter((e) => e.kind === "estop_change");
    assert.deepEqual(
      changes.map((e) => e.kind === "estop_change" && [e.latched, e.cause, e.reason]),
      [[true, "api", "operator"], [true, "alarm:hot", "alarm action"]],
    );
    rt.estop.clear();
    assert.equal(rt.estop.status().latched, false);
    assert.equal(rt.estop.status().cause, null);
  } finally {
    unsubscribe();
    await rt.stop();
    await Deno.remove(logFile);
  }
});
