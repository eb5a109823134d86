/**
 * An e-stop's incident record is machine-wide (docs/history.md, "Incidents": every full-rate
 * sample of every signal of all devices in its window). A reload that removes a provider while the
 * record waits for the end of its window leaves that provider's devices in it: their samples
 * before the trigger are part of the window, and the ring keeps a removed device's samples until
 * they are `memory_seconds` old, and the record keeps their units as declared when it began. The
 * simulated providers run as child processes.
 */
import assert from "node:assert/strict";
import { afterPolls, startRuntime, waitFor } from "../helpers/kernel.ts";
import { DEFAULT_HISTORY, simProvider, testConfig } from "../helpers/sim_config.ts";

Deno.test("An e-stop's incident keeps the devices of a provider a reload removed while the record waited for its window", async () => {
  const config = testConfig({
    providers: [simProvider("sim0"), simProvider("sim1")],
    pollingIntervalMs: 100,
    history: { ...DEFAULT_HISTORY, incidentBeforeS: 5, incidentAfterS: 2 },
  });
  const rt = await startRuntime(config);
  try {
    await afterPolls(rt, "sim1/tempctl0", 3);
    // sim1's units as declared before the reload removes it: handle -> unit ("" for none).
    const declared = new Map(
      rt.inventory.capabilities("sim1", "tempctl0")!.signals.map((x) => [
        `sim1/tempctl0/${x.signalId}`,
        x.unit,
      ]),
    );
    assert.ok([...declared.values()].includes("C"), "tempctl0 declares units");
    const result = await rt.estop.trigger("pair test");
    assert.equal(result.latched, true);
    const report = await rt.reload({ ...rt.config, providers: [rt.config.providers[0]!] });
    assert.deepEqual(report.providers.removed, ["sim1"]);
    const [header] = await waitFor("the e-stop's incident written", () => {
      const l = rt.incidents!.list();
      return l.length > 0 ? l : null;
    }, 15000);
    assert.equal(header!.trigger, "estop");
    const { incident, signals } = await rt.incidents!.get(header!.incident_id);
    assert.equal(incident.scope, "machine");
    assert.ok(
      incident.devices.some((d) => d.startsWith("sim1/")),
      `sim1's devices are in the record: ${incident.devices.join(", ")}`,
    );
    const sim1 = signals.filter((s) => s.provider_id === "sim1" && s.samples.length > 0);
    assert.ok(sim1.length > 0, "sim1's samples before the trigger are in the record");
    for (const s of sim1) {
      assert.ok(
        s.samples.some(([t]) => t <= header!.at_epoch_ms),
        `${s.device_id}/${s.signal_id} has samples before the trigger`,
      );
    }
    // The record keeps the units of a provider the runtime no longer has.
    const kept = signals.filter((s) => s.provider_id === "sim1" && s.device_id === "tempctl0");
    for (const s of kept) {
      const handle = `sim1/tempctl0/${s.signal_id}`;
      assert.equal(s.unit, declared.get(handle), `${handle}: its unit as declared then`);
    }
    assert.ok(kept.some((s) => s.unit === "C"), "a unit of the removed provider is kept");
  } finally {
    await rt.stop();
  }
});
