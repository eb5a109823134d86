/**
 * A read-back's ERROR lines for a clock that fails now and then are bounded per read-back
 * (MAX_CLOCK_ERROR_LINES_PER_READ_BACK): the first failure is written, the others are counted and
 * said once when the read-back ends. The read-back provider in-process (tests/safety/_readback.ts),
 * several devices that never meet their expectation, so each is read back again and again until
 * verify_timeout_ms; the verification's monotonic clock throws every other read. Virtual time: the
 * runtime and the read-back run on one ManualClock (runToSettle).
 */
import assert from "node:assert/strict";
import { MAX_CLOCK_ERROR_LINES_PER_READ_BACK, verifySafeState } from "../../src/safety/mod.ts";
import { expectation } from "./_fixture.ts";
import { readbackProvider, startReadback } from "./_readback.ts";
import { failingClock } from "./_clock_rig.ts";
import { ManualClock, runToSettle } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

const DEVICES = ["dev0", "dev1", "dev2", "dev3"];

Deno.test("verifySafeState writes at most MAX_CLOCK_ERROR_LINES_PER_READ_BACK clock ERROR lines per read-back and counts the others once at its end", async () => {
  const base = new ManualClock();
  const fx = await startReadback(
    (log) => [
      readbackProvider(
        "rb",
        Object.fromEntries(
          DEVICES.map((d) => [d, { signals: { duty: "double" }, reads: [{ duty: { v: 0.6 } }] }]),
        ),
        { logFile: log },
      ),
    ],
    { clock: base },
  );
  try {
    let asked = 0;
    const { clock, failures } = failingClock({
      read: "monoMs",
      times: Infinity,
      when: () => asked++ % 2 === 0,
      base,
    });
    const { log, lines } = capturingLogger({ level: "debug", now: () => 0 });
    const v = await runToSettle(
      base,
      verifySafeState({
        reads: fx.cache,
        clock,
        expect: DEVICES.map((d) => expectation(`rb/${d}/duty`, { equals: 0 })),
        timeoutMs: 1000,
        log,
      }),
      "the verification",
    );
    assert.equal(v.outcome, "mismatch");
    const reads = fx.reads().length;
    assert.ok(reads >= DEVICES.length * 10, `each device read back again and again: ${reads}`);
    const errors = lines.filter((l) => l.startsWith("ERROR"));
    // Every other read failed, each failure asked once more (and then answered).
    assert.ok(failures() > reads, `${failures()} clock failures over ${reads} reads`);
    assert.equal(
      errors.length,
      MAX_CLOCK_ERROR_LINES_PER_READ_BACK + 1,
      `the first failure, then one line counting the others; got ${errors.length}:\n${
        errors.slice(0, 3).join("\n")
      }`,
    );
    assert.match(errors[0]!, /reading the clock failed: clock monoMs failed; asked once more/);
    const unsaid = failures() - MAX_CLOCK_ERROR_LINES_PER_READ_BACK;
    assert.match(
      errors.at(-1)!,
      new RegExp(`reading the clock failed ${unsaid} more time\\(s\\) during this read-back`),
    );
  } finally {
    await fx.close();
  }
});
