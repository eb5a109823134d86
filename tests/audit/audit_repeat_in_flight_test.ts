/**
 * A repeat of the open accepted entry writes nothing ahead, but it is in flight all the same: a
 * run closing meanwhile (the kernel's #settleRunCalls, src/app/kernel.ts) must find it in
 * inFlightCalls() and tell its outcome by its intent, else that outcome, arriving after the open
 * entry was closed, became a `call` event of the next run and the run it was made in never said
 * it was in flight.
 */
import assert from "node:assert/strict";
import { ahead, duty, journalText, withJournaledTrail } from "./_rig.ts";

Deno.test("AuditTrail lists a repeat of the open entry in flight (nothing written ahead) and its outcome's entry carries its intent", async () => {
  await withJournaledTrail("audit_repeat_", async (t, time, dir) => {
    const seen: { count: number; intents: readonly string[] }[] = [];
    t.onEntry((e, intents) => seen.push({ count: e.count, intents }));
    const first = await t.writeAhead(ahead(0.5));
    assert.ok(first);
    t.record({ ...duty(0.5), intent: first });
    const text = () => journalText(dir);
    const before = await text(); // the first call's record written ahead (its entry is open)
    assert.match(before, /"intent":/);
    // The same call again while the entry is open: nothing is written ahead...
    time.advance(10);
    const repeat = await t.writeAhead(ahead(0.5));
    assert.equal(await text(), before, "a repeat wrote ahead");
    // ...and a run closes while it is in flight: the open entry is closed, the repeat listed.
    t.flushOpen();
    const inFlight = t.inFlightCalls();
    assert.deepEqual(
      inFlight.map((c) => [c.function, (c.args as { duty: { double: number } }).duty.double]),
      [["set_motor_duty", 0.5]],
      "the repeat in flight is not listed",
    );
    assert.ok(repeat);
    assert.equal(inFlight[0]!.intent, repeat.id);
    // Its outcome arrives: an entry of its own that names it (the kernel tells it by that).
    time.advance(10);
    t.record({ ...duty(0.5), intent: repeat });
    t.flushOpen();
    assert.deepEqual(seen.map((s) => [s.count, s.intents]), [[1, [first.id]], [1, [repeat.id]]]);
    assert.deepEqual(t.inFlightCalls(), []);
    await t.close();
    // Its record was written once the entry it repeated closed without it (it was still in
    // flight, tests/audit/audit_repeat_outlives_entry_test.ts), and its outcome's line settles it.
    const lines = (await text()).split("\n").filter(Boolean).map((l) => JSON.parse(l));
    assert.equal(lines.filter((l) => l.intent === repeat.id).length, 1);
    assert.ok(lines.some((l) => Array.isArray(l.intents) && l.intents.includes(repeat.id)));
  });
});
