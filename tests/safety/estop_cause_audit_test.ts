/**
 * Each ladder call is audited with the cause of the stop that makes it: a trigger while a slow
 * stop runs (an alarm after the operator's press) re-runs the ladder after it, and must not lend
 * its cause to the running stop's calls still to come.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { macrotask } from "../helpers/turns.ts";
import { call, plantProvider } from "./_fixture.ts";
import type { Kernel } from "../../src/app/kernel.ts";

/**
 * A rig whose ladder is two hook calls to one plant that answers each 1 s after it arrived: a
 * stop's second call starts after a trigger made once its first is on the wire.
 */
function slowLadder() {
  return rig({
    providers: [plantProvider("slow", { latencyMs: 1000 })],
    safety: {
      hooks: [
        call("slow/plant0", "set_heater", { enabled: false }),
        call("slow/plant0", "set_fan", { duty: { double: 0 } }),
      ],
      zeroIsSafe: false,
    },
  });
}

/** The four accepted ladder calls of two stops, once audited (in no particular order). */
function ladderCalls(rt: Kernel) {
  return waitFor("the four ladder calls audited", async () => {
    const page = await rt.audit.query({ limit: 100, origin: "estop" });
    const c = page.entries.filter((e) => e.action === "call" && e.outcome === "accepted");
    return c.length === 4 ? c : undefined;
  });
}

Deno.test("Estop audits each ladder call with the cause of its own stop, also when a trigger arrives while it runs", async () => {
  await using r = await slowLadder();
  const rt = r.kernel;
  const first = rt.estop.trigger("operator");
  // Once the first stop has begun (its ladder's first call is on the wire): a press before that
  // joins it, and is answered by it (docs/safety.md, "Presses are coalesced").
  await macrotask();
  const second = rt.estop.trigger("too hot", { cause: "alarm:overtemp" });
  await Promise.all([first, second]);
  const calls = await ladderCalls(rt);
  // Oldest first: the first stop's two calls, then the second stop's.
  const causes = calls
    .sort((a, b) => a.seq - b.seq)
    .map((e) => [e.function, (e.origin as { cause?: string }).cause]);
  assert.deepEqual(
    causes,
    [
      ["set_heater", "api"],
      ["set_fan", "api"],
      ["set_heater", "alarm:overtemp"],
      ["set_fan", "alarm:overtemp"],
    ],
    "each ladder call names the cause of its own stop",
  );
});

Deno.test("Estop audits the ladder calls of a stop two presses share across a clear with the cause of the press that latched again, the cause status shows", async () => {
  await using r = await slowLadder();
  const rt = r.kernel;
  const first = rt.estop.trigger("operator");
  await macrotask(); // the first stop has begun: its first ladder call is on the wire
  // A press while it runs queues a further stop; the operator clears the latch before that stop
  // begins, then an alarm latches it again: its press joins that stop (docs/safety.md, "Presses
  // are coalesced"), which now answers the alarm's latch.
  const queuedBy = rt.estop.trigger("second look", { cause: "alarm:pressure" });
  rt.estop.clear();
  const latchedAgain = rt.estop.trigger("too hot", { cause: "alarm:overtemp" });
  assert.equal(rt.estop.status().cause, "alarm:overtemp");
  await Promise.all([first, queuedBy, latchedAgain]);
  assert.equal(rt.estop.status().cause, "alarm:overtemp", "the latch in force");
  const page = await waitFor("the four ladder calls audited", async () => {
    const p = await rt.audit.query({ limit: 100 });
    const n = p.entries.filter((e) => e.action === "call" && e.origin.kind === "estop").length;
    return n === 4 ? p : undefined;
  });
  // Oldest first: the presses, the clear and the ladder calls of both stops, in order.
  const said = page.entries
    .sort((a, b) => a.seq - b.seq)
    .filter((e) => e.action !== "call" || e.origin.kind === "estop")
    .filter((e) => e.action === "estop" || e.action === "estop_clear" || e.action === "call")
    .map((e) =>
      e.action === "call"
        ? `${e.function} ${(e.origin as { cause?: string }).cause}`
        : e.action === "estop"
        ? `estop ${(e.args as { cause?: string } | null)?.cause}`
        : "clear"
    );
  assert.deepEqual(
    said,
    [
      "estop api",
      "estop alarm:pressure",
      "clear",
      "estop alarm:overtemp",
      "set_heater api",
      "set_fan api",
      "set_heater alarm:overtemp",
      "set_fan alarm:overtemp",
    ],
    "the second stop's calls name the press of the latch they answer, not one cleared before",
  );
});

Deno.test("Estop names a shared stop's ladder calls after the press that latched again, not after a later press joining it while latched", async () => {
  await using r = await slowLadder();
  const rt = r.kernel;
  const first = rt.estop.trigger("operator");
  await macrotask(); // the first stop has begun: a press from here on queues (or joins) the next
  // While latched: the first queues the next stop, the second joins it (no clear between).
  const queued = rt.estop.trigger("second look", { cause: "alarm:pressure" });
  const joined = rt.estop.trigger("level", { cause: "alarm:level" });
  rt.estop.clear();
  // Latches again (joins that stop, which now answers this latch), then two presses while latched
  // join it too: neither latched anything, so neither renames it.
  const latchedAgain = rt.estop.trigger("too hot", { cause: "alarm:overtemp" });
  const third = rt.estop.trigger("operator again");
  const viaSparkplug = rt.estop.trigger("NCMD", { cause: "sparkplug" });
  assert.equal(rt.estop.status().cause, "alarm:overtemp");
  await Promise.all([first, queued, joined, latchedAgain, third, viaSparkplug]);
  const calls = await ladderCalls(rt);
  assert.deepEqual(
    calls
      .sort((a, b) => a.seq - b.seq)
      .map((e) => `${e.function} ${(e.origin as { cause?: string }).cause}`),
    [
      "set_heater api",
      "set_fan api",
      "set_heater alarm:overtemp",
      "set_fan alarm:overtemp",
    ],
    "the shared stop answers the latch in force: the press that latched it again names it",
  );
  assert.equal(rt.estop.status().cause, "alarm:overtemp", "the latch in force");
});
