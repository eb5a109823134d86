/**
 * A reload while latched secures again every provider up whose ladder calls it changes, whatever
 * else is failing: a modes port whose ladderReloaded throws is contained per provider, and the
 * ERROR line saying so must not throw in turn when the logger fails too (a closed stdout) --
 * reconfigure() used to throw there, and the next provider was not secured again. In-process: the
 * real Estop over a router that answers every call at once and records it, two providers up, a
 * modes port whose ladderReloaded throws, and a logger whose lines throw while the test says so.
 */
import assert from "node:assert/strict";
import { LineLogger } from "../../src/host/mod.ts";
import { type SafeStateConfig } from "../../src/safety/mod.ts";
import { call } from "./_fixture.ts";
import { containedEstop, faultRecordingModes, providersUp, recordingRouter } from "./_clock_rig.ts";

/** A ladder of `calls` (handle, function), no read-back. */
function ladder(...calls: [string, string][]): SafeStateConfig {
  return {
    setpoints: [],
    hooks: calls.map(([h, fn]) => call(h, fn)),
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 100,
  };
}

Deno.test("Estop.reconfigure secures every provider again when ladderReloaded and the logger both throw", async () => {
  const made: string[] = [];
  const broken = { on: false };
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: () => {
      if (broken.on) throw new Error("log sink failed");
    },
  });
  const { modes } = faultRecordingModes();
  let reloaded = 0;
  modes.ladderReloaded = () => {
    reloaded++;
    throw new Error("modes port failed");
  };
  const estop = containedEstop({
    router: recordingRouter(made),
    inventory: providersUp("plant", "kiln"),
    log,
    modes,
    safeState: ladder(["plant/plant0", "stop_a"]),
  });
  await estop.trigger("test");
  assert.deepEqual(made, ["plant stop_a"]);
  broken.on = true;
  let runs: Promise<unknown>[] = [];
  assert.doesNotThrow(() => {
    runs = estop.reconfigure(ladder(["plant/plant0", "stop_b"], ["kiln/kiln0", "stop_c"]));
  }, "reconfigure() returns");
  assert.equal(reloaded, 2, "the hooks were asked to follow for each provider");
  assert.equal(runs.length, 2, "a securing run per provider whose ladder calls changed");
  await Promise.all(runs);
  assert.deepEqual(
    made.slice(1).sort(),
    ["kiln stop_c", "plant stop_b"],
    "both providers secured again with the new ladder",
  );
});
