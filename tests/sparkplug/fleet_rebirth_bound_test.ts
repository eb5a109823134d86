/**
 * The fleet view's Rebirths, asked again until births come (tests/sparkplug/
 * fleet_rebirth_retry_test.ts, on a real broker), are bounded: at most MAX_REBIRTHS_PENDING nodes
 * wait for their births at once (the next is asked when one is born, dies or gives up), each is
 * asked REBIRTH_ASKS_PER_NODE times at most on a doubling wait, and a node born or dead is asked no
 * more. On a manual clock and a session double (tests/helpers/held_session.ts).
 */
import assert from "node:assert/strict";
import { DataType } from "../../src/sparkplug/mod.ts";
import {
  MAX_REBIRTHS_PENDING,
  REBIRTH_ASKS_PER_NODE,
  REBIRTH_RETRY_FIRST_MS,
  REBIRTH_RETRY_MAX_MS,
} from "../../src/sparkplug/fleet.ts";
import { listeningFleet } from "./_fleet_rig.ts";

Deno.test("the fleet view asks at most MAX_REBIRTHS_PENDING nodes at once, each on a bounded backoff; born or dead, a node is asked no more", async () => {
  const { clock, collected, send, session } = await listeningFleet(60000);
  const asks = (node: string) =>
    session.published.filter((m) => m.topic === `spBv1.0/g/NCMD/${node}`).length;
  const rebirths = () => session.published.filter((m) => m.topic.includes("/NCMD/"));
  const names = Array.from({ length: MAX_REBIRTHS_PENDING + 2 }, (_, i) => `n${i}`);
  for (const name of names) send(`NDATA/${name}`);
  assert.equal(rebirths().length, MAX_REBIRTHS_PENDING, "one Rebirth per place, no more");
  assert.equal(asks(names.at(-1)!), 0);
  for (const m of rebirths()) {
    assert.deepEqual(
      (m.payload.metrics ?? []).map((x) => [x.name, x.boolean_value]),
      [["Node Control/Rebirth", true]],
    );
  }
  // n0 is born, n1 dies: their places go to the two waiting, in the order seen.
  send("NBIRTH/n0", [{ name: "bdSeq", datatype: DataType.UInt64, long_value: 1 }]);
  assert.equal(asks(names.at(-2)!), 1);
  assert.equal(asks(names.at(-1)!), 0);
  send("NDEATH/n1", [{ name: "bdSeq", datatype: DataType.UInt64, long_value: 1 }]);
  assert.equal(asks(names.at(-1)!), 1);
  // The others never answer: asked again after 1, 2, 4, 8 s (capped), REBIRTH_ASKS_PER_NODE in all.
  const schedule: number[] = [];
  for (let wait = REBIRTH_RETRY_FIRST_MS, i = 1; i < REBIRTH_ASKS_PER_NODE; i++) {
    schedule.push(wait);
    wait = Math.min(REBIRTH_RETRY_MAX_MS, wait * 2);
  }
  for (const [i, wait] of schedule.entries()) {
    clock.advance(wait - 1);
    assert.equal(asks("n2"), i + 1, `not asked again before ${wait} ms`);
    clock.advance(1);
    assert.equal(asks("n2"), i + 2);
  }
  clock.advance(REBIRTH_RETRY_MAX_MS * 3);
  assert.equal(asks("n2"), REBIRTH_ASKS_PER_NODE, "no more once given up");
  assert.equal(asks("n0"), 1, "born: asked no more");
  assert.equal(asks("n1"), 1, "dead: asked no more");
  // Their places are free again: a node seen now is asked at once.
  send("NDATA/late");
  assert.equal(asks("late"), 1);
  // Its data again while it waits for its births: no second Rebirth before its wait is over.
  send("NDATA/late");
  assert.equal(asks("late"), 1);
  clock.advance(60000);
  const { nodes } = await collected;
  assert.equal(nodes.length, names.length + 1);
  assert.equal(clock.pendingTimers, 0, "no Rebirth timer outlives the window");
});

Deno.test("a node that publishes after its NDEATH came back with births the view missed (QoS 0, or sent while the view's connection was down): it is asked for a Rebirth, and its NBIRTH shows it reachable", async () => {
  const { clock, collected, send, session } = await listeningFleet(60000);
  const asks = () => session.published.filter((m) => m.topic === "spBv1.0/g/NCMD/n").length;
  const bdSeq = (n: number) => [{ name: "bdSeq", datatype: DataType.UInt64, long_value: n }];
  send("NBIRTH/n", bdSeq(1));
  send("NDEATH/n", bdSeq(1));
  assert.equal(asks(), 0);
  // Reborn with bdSeq 2 while the view's connection was down: only its data reaches the view.
  send("DDATA/n/p0:dev0");
  assert.equal(asks(), 1, "a node that publishes is not dead: its births are asked for");
  send("NBIRTH/n", [
    ...bdSeq(2),
    { name: "Runtime/Mode", datatype: DataType.String, string_value: "AUTO" },
  ]);
  clock.advance(60000);
  assert.equal(asks(), 1, "born: asked no more");
  const { nodes } = await collected;
  assert.deepEqual(nodes.map((n) => [n.node, n.reachable, n.mode]), [["n", true, "AUTO"]]);
});
