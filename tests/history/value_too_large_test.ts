/**
 * A string value larger than history.memory_max_bytes: the memory ring does not keep it (it would
 * put the rings past the bound, which docs/history.md says never happens); the signal's ring
 * marks it lost, as a ring made without room does, one WARN names the signal (quoted), and the
 * disk tier keeps its buckets as before, so GET /v0/history answers it from there up to the
 * signal's next change the ring keeps. Before, ring.ts #makeRoom kept such a value alone
 * whatever its size. The real runtime over the programmable provider.
 */
import assert from "node:assert/strict";
import { capturingLogger } from "../helpers/log_lines.ts";
import { probeValues, startRig, T0 } from "./_history_helpers.ts";

const MAX = 65_536;
/** Characters of the oversized label: 2 bytes each, twice the whole budget. */
const HUGE_CHARS = MAX;

Deno.test("history.memory_max_bytes holds for a string value larger than it: the ring does not keep it, the disk tier does, a WARN says so once", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = await startRig({ history: { memoryMaxBytes: MAX, stepMs: 1000 }, host: { log } });
  try {
    await rig.poll(T0 + 500, probeValues(20, 0, "small"));
    await rig.poll(T0 + 1500, probeValues(21, 1, "x".repeat(HUGE_CHARS)));
    assert.ok(
      rig.rt.history!.status().memoryBytes <= MAX,
      `${rig.rt.history!.status().memoryBytes} bytes counted, memory_max_bytes ${MAX}`,
    );
    await rig.poll(T0 + 2500, probeValues(22, 2, "y".repeat(HUGE_CHARS)));
    assert.ok(rig.rt.history!.status().memoryBytes <= MAX);
    await rig.poll(T0 + 3500, probeValues(23, 3, "back"));
    assert.ok(rig.rt.history!.status().memoryBytes <= MAX);

    const warns = lines.filter((l) => l.includes("too large for history.memory_max_bytes"));
    assert.equal(warns.length, 1, warns.join("\n"));
    assert.match(warns[0]!, /^WARN .*"p0\/probe\/label" \(131104 bytes\)/);
    assert.ok(warns[0]!.length < 1000, "the line does not carry the value");

    const answer = await rig.json(
      `/v0/history/p0/probe?signal_id=label&signal_id=temp&since_ms=${T0}&until_ms=${T0 + 4000}`,
    );
    assert.equal(answer.status.code, "OK", JSON.stringify(answer.status));
    assert.equal(answer.incomplete, null);
    const brief = (
      p: { t_ms: number; last: unknown },
    ) => [p.t_ms, typeof p.last === "string" && p.last.length === HUGE_CHARS ? p.last[0] : p.last];
    assert.deepEqual(answer.signals[0].points.map(brief), [
      [T0, "small"],
      [T0 + 1000, "x"],
      [T0 + 2000, "y"],
      [T0 + 3500, "back"],
    ], "the large values from the disk tier's buckets, the ring from the next one it keeps");
    assert.deepEqual(answer.signals[1].points.map(brief), [
      [T0 + 500, 20],
      [T0 + 1500, 21],
      [T0 + 2500, 22],
      [T0 + 3500, 23],
    ], "the device's other signals at full rate");
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("Values too large for history.memory_max_bytes are counted in the history status and GET /metrics, each change once", async () => {
  const rig = await startRig({ history: { memoryMaxBytes: MAX, stepMs: 1000 } });
  try {
    const counted = async () => {
      const metrics = await (await rig.get("/metrics")).text();
      const m = metrics.match(/^runtime_history_memory_values_not_kept_total (\d+)$/m);
      assert.ok(m !== null, "the counter is exported");
      assert.equal(Number(m[1]), rig.rt.history!.status().memoryValuesNotKept);
      return Number(m[1]);
    };
    await rig.poll(T0 + 500, probeValues(20, 0, "small"));
    assert.equal(await counted(), 0);
    await rig.poll(T0 + 1500, probeValues(21, 1, "x".repeat(HUGE_CHARS)));
    assert.equal(await counted(), 1);
    // Its repeat adds nothing; another one too large is counted; one that fits is kept.
    await rig.poll(T0 + 2500, probeValues(22, 2, "x".repeat(HUGE_CHARS)));
    assert.equal(await counted(), 1, "a repeat is not a value more");
    await rig.poll(T0 + 3500, probeValues(23, 3, "y".repeat(HUGE_CHARS)));
    await rig.poll(T0 + 4500, probeValues(24, 4, "back"));
    assert.equal(await counted(), 2);
  } finally {
    await rig.rt.stop();
  }
});
