/**
 * A rediscovery declaring a signal in another unit, or of another type, within an incident's
 * lead-up, before its trigger (docs/history.md, "Incidents", "A retype or a unit change before
 * the trigger"): a line has one unit and one type, so the signal's line begins at the device's first
 * poll in the new declaration and says so (`from_epoch_ms`, one WARN): none of its samples polled
 * in the old unit is labelled with the new one (20 degC never reads as 20 degF). In process: a
 * hand-fed History on a manual clock (each poll of pollSignals comes with a list of its own: a
 * rediscovery's), the window let pass before the record is read.
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { incidentRig } from "./_incident_rig.ts";

/** An inventory declaring p/d/x in the unit and type `now()` gives (as the rediscovery left it). */
function inventoryOf(now: () => { unit: string; valueType: string }) {
  return {
    capabilities: (p: string, d: string) =>
      p === "p" && d === "d"
        ? ({ signals: [{ signalId: "x", ...now() }] } as unknown as DeviceCapabilities)
        : undefined,
  };
}

Deno.test("an incident record never labels lead-up samples polled before a unit change ahead of its trigger with the new unit: the line begins at the change", async () => {
  let unit = "degC";
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, declaredUnits, pollSignals, estop, session } = incidentRig({
    config: { incidentBeforeS: 10, incidentAfterS: 1 },
    inventory: inventoryOf(() => ({ unit, valueType: "double" })),
    log,
  });
  declaredUnits.set("p/d/x", "degC");
  await session(async () => {
    const t0 = clock.wall;
    pollSignals(["x"], 20, "p", "d");
    clock.advance(1000);
    pollSignals(["x"], 21, "p", "d");
    clock.advance(1000);
    // The provider restarted declaring degF: the device's next poll is its first in degF.
    unit = "degF";
    declaredUnits.set("p/d/x", "degF");
    pollSignals(["x"], 70, "p", "d");
    clock.advance(1000);
    pollSignals(["x"], 71, "p", "d");
    estop(); // at t0 + 3000: the lead-up holds two polls in degC and two in degF
    clock.advance(2000);
    await incidents.settled();
    const [header] = incidents.list();
    assert.ok(header !== undefined, "the record is written once its window passed");
    assert.equal(header.from_epoch_ms, t0 + 3000 - 10_000, "the window as configured");
    const { signals } = await incidents.get(header.incident_id);
    const xs = signals.filter((s) => s.signal_id === "x");
    assert.equal(xs.length, 1, `one line of x: ${JSON.stringify(xs)}`);
    const [x] = xs;
    assert.equal(x!.unit, "degF", "the unit its samples were polled in when the incident began");
    assert.deepEqual(
      x!.samples,
      [[t0 + 2000, 70, "OK"], [t0 + 3000, 71, "OK"]],
      "the samples polled in degF only: none polled in degC labelled degF",
    );
    assert.equal(x!.from_epoch_ms, t0 + 2000, "the line says where its samples begin");
    assert.equal(header.samples, 2, "the header counts the samples the record holds");
    const said = lines.filter((l) => l.includes(`incident ${header.incident_id}:`));
    assert.equal(said.length, 1, `one line says what the record left out: ${said}`);
    assert.match(said[0]!, /^WARN .*1 signal\(s\).*"p\/d\/x".*unit/);
  });
});

Deno.test("an incident record keeps a signal retyped ahead of its trigger from the retype on, as it does a unit change: one rule", async () => {
  let valueType = "double";
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, incidents, declaredTypes, declaredUnits, pollSignals, feed, estop, session } =
    incidentRig({
      config: { incidentBeforeS: 10, incidentAfterS: 1 },
      inventory: inventoryOf(() => ({ unit: "", valueType })),
      log,
    });
  declaredTypes.set("p/d/x", "double");
  declaredUnits.set("p/d/x", "");
  /** A poll of p/d/x as an int64 `n` (a new list of signals: a rediscovery's, as pollSignals). */
  const pollInt = (n: number) =>
    feed(
      {
        providerId: "p",
        deviceId: "d",
        pollable: ["x"],
        signals: new Map([["x", {
          value: { type: "int64", int64: BigInt(n) },
          quality: "OK",
          timestampMs: clock.wall,
          receivedMono: clock.mono,
        }]]),
        lastPollMs: clock.wall,
        lastPollMono: clock.mono,
        available: true,
      } as Parameters<typeof feed>[0],
    );
  await session(async () => {
    const t0 = clock.wall;
    pollSignals(["x"], 20, "p", "d");
    clock.advance(1000);
    pollSignals(["x"], 21, "p", "d");
    clock.advance(1000);
    valueType = "int64";
    declaredTypes.set("p/d/x", "int64");
    pollInt(70);
    clock.advance(1000);
    pollInt(71);
    estop();
    clock.advance(2000);
    await incidents.settled();
    const [header] = incidents.list();
    assert.ok(header !== undefined, "the record is written once its window passed");
    const { signals } = await incidents.get(header.incident_id);
    const xs = signals.filter((s) => s.signal_id === "x");
    assert.equal(xs.length, 1, `one line of x: ${JSON.stringify(xs)}`);
    const [x] = xs;
    assert.equal(x!.value_type, "int64");
    assert.deepEqual(
      x!.samples.map(([t, v, q]) => [t, Number(v), q]),
      [[t0 + 2000, 70, "OK"], [t0 + 3000, 71, "OK"]],
      "the samples polled as int64 only",
    );
    assert.equal(x!.from_epoch_ms, t0 + 2000, "the line says where its samples begin");
    const said = lines.filter((l) => l.includes(`incident ${header.incident_id}:`));
    assert.equal(said.length, 1, `one line says what the record left out: ${said}`);
    assert.match(said[0]!, /^WARN .*1 signal\(s\).*"p\/d\/x"/);
  });
});
