/**
 * A device its provider leaves out at a restart (its host check unmet for it: unplugged) and lists
 * again at the next, seen through GET /v0/events: its signals' quality goes UNAVAILABLE when the
 * provider crashes and OK again once it answers, and a stream client told the first by a
 * `quality_change` is told the second by one too -- as it is of a device listed throughout, whose
 * signals the cache kept across the restarts (docs/http-api.md, "Events": `quality_change` whenever
 * the quality changes). The programmable provider as a real child process (its inventory read from
 * a file at each start), real HTTP and SSE on loopback.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, T } from "../helpers/programmable_provider.ts";
import { EventStream, type ReceivedEvent } from "./alarms_helpers.ts";
import { withHostUnmetRig } from "./_host_unmet_rig.ts";

const PROBE = { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] };
const KEPT = { signals: [{ id: "y", type: T.DOUBLE }], values: [dbl("y", 2)] };
/** Both devices listed. */
const BOTH: Inventory = { devices: { probe: PROBE, kept: KEPT } };
/** `probe` left out (its bus node gone), `kept` still listed. */
const PROBE_UNPLUGGED: Inventory = { devices: { kept: KEPT } };

/** The quality changes of `device` in `frames`, as `old>new`. */
function qualityChanges(frames: readonly ReceivedEvent[], device: string): string[] {
  return frames
    .filter((f) => f.event === "quality_change" && f.data.device_id === device)
    .map((f) => `${f.data.old_quality}>${f.data.new_quality}`);
}

Deno.test("a device listed again after a restart that left it out gets the quality_change back to OK a device listed throughout gets", async () => {
  await withHostUnmetRig("sse-relisted-", BOTH, {}, async ({ rt, api, restartAs }) => {
    const pol = rt.registry.host("pol")!;
    await waitFor(
      "both devices answered",
      () =>
        rt.cache.device("pol", "probe")?.available === true &&
        rt.cache.device("pol", "kept")?.available === true,
    );
    const stream = await EventStream.open(api.base);
    try {
      // Crashed, back without probe; crashed again, back with it.
      await restartAs(
        pol,
        PROBE_UNPLUGGED,
        "pol back without probe",
        (h) => h.devices.length === 1,
      );
      await waitFor(
        "kept answering again",
        () => rt.cache.device("pol", "kept")?.available === true,
      );
      await restartAs(pol, BOTH, "pol back with probe", (h) => h.devices.length === 2);
      await waitFor(
        "both answering again",
        () =>
          rt.cache.device("pol", "probe")?.available === true &&
          rt.cache.device("pol", "kept")?.available === true,
      );
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      assert.deepEqual(
        qualityChanges(stream.frames, "kept"),
        ["OK>UNAVAILABLE", "UNAVAILABLE>OK", "OK>UNAVAILABLE", "UNAVAILABLE>OK"],
        "the device listed throughout",
      );
      assert.deepEqual(
        qualityChanges(stream.frames, "probe"),
        ["OK>UNAVAILABLE", "UNAVAILABLE>OK"],
        "the device left out once: told UNAVAILABLE at the crash, OK once back",
      );
      const state = await api.get("/v0/state/pol/probe");
      assert.equal(state.json.values[0].quality, "OK");
    } finally {
      await stream.close();
    }
  });
});
