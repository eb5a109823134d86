/**
 * A repeat of the open accepted entry writes nothing ahead: the entry on disk is its decision. But
 * when that entry is closed while the repeat is still on the wire (an e-stop, a different call, a
 * read of the trail, a run's boundary: another decision closes it), the entry is written without
 * the repeat, whose outcome is not known yet. A crash then (kill -9, power loss) must not lose that
 * call: it reached the provider (docs/http-api.md, "What a crash can lose": never a call that
 * reached a provider). The next start records it `interrupted`, as any call written ahead.
 */
import assert from "node:assert/strict";
import type { AuditEntry } from "../../src/audit/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { ahead, duty, openTrail, withTempDir } from "./_rig.ts";

const interruptedDuties = (entries: readonly AuditEntry[]) =>
  entries.filter((e) => e.outcome === "interrupted").map((e) =>
    (e.args as { duty: { double: number } }).duty.double
  );

/**
 * A trail in `dir` where a call setting `value` was answered (its entry open) and the same call
 * again -- a repeat, nothing written ahead -- is on the wire 10 ms later.
 */
async function withRepeatInFlight(dir: string, value: number) {
  const time = new ManualClock();
  const a = await openTrail(dir, { clock: time });
  const first = await a.writeAhead(ahead(value));
  assert.ok(first);
  a.record({ ...duty(value), intent: first });
  time.advance(10);
  const repeat = await a.writeAhead(ahead(value));
  assert.ok(repeat);
  return { a, time, repeat };
}

Deno.test("AuditTrail: a repeat still in flight when an e-stop closes the entry it repeats is recorded interrupted after a crash", async () => {
  await withTempDir("audit_repeat_outlives_", async (dir) => {
    // The tree sets the duty; the same call again while its entry is open: a repeat.
    const { a, time } = await withRepeatInFlight(dir, 0.5);
    // Sent; before its answer the e-stop latches: its entry closes the open one.
    time.advance(10);
    a.record({
      action: "estop",
      origin: { kind: "http", address: "127.0.0.1", token_name: "default" },
      outcome: "accepted",
      args: { reason: "operator", cause: "api" },
      latency_ms: 0,
    });
    await a.query({ limit: 1 }); // everything queued is on disk
    // The process dies with the repeat on the wire (no close: no closing record).
    const b = await openTrail(dir, { clock: time });
    const page = await b.query({ limit: 100 });
    assert.deepEqual(
      interruptedDuties(page.entries),
      [0.5],
      "the repeat that reached the provider is on the trail neither as a count nor interrupted",
    );
    await b.close();
  });
});

Deno.test("AuditTrail: a repeat in flight at a clean stop is listed by the closing record", async () => {
  await withTempDir("audit_repeat_outlives_close_", async (dir) => {
    const { a, time } = await withRepeatInFlight(dir, 0.25);
    // A clean stop while it is on the wire, its provider never answering before the journal closes.
    await a.close();
    const b = await openTrail(dir, { clock: time });
    const page = await b.query({ limit: 100 });
    assert.deepEqual(interruptedDuties(page.entries), [0.25]);
    await b.close();
  });
});

Deno.test("AuditTrail lists the calls in flight oldest first once a repeat's record is written after a later call's", async () => {
  await withTempDir("audit_repeat_outlives_order_", async (dir) => {
    const { a, time, repeat } = await withRepeatInFlight(dir, 0.5); // nothing written for it
    time.advance(10);
    const later = await a.writeAhead(ahead(0.75)); // another call: written ahead at once
    assert.ok(later);
    a.flushOpen(); // the entry closes: the repeat's record is written after the later call's
    assert.deepEqual(a.inFlightCalls().map((c) => c.intent), [repeat.id, later.id]);
    await a.close();
  });
});
