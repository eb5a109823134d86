/**
 * A provider with more devices than its ADPP session takes poll reads in flight
 * (DEFAULT_MAX_IN_FLIGHT; a fieldbus gateway may list up to MAX_DEVICES_PER_PROVIDER) has every
 * device polled. A poll pass sends every due device's ReadSignals in one turn; the reads past the
 * session's room were refused every pass, so the devices past the 64th were never polled: no
 * value, nothing for alarms and checks on them to see, and every refusal counted as a poll error.
 * Real: the simulated provider as a child process, answering fast.
 */
import assert from "node:assert/strict";
import { DEFAULT_MAX_IN_FLIGHT } from "../../src/adpp/mod.ts";
import { afterPolls, startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";

/** More devices than the session takes poll reads in flight. */
const SENSORS = DEFAULT_MAX_IN_FLIGHT + 6;
/** Sensor `k`'s id: numbered so that discovery's order (by id) is theirs. */
function sensor(k: number): string {
  return `analogsensor${String(k).padStart(2, "0")}`;
}
/** The signals of the simulated analogsensor (all polled). */
const SENSOR_SIGNALS = [
  "voltage_ch1",
  "voltage_ch2",
  "voltage_ch3",
  "voltage_ch4",
  "sensor_quality",
];

function gatewayYaml(): string {
  const sensors = Array.from(
    { length: SENSORS },
    (_, k) => `  - id: ${sensor(k)}\n    type: analogsensor\n`,
  ).join("");
  return `provider:\n  name: gw\nstartup_policy: strict\ndevices:\n${sensors}` +
    `simulation:\n  mode: inert\n`;
}

Deno.test("Every device of a provider with more devices than a session's poll reads in flight is polled: a value, quality OK, no poll error", async () => {
  const yaml = await Deno.makeTempFile({ prefix: "gateway-", suffix: ".yaml" });
  await Deno.writeTextFile(yaml, gatewayYaml());
  const rt = await startRuntime(
    testConfig({
      providers: [simProvider("gw", { yaml, timeoutMs: 5000, restart: false })],
      pollingIntervalMs: 100,
    }),
  );
  try {
    // The priming pass and a few of the loop's passes (the last device's own polls counted).
    await afterPolls(rt, `gw/${sensor(SENSORS - 1)}`, 3, "3 polls of the last sensor", 20000)
      .catch((err) => {
        const last = rt.cache.device("gw", sensor(SENSORS - 1));
        throw new Error(
          `${err.message}; its samples: ${
            JSON.stringify([...last?.signals ?? []].map(([id, s]) => [id, s.quality, s.value]))
          }; poll errors: ${rt.cache.pollMetrics("gw")?.errors}`,
        );
      });
    const notPolled: string[] = [];
    for (let k = 0; k < SENSORS; k++) {
      const dev = rt.cache.device("gw", sensor(k));
      assert.ok(dev, `${sensor(k)} discovered`);
      for (const id of SENSOR_SIGNALS) {
        const s = dev.signals.get(id);
        if (s?.value == null || s.quality !== "OK" || !dev.available) {
          notPolled.push(`${sensor(k)}/${id}: ${s ? `${s.quality} ${s.value}` : "no sample"}`);
        }
      }
    }
    assert.deepEqual(notPolled, [], "every signal of every device has a value, quality OK");
    // A read that waited for room in the session is no failed poll.
    assert.equal(rt.cache.pollMetrics("gw")?.errors, 0, "poll errors");
  } finally {
    await rt.stop();
    await Deno.remove(yaml);
  }
});
