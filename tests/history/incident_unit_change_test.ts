/**
 * A signal's unit changed by a rediscovery within an incident's window (docs/history.md,
 * "Incidents", "A redeclaration within the window"): the record is written then, as at a retype,
 * so its line keeps the samples polled in the old unit and never labels a sample polled in the new
 * unit with the old one. The programmable provider runs as a child process, served on loopback.
 */
import assert from "node:assert/strict";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { type Sample, T } from "../helpers/programmable_provider.ts";
import {
  probeFile,
  probeTempIn,
  restartDeclaringTempIn,
  startRig,
  T0,
} from "./_history_helpers.ts";

const temp = (v: number): Sample => ({ id: "temp", type: T.DOUBLE, double: v, quality: 1 });

Deno.test("an incident record never labels samples polled after a unit change within its window with the old unit", async () => {
  const dataDir = tempDir("incident-unit-change-");
  const file = await probeFile(dataDir, probeTempIn("degC"));
  // A window longer than the test: without the unit change the record would wait for the stop.
  const history = { incidentBeforeS: 10, incidentAfterS: 600, diskMaxBytes: 0 };
  const { log, lines } = capturingLogger({ level: "info" });
  let rig = await startRig({ dataDir, inventoryFile: file, history, host: { log } });
  try {
    await rig.poll(T0 + 1000, [temp(20)]);
    await rig.poll(T0 + 2000, [temp(21)]);
    await rig.rt.estop.trigger("unit change test");
    await waitFor("the e-stop's incident pending", () => rig.rt.incidents!.status().pending > 0);
    // The provider restarted by a reload reads its inventory again: temp is in degF now.
    await restartDeclaringTempIn(rig, probeTempIn("degF"), "degF");
    await rig.poll(T0 + 3000, [temp(70)]);
    await rig.poll(T0 + 4000, [temp(71)]);
  } finally {
    await rig.rt.stop(); // the record is written by now (or at the latest here)
  }
  const early = lines.filter((l) => l.includes("written early"));
  assert.equal(early.length, 1, `one line says the record was written early: ${early}`);
  assert.match(early[0]!, /^WARN .*p0\/probe.*1 signal\(s\) in another unit, the first "temp"/);
  rig = await startRig({ dataDir, inventoryFile: file, history });
  try {
    const [header] = await rig.json("/v0/incidents").then((l) => l.incidents);
    assert.equal(header?.trigger, "estop");
    const record = await rig.json(`/v0/incidents/${header.incident_id}`);
    // deno-lint-ignore no-explicit-any
    const temps = record.signals.filter((s: any) => s.signal_id === "temp");
    assert.equal(temps.length, 1, `one line of temp: ${JSON.stringify(temps)}`);
    const [line] = temps;
    assert.equal(line.unit, "degC", "the unit its samples were polled in");
    assert.deepEqual(
      line.samples,
      [[T0 + 1000, 20, "OK"], [T0 + 2000, 21, "OK"]],
      "the samples polled in degC, and none polled in degF labelled degC",
    );
    // The record is written at the device's first poll after the rediscovery: the runtime's own,
    // or the test's at T0 + 3000 (the wall clock then, a little past it), never later.
    assert.ok(
      header.until_epoch_ms >= T0 + 2000 && header.until_epoch_ms < T0 + 4000,
      `the window ends at the unit change, before the second poll in degF: ${header.until_epoch_ms}`,
    );
  } finally {
    await rig.rt.stop();
  }
});
