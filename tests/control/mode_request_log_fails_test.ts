/**
 * A line that throws (a custom logger) loses the line, never the mode change it announces: the
 * operator's request to arm is made, its after-hooks and listeners told, as with a logger that
 * writes.
 */
import assert from "node:assert/strict";
import { rig } from "../helpers/rig.ts";

Deno.test("ModeManager.request makes the change when its 'transition requested' line throws (a custom logger)", async () => {
  await using r = await rig({
    // The sink fails on the request's INFO line.
    onLine: (line) => {
      if (line.includes("(requested)")) throw new Error("log sink failed");
    },
  });
  const rt = r.kernel;
  const told: string[] = [];
  rt.modes.onModeChange((c) => told.push(`${c.previous}->${c.current}`));
  // Before: the line's throw refused the request (INTERNAL): the mode stayed IDLE.
  assert.equal(await rt.modes.request("MANUAL"), "MANUAL");
  assert.equal(rt.modes.current(), "MANUAL");
  assert.deepEqual(told, ["IDLE->MANUAL"]);
  assert.ok(
    r.events.some((e) => e.kind === "mode_change" && e.new_mode === "MANUAL"),
    "mode_change published",
  );
});
