/**
 * A read-back never replaces a check with an older one (docs/safety.md, "Merged, not re-run"),
 * also across lists that are equal but not the same: a reload that re-parses the same
 * `safety.safe_state.expect` while a re-verification of the list before it still reads back, then a
 * press whose stop reads back the re-parsed list and answers first -- the older re-verification,
 * ending last, must not put its older reads over the newer stop's. In-process: the real Estop on a
 * manual clock over a router that answers every call at once and a reader whose reads the test
 * answers one by one, with the value each is to read.
 */
import assert from "node:assert/strict";
import { type SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshRead, FreshReader } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { untilTurns } from "../helpers/turns.ts";
import { containedEstop, heaterOffLadder } from "./_clock_rig.ts";
import { expectation } from "./_fixture.ts";

/** heaterOffLadder reading plant/plant0/temp back at most `max`; a new list each call. */
function tempAtMost(max: number): SafeStateConfig {
  return { ...heaterOffLadder(), expect: [expectation("plant/plant0/temp", { max })] };
}

Deno.test("Estop: an older re-verification ending after a newer stop's read-back of a re-parsed equal list does not replace it", async () => {
  const clock = new ManualClock();
  const held: ((temp: number) => void)[] = [];
  const reads: FreshReader = {
    readFresh: () =>
      new Promise<FreshRead>((resolve) =>
        held.push((temp) =>
          resolve({
            ok: true,
            samples: new Map([["temp", {
              value: { type: "double", double: temp },
              quality: "OK",
            }]]),
          } as FreshRead)
        )
      ),
  };
  const estop = containedEstop({
    reads,
    clock,
    safeState: tempAtMost(50),
  });
  const observed = () => estop.status().verification?.checks.map((c) => c.observed);
  const answer = async (temp: number) => {
    await untilTurns(() => held.length > 0, "a read waiting");
    held.shift()!(temp);
  };

  // Latched: the stop reads temp back at 20.
  const first = estop.trigger("first");
  await answer(20);
  await first;
  assert.deepEqual(observed(), [{ type: "double", double: 20 }]);

  // A reload changes the expectation: the whole new list is read back (its read held).
  clock.advance(10);
  const [reverified] = estop.reconfigure(tempAtMost(60));
  await untilTurns(() => held.length === 1, "the re-verification's read");
  // A reload re-parses the same list (equal, not the same); a press then reads it back, newer.
  clock.advance(10);
  assert.deepEqual(estop.reconfigure(tempAtMost(60)), [], "nothing changed: nothing read back");
  const second = estop.trigger("second");
  await untilTurns(() => held.length === 2, "the second stop's read");
  held.splice(1, 1)[0]!(30);
  const answered = await second;
  assert.deepEqual(answered.verification.checks.map((c) => c.observed), [
    { type: "double", double: 30 },
  ]);
  assert.deepEqual(observed(), [{ type: "double", double: 30 }], "the stop's read-back shown");

  // The older re-verification ends last, reading 40: the newer read stays shown.
  await answer(40);
  await reverified;
  assert.deepEqual(
    observed(),
    [{ type: "double", double: 30 }],
    "status shows the newest read-back, not the older one that ended after it",
  );
});
