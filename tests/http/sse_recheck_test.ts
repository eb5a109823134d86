/**
 * SseHub.recheck: after the API tokens change, the streams whose holder is no longer admitted end;
 * the others stay open (docs/http-api.md "Roles"; the reload itself:
 * tests/scenarios/config_reload_test.ts).
 */
import assert from "node:assert/strict";
import { EventBus } from "../../src/events/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { SseHub } from "../../src/http/sse_hub.ts";

const FILTER = { providerId: "", deviceId: "", signalId: "" };

/** A hub on its own bus, its INFO lines kept in `lines`. */
function hubOf(bus = new EventBus()): { hub: SseHub; lines: string[] } {
  const lines: string[] = [];
  const hub = new SseHub({
    bus,
    log: capturingLogger({ level: "info", now: () => 0, lines }).log,
    clock: systemClock,
    keepAliveMs: 60_000,
  });
  return { hub, lines };
}

Deno.test("SseHub.recheck ends the streams whose holder is refused now, keeps the others, and counts only those it ended", async () => {
  const bus = new EventBus();
  const { hub, lines } = hubOf(bus);
  try {
    let shiftAdmitted = true;
    const asked: string[] = [];
    // Admitted under the tokens in force when opened: asked only by recheck().
    const holder = (principal: string, admitted: () => boolean) => ({
      principal,
      current: () => true,
      admitted: () => {
        asked.push(principal);
        return Promise.resolve(admitted());
      },
    });
    const shift = hub.open(FILTER, undefined, holder("shift", () => shiftAdmitted)).body!
      .getReader();
    const dash = hub.open(FILTER, undefined, holder("dash", () => true)).body!.getReader();
    const plain = hub.open(FILTER).body!.getReader(); // no holder: never asked
    const gone = hub.open(FILTER, undefined, holder("gone", () => false)).body!.getReader();
    await gone.cancel(); // left before the tokens changed
    assert.equal(hub.clientCount, 3);

    assert.equal(await hub.recheck(), 0, "everyone still admitted");
    assert.deepEqual(asked.splice(0), ["shift", "dash"]);
    shiftAdmitted = false;
    assert.equal(await hub.recheck(), 1);
    assert.equal(hub.clientCount, 2);
    assert.deepEqual((await shift.read()).done, true, "shift's stream ended");
    bus.publish({
      kind: "mode_change",
      previous_mode: "IDLE",
      new_mode: "MANUAL",
      timestamp_ms: 1,
    });
    for (const r of [dash, plain]) {
      const chunk = await r.read();
      assert.equal(chunk.done, false);
      assert.match(new TextDecoder().decode(chunk.value), /event: mode_change/);
    }
    assert.deepEqual(
      lines.filter((l) => l.includes("event stream of")).map((l) => l.replace(/^INFO +\S+ /, "")),
      ["event stream of 'shift' ended: its token no longer admits it (API tokens changed)"],
    );
    assert.equal(await hub.recheck(), 0, "an ended stream is not asked again");
    assert.deepEqual(asked.splice(0), ["shift", "dash", "dash"]);
    await dash.cancel();
    await plain.cancel();
  } finally {
    hub.closeAll();
  }
});

Deno.test("SseHub: a stream opened under tokens a reload has replaced since is asked at once; one admitted under the current tokens is not", async () => {
  const { hub, lines } = hubOf();
  try {
    const asked: string[] = [];
    const holder = (principal: string, current: boolean, admitted: boolean) => ({
      principal,
      current: () => current,
      admitted: () => {
        asked.push(principal);
        return Promise.resolve(admitted);
      },
    });
    // Identified with a token the reload removed, opened after its recheck had walked the streams.
    const late = hub.open(FILTER, undefined, holder("late", false, false)).body!.getReader();
    // Identified before the reload with a token it kept.
    const kept = hub.open(FILTER, undefined, holder("kept", false, true)).body!.getReader();
    // Identified under the tokens in force.
    const fresh = hub.open(FILTER, undefined, holder("fresh", true, false)).body!.getReader();
    assert.deepEqual((await late.read()).done, true, "late's stream ended");
    assert.deepEqual(asked.sort(), ["kept", "late"]);
    assert.equal(hub.clientCount, 2);
    assert.equal(lines.filter((l) => l.includes("event stream of 'late' ended")).length, 1);
    await kept.cancel();
    await fresh.cancel();
  } finally {
    hub.closeAll();
  }
});
