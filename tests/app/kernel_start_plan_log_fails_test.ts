/**
 * The e-stop plan is logged once at start-up (Estop.logPlan, src/app/kernel.ts), after the
 * priming poll and before the API is served. When that throws -- a logger that cannot write
 * (the process logger swallows its own write failures, so only a logger that breaks that
 * contract), or a plan that cannot be made -- the start fails: the start-up path logs through
 * the same logger on the lines around it, and a runtime whose e-stop plan cannot be made or told
 * must not come up and serve. (After start-up, a plan log for a change is contained:
 * estop_plan_log_fails_test.ts.) Real: the kernel with the simulated provider as a child
 * process, over a logger whose start-up plan line throws. Also the runtime.data_dir lock's line
 * (taken, its pid not written): the start fails, and the stop after it still releases the lock.
 */
import assert from "node:assert/strict";
import { LineLogger, serveHttp } from "../../src/host/mod.ts";
import { newKernel } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel.start fails, unserved, when the e-stop plan's start-up log line throws", async () => {
  let planLines = 0;
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (line.includes("e-stop plan (start-up)")) {
        planLines++;
        throw new Error("log sink failed");
      }
    },
  });
  const rt = newKernel(testConfig(), { log, serve: serveHttp });
  try {
    await assert.rejects(rt.start(), /^Error: log sink failed$/);
    assert.equal(planLines, 1, "the start-up plan line was the one that failed");
    assert.equal(rt.http, null, "the API was not served");
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel.start fails when the data_dir lock's start-up line throws, and the stop after it releases the lock", async () => {
  let released = 0;
  let lockLines = 0;
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (line.includes("locked, but")) {
        lockLines++;
        throw new Error("log sink failed");
      }
    },
  });
  const rt = newKernel(testConfig({ providers: [] }), {
    log,
    serve: serveHttp,
    lockDataDir: () =>
      Promise.resolve({ release: () => void released++, holderNotWritten: "its pid not written" }),
  });
  try {
    await assert.rejects(rt.start(), /^Error: log sink failed$/);
    assert.equal(lockLines, 1, "the lock's line was the one that failed");
    assert.equal(rt.http, null, "the API was not served");
  } finally {
    await rt.stop();
  }
  assert.equal(released, 1, "the lock taken was released by the stop");
});
