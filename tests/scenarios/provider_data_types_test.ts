/**
 * A sample whose member disagrees with its Value.type or with the signal's declared type is not
 * stored as a good value (quality FAULT, counted, logged at a bounded rate); NaN and ±Infinity are
 * stored with quality FAULT and a visible `non_finite` name.
 */
import assert from "node:assert/strict";
import { DATA_FAULT_LOG_LINES } from "../../src/state/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { startDataFixture } from "./_data_helpers.ts";

Deno.test("Values of the wrong type are stored as FAULT without a value, counted and logged at a bounded rate", async () => {
  const { fx, lines } = await startDataFixture("values", { pollingIntervalMs: 20 });
  try {
    const cache = fx.runtime.cache;
    for (const sid of ["flag", "level", "count"]) {
      assert.deepEqual(
        cache.signal("p0", "types", sid),
        { ...cache.signal("p0", "types", sid), value: null, quality: "FAULT" },
        sid,
      );
    }
    assert.deepEqual(cache.signal("p0", "types", "good")?.value, { type: "double", double: 2.5 });
    assert.equal(cache.signal("p0", "types", "good")?.quality, "OK");
    assert.equal(cache.deviceQuality(cache.device("p0", "types")!), "FAULT");

    const res = await fx.request("GET", "/v0/state/p0/types");
    assert.equal(res.status, 200);
    assert.equal(res.json.quality, "FAULT");
    const byId = new Map(res.json.values.map((s: { signal_id: string }) => [s.signal_id, s]));
    // A refused value is not shown: the signal keeps its place with no value, as in anolis.
    assert.deepEqual(byId.get("flag"), {
      ...byId.get("flag") as object,
      value: { type: "unknown" },
      quality: "FAULT",
    });

    // Three refused values per poll: enough polls for more than DATA_FAULT_LOG_LINES refusals.
    await waitFor(
      "refusals beyond the log bound",
      () => fx.runtime.providerHealth()[0]!.data_faults!.type_mismatch > 3 * DATA_FAULT_LOG_LINES,
    );
    const faults = fx.runtime.providerHealth()[0]!.data_faults!;
    // Counted exactly: 3 type mismatches and 3 non-finite doubles in every poll of `types`.
    assert.equal(faults.type_mismatch % 3, 0);
    assert.equal(faults.non_finite, faults.type_mismatch);
    const health = await fx.request("GET", "/v0/providers/health");
    assert.ok(health.json.providers[0].data_faults.type_mismatch >= faults.type_mismatch);
    // Logged at a bounded rate: DATA_FAULT_LOG_LINES per kind in the first window, no more.
    const mismatchLines = lines.filter((l) => / value (on a signal declared|in a Value)/.test(l));
    assert.equal(mismatchLines.length, DATA_FAULT_LOG_LINES);
    assert.ok(mismatchLines.every((l) => l.startsWith("WARN")));
  } finally {
    await fx.close();
  }
});

Deno.test("NaN and ±Infinity are stored with quality FAULT and served with their non_finite name", async () => {
  const { fx } = await startDataFixture("values");
  try {
    const cache = fx.runtime.cache;
    for (const [sid, name] of [["nan", "NaN"], ["pinf", "Infinity"], ["ninf", "-Infinity"]]) {
      const s = cache.signal("p0", "types", sid!);
      assert.equal(s?.quality, "FAULT", sid);
      assert.equal(s?.value?.type === "double" && s.value.non_finite, name);
    }
    const res = await fx.request("GET", "/v0/state/p0/types");
    assert.match(
      res.text,
      /"signal_id":"nan","value":\{"type":"double","double":null,"non_finite":"NaN"\}/,
    );
    assert.match(
      res.text,
      /"signal_id":"pinf","value":\{"type":"double","double":null,"non_finite":"Infinity"\}/,
    );
    assert.match(
      res.text,
      /"signal_id":"ninf","value":\{"type":"double","double":null,"non_finite":"-Infinity"\}/,
    );
    const nan = res.json.values.find((s: { signal_id: string }) => s.signal_id === "nan");
    assert.equal(nan.quality, "FAULT");
  } finally {
    await fx.close();
  }
});
