/**
 * A broker whose ACL lets the edge node publish its NBIRTH but not subscribe to it (SUBACK 0x80
 * for that filter; MQTT.js then fails the whole SUBSCRIBE call, build/lib/handlers/ack.js case
 * 'suback'). The node's own-NBIRTH subscription (60961fb9, to hear another client publishing as
 * this node) went in one SUBSCRIBE with NCMD, DCMD and STATE: every connection WARNed that those
 * failed although the broker granted them, and the refused check was not named. Now it is a
 * SUBSCRIBE of its own: the commands' subscription is not reported failed, the refusal is WARNed
 * once for the process (not per connection).
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

const NBIRTH = "spBv1.0/g/NBIRTH/n";

Deno.test("SparkplugEdgeNode: a broker refusing the node's subscription to its own NBIRTH costs the foreign-birth check only, said once; NCMD/DCMD are not reported failed", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const rig = edgeNodeRig({ log, recordCalls: true, refuses: (t) => t === NBIRTH });
  await rig.online();
  // A reconnect subscribes again (and is refused again).
  rig.session.down();
  await flushMicrotasks();
  await rig.clock.advanceAsync(60_000);
  rig.session.up();
  await flushMicrotasks();
  assert.equal(rig.sessions.length, 2);
  for (const s of rig.sessions) {
    assert.ok(s.subscribed.some((f) => f.includes(NBIRTH)), "its own NBIRTH asked for");
    assert.ok(
      s.subscribed.some((f) => f.includes("spBv1.0/g/NCMD/n") && !f.includes(NBIRTH)),
      `NCMD asked for apart from the NBIRTH filter: ${JSON.stringify(s.subscribed)}`,
    );
  }
  const warns = lines.filter((l) => l.startsWith("WARN") && /subscrib/.test(l));
  assert.deepEqual(
    warns.filter((l) => /NCMD/.test(l)),
    [],
    `no NCMD/DCMD failure WARNed:\n${lines.join("\n")}`,
  );
  const refused = warns.filter((l) =>
    /own NBIRTH topic failed: Subscribe error: Not authorized/.test(l)
  );
  assert.equal(
    refused.length,
    1,
    `the refusal WARNed once for both connections:\n${lines.join("\n")}`,
  );
  assert.match(refused[0]!, /another client publishing as this edge node is not detected/);
  assert.equal(rig.node.online, true, "born on the second connection");
  await rig.stop();
});
