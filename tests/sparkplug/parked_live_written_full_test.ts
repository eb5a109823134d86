/**
 * The polls written live of devices waiting for their next DBIRTH (#parkedWritten) are kept up to
 * PARKED_WRITTEN_KEPT in all; beyond it a resumed replay may send such a poll again. Such a poll
 * not kept is said (one WARN while any are kept), never dropped silently. HeldSession
 * (tests/helpers/held_session.ts): a real broker cannot fail one write of a connection that stays
 * up.
 */
import assert from "node:assert/strict";
import { PARKED_WRITTEN_KEPT } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { P, ringRig } from "./_ring_rig.ts";

/** Polls in flight per device that leaves: the first fails, the rest are written live. */
const POLLS = 850;
/** Devices that leave that way: more polls written live than PARKED_WRITTEN_KEPT in all. */
const DEVICES = 5;

Deno.test("SparkplugEdgeNode: polls written live of devices waiting for their DBIRTH beyond PARKED_WRITTEN_KEPT are WARNed once, not dropped silently", async () => {
  assert.ok(DEVICES * (POLLS - 1) > PARKED_WRITTEN_KEPT);
  const { log, lines } = capturingLogger({ level: "warn" });
  const rig = ringRig({ log });
  await rig.history.start();
  const ids = Array.from({ length: DEVICES }, (_, k) => `d${k}`);
  for (const id of ids) rig.addDevice(id);
  await rig.node.start();
  for (const id of ids) rig.poll(id, 0);
  const s = rig.session();
  s.up();
  await flushMicrotasks();
  while (s.complete() > 0) await flushMicrotasks();
  for (const id of ids) {
    for (let i = 1; i <= POLLS; i++) {
      rig.poll(id, i);
      await flushMicrotasks();
    }
    assert.equal(s.inFlight, POLLS);
    s.failOne(); // its outage starts at its first poll
    await flushMicrotasks();
    for (let i = 2; i < POLLS; i++) s.completeOne(); // written live after it
    await flushMicrotasks();
    rig.removeDevice(id); // DDEATH: its position and its polls written live kept for its DBIRTH
    await flushMicrotasks();
    while (s.complete() > 0) await flushMicrotasks(); // its last poll, written after it left
  }
  // Before: [] -- the polls past the bound were not kept, and nothing said so.
  const warned = lines.filter((l) => l.includes("PARKED_WRITTEN_KEPT"));
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0]!,
    new RegExp(
      `^WARN .*sparkplug store-and-forward: ${PARKED_WRITTEN_KEPT} polls written live of devices ` +
        `waiting for their DBIRTH kept \\(PARKED_WRITTEN_KEPT\\): further ones \\(the first of ` +
        `"${P}:d4"\\) are not, and their resumed replay may send them again$`,
    ),
  );
  await rig.stop();
});
