/**
 * The fleet view's Rebirth ask (an NCMD, which carries its time) whose wall-clock read fails is
 * left out, not dated by an invented time and not the end of the view: the retry asks again once
 * the clock works. The view listens to a session double on a manual clock (_fleet_rig.ts).
 */
import assert from "node:assert/strict";
import { REBIRTH_RETRY_FIRST_MS } from "../../src/sparkplug/mod.ts";
import { listeningFleet } from "./_fleet_rig.ts";

Deno.test("a Rebirth ask the fleet view's clock cannot date is left out and asked again once it can", async () => {
  const { clock, collected, send, session } = await listeningFleet(60000);
  const asks = () => session.published.filter((m) => m.topic === "spBv1.0/g/NCMD/n");
  const wall = clock.nowMs.bind(clock);
  let failing = true;
  clock.nowMs = () => {
    if (failing) throw new Error("clock_gettime failed");
    return wall();
  };
  send("NDATA/n", []);
  assert.equal(asks().length, 0, "no NCMD without a time");
  failing = false;
  clock.advance(REBIRTH_RETRY_FIRST_MS);
  assert.equal(asks().length, 1, "asked again once the clock works");
  assert.equal(Number(asks()[0]!.payload.timestamp), clock.nowMs());
  clock.advance(60000);
  const { nodes } = await collected;
  assert.deepEqual(nodes.map((n) => [n.node, n.born]), [["n", false]]);
});
