/**
 * The fleet view's table bounds each cell of text a peer published (a node metric such as
 * `Runtime/Mode`, a group or node id): a String of any length makes no row of that length.
 */
import assert from "node:assert/strict";
import { FLEET_TEXT_CHARS, fleetTable } from "../../src/sparkplug/mod.ts";

Deno.test("the fleet table cuts a peer's text at FLEET_TEXT_CHARS, marked with an ellipsis", () => {
  const long = "M".repeat(FLEET_TEXT_CHARS + 50);
  const table = fleetTable([{
    group: "lab",
    node: "n".repeat(FLEET_TEXT_CHARS + 1),
    reachable: true,
    born: true,
    bdSeq: 0,
    mode: long,
    estopLatched: false,
    alarmsActive: 0,
    alarmsUnacked: 0,
    providersUp: 1,
    providersDown: 0,
    version: null,
    foreignBirths: null,
    devices: 0,
  }]);
  const row = table.split("\n")[1]!;
  assert.ok(row.includes(`${"M".repeat(FLEET_TEXT_CHARS)}\u2026`), row);
  assert.ok(!row.includes("M".repeat(FLEET_TEXT_CHARS + 1)), row);
  assert.ok(row.includes(`${"n".repeat(FLEET_TEXT_CHARS)}\u2026`), row);
});
