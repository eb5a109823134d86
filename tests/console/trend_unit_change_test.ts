/**
 * The trend's axis names the unit a signal declares now: a history answer over a unit change
 * (GET /v0/history's `unit_changes`, a provider restart declaring another unit) has points before
 * the change in another unit, which the chart must not draw on that axis (20 degC drawn as 20 K).
 * `pointsInUnitNow` (console/trend.js) keeps the points from the last change on and says what
 * changed, for the view's note. Pure, under Deno.
 */
import assert from "node:assert/strict";
import { pointsInUnitNow } from "../../console/trend.js";

const pt = (t_ms: number, last: number) => ({ t_ms, last, min: last, max: last, count: 1 });

Deno.test("pointsInUnitNow keeps a signal's points from its last unit change on, and names the change", () => {
  const change = { at_ms: 3000, unit_before: "degC", unit: "K" };
  const sig = {
    signal_id: "temp",
    unit: "K",
    unit_changes: [{ at_ms: 1500, unit_before: "", unit: "degC" }, change],
    points: [pt(1000, 1), pt(2000, 20), pt(3000, 294), pt(4000, 295)],
  };
  assert.deepEqual(pointsInUnitNow(sig), {
    points: [pt(3000, 294), pt(4000, 295)],
    changed: change,
  });
  // No change (or an answer of a runtime that does not say): every point, nothing said.
  for (const plain of [{ unit_changes: [] }, {}]) {
    assert.deepEqual(pointsInUnitNow({ ...plain, points: [pt(1000, 1)] }), {
      points: [pt(1000, 1)],
      changed: null,
    });
  }
});
