/**
 * A broker that closes every connection at its births, each close carrying one of two errors in
 * turn (a read's and a write's ECONNRESET, as a loaded machine shows them): the errors are WARNed
 * in the first BIRTH_LOSSES_BEFORE_BACKOFF losses, each message once per connection, and never
 * again in the losses after them (the node said once what is going on). Before, only the last
 * message was remembered, so two alternating messages were WARNed at every loss for ever.
 */
import assert from "node:assert/strict";
import { BIRTH_LOSSES_BEFORE_BACKOFF } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

Deno.test("SparkplugEdgeNode: broker errors that alternate are WARNed once each per connection in the first losses at births, then no more", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const rig = edgeNodeRig({ log });
  await rig.online();
  const k = BIRTH_LOSSES_BEFORE_BACKOFF;
  for (let loss = 1; loss <= k + 4; loss++) {
    const s = rig.session;
    s.error(loss % 2 === 1 ? "read ECONNRESET" : "write ECONNRESET");
    s.error(loss % 2 === 1 ? "write ECONNRESET" : "read ECONNRESET");
    s.down();
    await flushMicrotasks();
    await rig.clock.advanceAsync(60_000);
    assert.equal(rig.sessions.length, loss + 1, `a new connection after loss ${loss}`);
    rig.session.up();
    await flushMicrotasks();
  }
  const said = lines.findIndex((l) => / of its births \d+ times in a row/.test(l));
  assert.ok(said >= 0, lines.join("\n"));
  const brokerErrors = (from: number, to = lines.length) =>
    lines.slice(from, to).filter((l) => l.startsWith("WARN") && / broker connection: /.test(l));
  assert.equal(brokerErrors(0, said).length, 2 * k, "each message once per connection, k of them");
  assert.deepEqual(brokerErrors(said), [], "none in the losses after the kth");
  await rig.stop();
});
