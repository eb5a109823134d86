/**
 * Every re-verification asked for ends with its summary audit record, also one the merge drops
 * (docs/safety.md, "Merged, not re-run"): a reload's re-verification whose read-back is held while
 * a reload re-parses the same list and a press's stop reads it back and answers first. Ending last,
 * older, it is not shown nor published again, but the audit journal gets its record, saying which
 * read-back it was merged into (the stop's). In-process: the real Estop on a manual clock over a
 * router that answers every call at once, a reader whose reads the test answers one by one, and a
 * real AuditTrail with its journal in a temporary folder.
 */
import assert from "node:assert/strict";
import type { AuditEntry } from "../../src/audit/mod.ts";
import { type SafeStateConfig } from "../../src/safety/mod.ts";
import type { FreshRead, FreshReader } from "../../src/state/mod.ts";
import { untilTurns } from "../helpers/turns.ts";
import { withJournaledTrail } from "../audit/_rig.ts";
import { containedEstop, heaterOffLadder } from "./_clock_rig.ts";
import { expectation } from "./_fixture.ts";

/** heaterOffLadder reading plant/plant0/temp back at most `max`; a new list each call. */
function tempAtMost(max: number): SafeStateConfig {
  return { ...heaterOffLadder(), expect: [expectation("plant/plant0/temp", { max })] };
}

const RELOADED = "expectations reloaded while latched";

Deno.test("Estop: a re-verification the merge drops still ends with its summary audit record, naming the read-back it was merged into", async () => {
  await withJournaledTrail("estop-merged-audit-", async (trail, clock) => {
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
      audit: trail,
    });
    const answer = async (temp: number) => {
      await untilTurns(() => held.length > 0, "a read waiting");
      held.shift()!(temp);
    };
    const summaries = async (): Promise<AuditEntry[]> =>
      (await trail.query({ limit: 100, origin: "estop" })).entries.filter((e) =>
        e.action === "estop" && e.args?.["reason"] === RELOADED
      );

    const first = estop.trigger("first");
    await answer(20);
    await first;

    // A reload changes the expectation: the whole new list is read back (its read held).
    clock.advance(10);
    const [reverified] = estop.reconfigure(tempAtMost(60));
    await untilTurns(() => held.length === 1, "the re-verification's read");
    // A reload re-parses the same list; a press's stop reads it back and answers first.
    clock.advance(10);
    assert.deepEqual(estop.reconfigure(tempAtMost(60)), []);
    const second = estop.trigger("second");
    await untilTurns(() => held.length === 2, "the second stop's read");
    held.splice(1, 1)[0]!(30);
    await second;

    // The older re-verification ends last: dropped by the merge, status keeps the stop's.
    await answer(40);
    await reverified;
    assert.deepEqual(
      estop.status().verification?.checks.map((c) => c.observed),
      [{ type: "double", double: 30 }],
    );
    const records = await summaries();
    assert.equal(records.length, 1, "the re-verification that was asked for has its record");
    const record = records[0]!;
    assert.deepEqual(record.args, { provider_ids: ["plant"], reason: RELOADED });
    assert.deepEqual(record.result, {
      actions: 0,
      actions_failed: 0,
      verification: "verified",
      checks_total: 1,
      checks_verified: 1,
      merged_into: { read_back: "stop", cause: "api" },
    });
  });
});
