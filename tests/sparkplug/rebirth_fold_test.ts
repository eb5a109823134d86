/**
 * A storm of NCMD `Node Control/Rebirth` is not a storm of births: a Rebirth that arrives while a
 * birth set is still going out (its NBIRTH or a DBIRTH not yet written), or while one is already
 * due after it, is answered by ONE birth set after it, not one per request. Before, only the
 * in-flight bound (MAX_IN_FLIGHT writes) held them: 2000 Rebirths (about 80 kB) published some
 * 330 full birth sets. Every Rebirth is still honoured (Sparkplug: births follow it), with
 * commands off too, as here.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts), whose held writes show what is
 * still going out.
 */
import assert from "node:assert/strict";
import { DataType, MIN_REBIRTH_INTERVAL_MS, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig } from "./_edge_node_rig.ts";
import type { HeldSession } from "../helpers/held_session.ts";

const P = "p0";
const NCMD = "spBv1.0/g/NCMD/n";
const NBIRTH = "spBv1.0/g/NBIRTH/n";
const DEVICES = ["dev0", "dev1"].map((d) => sparkplugDeviceId(P, d));
const REBIRTH = { name: "Node Control/Rebirth", datatype: DataType.Boolean, boolean_value: true };

function rig(hold: boolean) {
  return edgeNodeRig({
    providers: [{ id: P, available: true, devices: ["dev0", "dev1"].map((d) => deviceCaps(P, d)) }],
    hold,
  });
}

/**
 * The birth sets published from `from` on, each checked whole and in order: its NBIRTH at seq 0
 * with the connection's bdSeq, then one DBIRTH per device at seq 1, 2, ..., nothing between.
 */
function birthSets(session: HeldSession, from: number, bdSeq: number): number {
  const births = session.published.slice(from).filter((m) => /\/[ND]BIRTH\//.test(m.topic));
  assert.equal(births.length % (1 + DEVICES.length), 0, "only whole birth sets");
  const sets = births.length / (1 + DEVICES.length);
  for (let s = 0; s < sets; s++) {
    const set = births.slice(s * (1 + DEVICES.length), (s + 1) * (1 + DEVICES.length));
    assert.equal(set[0]!.topic, NBIRTH, `set ${s} begins with its NBIRTH`);
    assert.equal(Number(set[0]!.payload.seq), 0, `set ${s}: NBIRTH at seq 0`);
    const bd = (set[0]!.payload.metrics ?? []).find((m) => m.name === "bdSeq")?.long_value;
    assert.equal(Number(bd), bdSeq, `set ${s}: the connection's bdSeq`);
    assert.deepEqual(
      set.slice(1).map((m) => [m.topic, Number(m.payload.seq)]),
      DEVICES.map((d, i) => [`spBv1.0/g/DBIRTH/n/${d}`, i + 1]),
      `set ${s}: a DBIRTH per device, seq following its NBIRTH`,
    );
  }
  return sets;
}

/** The bdSeq of the connection's first NBIRTH. */
function bdSeqOf(session: HeldSession): number {
  const nbirth = session.published.find((m) => m.topic === NBIRTH)!;
  return Number((nbirth.payload.metrics ?? []).find((m) => m.name === "bdSeq")?.long_value);
}

Deno.test("SparkplugEdgeNode: Rebirths while a birth set is going out are one birth set after it, each set whole and in sequence", async () => {
  const r = rig(true);
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const bdSeq = bdSeqOf(r.session);
  const from = r.session.published.length;
  for (let i = 0; i < 50; i++) r.command(NCMD, [REBIRTH]);
  await flushMicrotasks();
  assert.equal(birthSets(r.session, from, bdSeq), 1, "the first Rebirth's set goes out at once");
  // The broker confirms the writes one by one: the folded Rebirths are one set after the first.
  for (let i = 0; i < 100 && r.session.inFlight > 0; i++) {
    r.session.completeOne();
    await flushMicrotasks();
  }
  assert.equal(r.session.inFlight, 0);
  assert.equal(birthSets(r.session, from, bdSeq), 1, "the folded set waits for the interval");
  await r.clock.advanceAsync(MIN_REBIRTH_INTERVAL_MS);
  r.session.complete();
  await flushMicrotasks();
  assert.equal(
    birthSets(r.session, from, bdSeq),
    2,
    "50 Rebirths: the set going out and one after",
  );
  // A Rebirth once nothing is going out and the interval is over is served at once, as before.
  await r.clock.advanceAsync(MIN_REBIRTH_INTERVAL_MS);
  r.command(NCMD, [REBIRTH]);
  await flushMicrotasks();
  assert.equal(birthSets(r.session, from, bdSeq), 3, "a later Rebirth gets its own set");
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a burst of 2000 Rebirths publishes at most 2 birth sets", async () => {
  const r = rig(false); // every write completes at once (on the next microtasks)
  await r.online();
  await flushMicrotasks();
  const bdSeq = bdSeqOf(r.session);
  const from = r.session.published.length;
  for (let i = 0; i < 2000; i++) r.command(NCMD, [REBIRTH]);
  for (let i = 0; i < 10; i++) await flushMicrotasks();
  const sets = birthSets(r.session, from, bdSeq);
  assert.ok(sets >= 1 && sets <= 2, `${sets} birth sets for one burst of 2000 Rebirths`);
  await r.stop();
});

Deno.test("SparkplugEdgeNode: a Rebirth folded behind births whose writes fail is still served", async () => {
  const r = rig(true);
  await r.online();
  r.session.complete();
  await flushMicrotasks();
  const bdSeq = bdSeqOf(r.session);
  const from = r.session.published.length;
  r.command(NCMD, [REBIRTH]);
  r.command(NCMD, [REBIRTH]);
  await flushMicrotasks();
  assert.equal(birthSets(r.session, from, bdSeq), 1);
  // Each of the first set's writes fails, the connection staying up: no write completes.
  while (r.session.inFlight > 0 && birthSets(r.session, from, bdSeq) === 1) {
    r.session.failOne();
    await flushMicrotasks();
  }
  await r.clock.advanceAsync(MIN_REBIRTH_INTERVAL_MS);
  assert.equal(birthSets(r.session, from, bdSeq), 2, "the folded Rebirth's births follow");
  await r.stop();
});
