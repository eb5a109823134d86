/**
 * The broker restarts during the fleet view's window, without persistence (Mosquitto's default):
 * it forgot every session and will. A node that died while it was down publishes no NDEATH (its
 * will went with the broker), so the view listed it reachable from its birth before the restart.
 * What the view can know: its own reconnect finds its session gone (CONNACK Session Present 0), so
 * it missed whatever was published meanwhile, and every node's state is unknown until the node
 * publishes again or is born again (asked for a Rebirth). On a real Mosquitto, killed (SIGKILL:
 * nothing saved) and started again on its port.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { connectMqttJs } from "../../src/host/mod.ts";
import { DataType, type FleetNode } from "../../src/sparkplug/mod.ts";
import { listeningFleet, withFleetLab } from "./_fleet_rig.ts";

/** Longest window of the view: the test ends it sooner, once the node alive is seen again. */
const WINDOW_MS = 30000;

Deno.test({
  name:
    "a node that dies while the broker restarts without persistence is not listed reachable: after the view's session was lost its state is unknown",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const stop = new AbortController();
      let connects = 0;
      let firstUp: () => void = () => {};
      const up = new Promise<void>((r) => (firstUp = r));
      let reconnected = false;
      let seen: () => void = () => {};
      const bothBorn = new Promise<void>((r) => (seen = r));
      const born = new Set<string>();
      const view = lab.collect({
        waitMs: WINDOW_MS,
        interrupt: stop.signal,
        connect: async (o) => {
          const session = await connectMqttJs(o);
          session.onConnect(() => {
            if (++connects === 1) firstUp();
            else reconnected = true;
          });
          return session;
        },
        onUpdate: (n: Readonly<FleetNode>) => {
          if (n.born && n.reachable === true) born.add(n.node);
          if (born.size === 2) seen();
          // Alive after the restart: it published, or was born, on the new broker.
          if (reconnected && n.node === "rig-alive" && n.reachable === true) stop.abort();
        },
      });
      await up;
      await lab.runtime("rig-alive");
      const dying = await lab.runtime("rig-dying");
      await bothBorn;
      await lab.broker.pause({ kill: true });
      await lab.stop(dying); // no broker to take its NDEATH, and its will is gone with the broker
      await lab.broker.resume();
      const { nodes, interrupted } = await view;
      assert.equal(interrupted, true, "the node alive was seen again after the restart");
      assert.deepEqual(nodes.map((n) => [n.node, n.reachable]), [
        ["rig-alive", true],
        ["rig-dying", null],
      ]);
    }),
});

Deno.test("a reconnect that resumed the view's session changes nothing; one that found it lost makes every node unknown and asks each for a Rebirth: data shows it alive, any NDEATH dead", async () => {
  const { clock, collected, send, session } = await listeningFleet(60000);
  const asks = (node: string) =>
    session.published.filter((m) => m.topic === `spBv1.0/g/NCMD/${node}`).length;
  const bdSeq = (n: number) => [{ name: "bdSeq", datatype: DataType.UInt64, long_value: n }];
  send("NBIRTH/a", bdSeq(1));
  send("NBIRTH/b", bdSeq(1));
  session.down();
  session.up(true); // the broker kept the session: what was published meanwhile was queued
  assert.equal(asks("a") + asks("b"), 0);
  session.down();
  session.up(false); // the broker lost it (restarted without persistence)
  assert.deepEqual([asks("a"), asks("b")], [1, 1]);
  send("NDATA/a"); // alive: it publishes in a session it was born in
  send("NDEATH/b", bdSeq(2)); // of a session the view did not see born: its death all the same
  clock.advance(60000);
  const { nodes } = await collected;
  assert.deepEqual(nodes.map((n) => [n.node, n.reachable, n.born]), [
    ["a", true, true],
    ["b", false, true],
  ]);
  assert.equal(asks("b"), 1, "a dead node is asked no more");
});
