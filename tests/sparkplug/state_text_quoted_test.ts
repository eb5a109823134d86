/**
 * A primary host's STATE message the node ignores is quoted in its WARN line cut to
 * STATE_TEXT_QUOTED_CHARS with a mark (quoteProviderTextWithin), JSON-quoted so that a line break
 * in it cannot end the line. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { STATE_TEXT_QUOTED_CHARS } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { edgeNodeRig } from "./_edge_node_rig.ts";

Deno.test("SparkplugEdgeNode quotes an ignored STATE's text up to STATE_TEXT_QUOTED_CHARS, marked when cut, one line", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({ primaryHostId: "h", log });
  await r.online();
  const enc = (t: string) => new TextEncoder().encode(t);
  const exact = "a\n" + "b".repeat(STATE_TEXT_QUOTED_CHARS - 2);
  r.session.deliver("STATE/h", enc(exact));
  r.session.deliver("STATE/h", enc(exact + "c"));
  r.session.deliver("spBv1.0/STATE/h", enc(exact + "c"));
  await flushMicrotasks();
  const warns = lines.filter((l) => l.startsWith("WARN") && /STATE on/.test(l));
  assert.equal(warns.length, 3, lines.join("\n"));
  for (const w of warns) assert.ok(!w.includes("\n"), "one line");
  assert.ok(warns[0]!.endsWith(`not ONLINE or OFFLINE: ${JSON.stringify(exact)}`), warns[0]);
  assert.ok(
    warns[1]!.endsWith(`not ONLINE or OFFLINE: ${JSON.stringify(`${exact}\u2026`)}`),
    warns[1],
  );
  assert.ok(
    warns[2]!.endsWith(`not a STATE payload: ${JSON.stringify(`${exact}\u2026`)}`),
    warns[2],
  );
  await r.stop();
});
