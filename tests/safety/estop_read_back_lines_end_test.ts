/**
 * Once a runtime's stop has ended the read-backs' lines (Estop.endReadBackLines: nothing of a
 * read-back comes after `runtime stopped`), a read-back that begins after it writes no line
 * either -- its start's clock read included, as every other line of the read-back (its checks,
 * its verdict, verify.ts's own clock reads). Both read-backs that can begin then: a stop's (its
 * ladder still on the wire at the runtime's stop) and a securing run's (a provider back while
 * latched, its call on the wire). In-process: the real Estop over a router that holds each call
 * until the test answers it, a clock whose monoMs throws from then on, a logger keeping its lines.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { macrotask, untilTurns } from "../helpers/turns.ts";
import {
  containedEstop,
  failingClock,
  faultRecordingModes,
  heaterOffReader,
  heaterOffVerifiedLadder,
  providerComingBack,
} from "./_clock_rig.ts";

function rig() {
  const held: { req: CallRequest; answer(): void }[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: CallRequest) =>
      new Promise<unknown>((resolve) => held.push({ req, answer: () => resolve({}) })),
  } as unknown as CallRouter;
  const { inventory, host, comeBack } = providerComingBack("plant");
  const { modes } = faultRecordingModes();
  let broken = false;
  const { clock, failures } = failingClock({
    read: "monoMs",
    times: Infinity,
    when: () => broken,
  });
  const { log, lines } = capturingLogger({ level: "debug", now: () => 0 });
  const { reads, readBacks } = heaterOffReader();
  const estop = containedEstop({
    router,
    inventory,
    reads,
    clock,
    log,
    modes,
    safeState: heaterOffVerifiedLadder(),
  });
  return {
    estop,
    host,
    comeBack,
    lines,
    failures,
    readBacks,
    held: () => held.length,
    answerAll: () => held.splice(0).forEach((h) => h.answer()),
    /** The runtime's stop ends the read-backs and their lines; the clock fails from now on. */
    endRuntime: () => {
      estop.endReadBacks();
      estop.endReadBackLines();
      broken = true;
      return lines.length;
    },
  };
}

Deno.test("Estop stop whose read-back begins after endReadBackLines writes no line, its start's clock read included", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await untilTurns(() => r.held() === 1, "the stop's ladder call");
  const before = r.endRuntime();
  r.answerAll();
  const result = await stop;
  assert.ok(r.failures() > 0, "the clock failed during the read-back");
  assert.equal(result.verification.outcome, "verified", "read back all the same");
  assert.deepEqual(r.lines.slice(before), [], "no line after the read-backs' lines ended");
});

Deno.test("Estop securing run whose read-back begins after endReadBackLines writes no line, its start's clock read included", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await untilTurns(() => r.held() === 1, "the stop's ladder call");
  r.answerAll();
  await stop;
  r.comeBack();
  await untilTurns(() => r.held() === 1, "the securing run's call");
  const before = r.endRuntime();
  r.answerAll();
  await r.estop.securing(r.host);
  // Its re-verification reads plant back (the clock failing throughout): verified, shown.
  await untilTurns(() => r.readBacks() === 2, "the re-verification read plant back");
  for (let i = 0; i < 10; i++) await macrotask();
  assert.deepEqual(r.lines.slice(before), [], "no line after the read-backs' lines ended");
});
