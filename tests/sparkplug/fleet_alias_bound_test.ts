/**
 * The fleet view's alias table is bounded by count: per node (MAX_FLEET_ALIASES_PER_NODE) and over
 * all nodes (MAX_FLEET_ALIASES), only aliases of the node metrics it reads kept; past a bound new
 * ones are not kept, said in `truncated`. Before, a node's NBIRTH of millions of tiny aliases was
 * held whole for the window (bounded only by the bytes of what it read). And a node's aliases are
 * of its latest NBIRTH: one an earlier birth gave a node metric names nothing once a new birth
 * does not define it (before, its NDATA were still read as that node metric).
 *
 * The view listens to a session double on a manual clock (_fleet_rig.ts).
 */
import assert from "node:assert/strict";
import {
  DataType,
  MAX_FLEET_ALIASES,
  MAX_FLEET_ALIASES_PER_NODE,
} from "../../src/sparkplug/mod.ts";
import { listeningFleet } from "./_fleet_rig.ts";

const mode = (alias: number, value: string) => ({
  name: "Runtime/Mode",
  alias,
  datatype: DataType.String,
  string_value: value,
});

Deno.test("a node's NBIRTH of more aliases than MAX_FLEET_ALIASES_PER_NODE keeps that many, said in truncated", async () => {
  const { clock, collected, send } = await listeningFleet(1000);
  const many = Array.from(
    { length: MAX_FLEET_ALIASES_PER_NODE + 10 },
    (_, i) => mode(i + 1, "AUTO"),
  );
  send("NBIRTH/n", many);
  // An NDATA by an alias past the bound is not read; one within it is.
  send("NDATA/n", [{ alias: MAX_FLEET_ALIASES_PER_NODE + 5, string_value: "PAST" }]);
  const past = await collectedNow(clock, collected);
  assert.equal(past.truncated, true, "the bound is said in truncated");
  assert.equal(past.nodes[0]!.mode, "AUTO", "an alias past the bound is not read");
});

Deno.test("a node's NBIRTH within the bound reads its NDATA by alias, truncated false", async () => {
  const { clock, collected, send } = await listeningFleet(1000);
  send("NBIRTH/n", [mode(1, "AUTO")]);
  send("NDATA/n", [{ alias: 1, string_value: "MANUAL" }]);
  const r = await collectedNow(clock, collected);
  assert.equal(r.truncated, false);
  assert.equal(r.nodes[0]!.mode, "MANUAL");
});

Deno.test("the aliases over all nodes stop at MAX_FLEET_ALIASES, said in truncated", async () => {
  const { clock, collected, send } = await listeningFleet(1000);
  const per = MAX_FLEET_ALIASES_PER_NODE;
  const nodes = Math.ceil((MAX_FLEET_ALIASES + 1) / per);
  // Each node within its own bound; all together one past the total.
  for (let n = 0; n < nodes; n++) {
    send(`NBIRTH/n${n}`, Array.from({ length: per }, (_, i) => mode(i + 1, "AUTO")));
  }
  const r = await collectedNow(clock, collected);
  assert.equal(r.truncated, true);
  assert.equal(r.nodes.length, nodes);
});

Deno.test("an alias of a node's earlier NBIRTH that its new one does not define is not read", async () => {
  const { clock, collected, send } = await listeningFleet(1000);
  send("NBIRTH/n", [mode(5, "AUTO")]);
  // Born again: the mode is alias 6 now; alias 5 is no metric of this birth.
  send("NBIRTH/n", [mode(6, "MANUAL")]);
  send("NDATA/n", [{ alias: 5, string_value: "NOT A MODE" }]);
  const r = await collectedNow(clock, collected);
  assert.equal(r.nodes[0]!.mode, "MANUAL");
});

/** Ends the window (the manual clock past it) and returns what the view saw. */
async function collectedNow(
  clock: { advance(ms: number): void },
  collected: Promise<{ nodes: { mode: string | null }[]; truncated: boolean }>,
) {
  clock.advance(1000);
  return await collected;
}
