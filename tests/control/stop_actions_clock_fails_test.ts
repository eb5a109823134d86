/**
 * The e-stop must work whatever else is failing: a stop action (a ladder call, a hook call into
 * FAULT) is sent even when the clock that bounds its retries on a full queue throws. Asked once
 * more, the retries keep their bound; when the clock keeps failing the call is made once, not
 * retried, and that is logged. In-process: retryWhileBusy over a call the test answers and an
 * injected clock whose monoMs throws once or always.
 */
import assert from "node:assert/strict";
import { retryWhileBusy } from "../../src/control/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { errorLog, failingClock, providersUp } from "../safety/_clock_rig.ts";

/** An inventory with provider plant, up; a clock whose monoMs throws `times` times; a log. */
function rig(times: number) {
  const c = failingClock({ read: "monoMs", times });
  const { log, errors } = errorLog();
  return { inventory: providersUp("plant"), clock: c.clock, log, errors, failures: c.failures };
}

/** A queue-full refusal (runtime-side UNAVAILABLE, no provider code). */
const busy = () => new RuntimeError("UNAVAILABLE", "Provider plant call queue is full");

Deno.test("retryWhileBusy sends the call when the clock's monoMs throws once before the first attempt, and still retries a full queue", async () => {
  const r = rig(1);
  let attempts = 0;
  const answer = await retryWhileBusy(r.inventory, r.clock, "plant", () => {
    attempts++;
    return attempts === 1 ? Promise.reject(busy()) : Promise.resolve("sent");
  }, r.log);
  assert.equal(r.failures(), 1, "the clock threw");
  assert.equal(answer, "sent");
  assert.equal(attempts, 2, "refused as busy once, then sent");
  assert.equal(r.errors.filter((l) => l.includes("clock monoMs failed")).length, 1);
});

Deno.test("retryWhileBusy sends the call once, not retried, when the clock's monoMs always throws", async () => {
  const r = rig(Infinity);
  let attempts = 0;
  const sent = await retryWhileBusy(r.inventory, r.clock, "plant", () => {
    attempts++;
    return Promise.resolve("sent");
  }, r.log);
  assert.equal(sent, "sent");
  assert.equal(attempts, 1);
  attempts = 0;
  await assert.rejects(
    retryWhileBusy(r.inventory, r.clock, "plant", () => {
      attempts++;
      return Promise.reject(busy());
    }, r.log),
    (e: RuntimeError) => e.code === "UNAVAILABLE" && e.message.includes("queue is full"),
    "the call's own refusal, not the clock's error",
  );
  assert.equal(attempts, 1, "no deadline: sent once, not retried");
  assert.equal(r.errors.filter((l) => l.includes("no retry while its provider is busy")).length, 2);
});
