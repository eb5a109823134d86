/**
 * An incident beginning after a rediscovery declared a signal in another unit, but before the
 * device's first poll since (docs/history.md, "Incidents", "Units as they were"): the record keeps
 * the unit its samples so far were polled in (the history's), not the unit the inventory declares
 * now. In process: a hand-fed History on a manual clock, so no poll comes between the rediscovery
 * and the trigger (each poll of pollSignals comes with a list of its own: a rediscovery's).
 */
import assert from "node:assert/strict";
import type { DeviceCapabilities } from "../../src/common/mod.ts";
import { incidentRig } from "./_incident_rig.ts";

Deno.test("an incident beginning between a unit change and the device's next poll labels its lead-up with the unit it was polled in", async () => {
  // The inventory as the rediscovery left it: x declared in `unit`.
  let unit = "degC";
  const inventory = {
    capabilities: (p: string, d: string) =>
      p === "p" && d === "d"
        ? ({ signals: [{ signalId: "x", unit, valueType: null }] } as unknown as DeviceCapabilities)
        : undefined,
  };
  const { clock, incidents, history, declaredUnits, pollSignals, estop, session } = incidentRig({
    config: { incidentBeforeS: 10, incidentAfterS: 600 },
    inventory,
  });
  declaredUnits.set("p/d/x", "degC");
  await session(async () => {
    const t0 = clock.wall;
    pollSignals(["x"], 20, "p", "d");
    clock.advance(1000);
    pollSignals(["x"], 21, "p", "d");
    clock.advance(1000);
    // A rediscovery: x is in degF now; the device has not been polled since.
    unit = "degF";
    declaredUnits.set("p/d/x", "degF");
    assert.equal(history.declaredUnits("p", "d")?.[0]?.unit, "degC", "its samples so far in degC");
    estop();
    clock.advance(1000);
    // The first poll since the rediscovery (its new list of signals), in degF: the record is
    // written here, without it.
    pollSignals(["x"], 70, "p", "d");
    await incidents.settled();
    const [header] = incidents.list();
    assert.ok(header !== undefined, "the record is written at the first poll in degF");
    const { signals } = await incidents.get(header.incident_id);
    const xs = signals.filter((s) => s.signal_id === "x");
    assert.equal(xs.length, 1, `one line of x: ${JSON.stringify(xs)}`);
    assert.equal(
      xs[0]!.unit,
      "degC",
      "the unit its samples were polled in, not the one declared now",
    );
    assert.deepEqual(
      xs[0]!.samples,
      [[t0, 20, "OK"], [t0 + 1000, 21, "OK"]],
      "the samples polled in degC, and none polled in degF",
    );
  });
});
