/**
 * Only the signals a device declared are accepted. A provider answering 50 new signal ids per poll
 * grows neither the cache nor the event stream; the rest is counted and logged at a bounded rate.
 */
import assert from "node:assert/strict";
import { DATA_FAULT_LOG_LINES } from "../../src/state/mod.ts";
import { recordEvents, waitFor } from "../helpers/kernel.ts";
import { startDataFixture } from "./_data_helpers.ts";

Deno.test("Samples of undeclared signals are dropped, counted and logged at a bounded rate", async () => {
  const { fx, lines } = await startDataFixture("values", { pollingIntervalMs: 20 });
  const rec = recordEvents(fx.runtime);
  try {
    const rt = fx.runtime;
    await waitFor(
      "several polls of junk",
      () => rt.providerHealth()[0]!.data_faults!.undeclared_signal >= 5 * 50,
    );
    // Only the declared, polled signal is cached (`quiet` is declared without a poll hint).
    assert.deepEqual([...rt.cache.device("p0", "junk")!.signals.keys()], ["real"]);
    const undeclared = rt.providerHealth()[0]!.data_faults!.undeclared_signal;
    assert.equal(undeclared % 50, 0, `${undeclared} is not 50 per poll`);
    const junkEvents = rec.events.filter((e) =>
      (e.kind === "state_update" || e.kind === "quality_change") && e.device_id === "junk" &&
      e.signal_id !== "real"
    );
    assert.deepEqual(junkEvents, []);
    const res = await fx.request("GET", "/v0/state/p0/junk");
    assert.deepEqual(res.json.values.map((s: { signal_id: string }) => s.signal_id), ["real"]);
    const logged = lines.filter((l) => l.includes("undeclared signal"));
    assert.equal(logged.length, DATA_FAULT_LOG_LINES);
  } finally {
    rec.stop();
    await fx.close();
  }
});
