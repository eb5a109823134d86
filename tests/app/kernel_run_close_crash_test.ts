/**
 * A process that dies during a run's close, after the close wrote its `in_flight` call events and
 * before its run_closed reached the disk: the next start closes the run as `abandoned` with the
 * calls the audit trail found interrupted, and a call the close already listed `in_flight` is not
 * written again as `interrupted`: each call has one ending in the run record. The crash is two
 * kernels on the same files (the sim provider running): the first one's run_closed held at the
 * disk, the second started as the next process.
 */
import assert from "node:assert/strict";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { decision, HeldRunClosed } from "./_run_closed_files.ts";

Deno.test("Kernel: calls listed in_flight by a close the process died in are not recorded again as interrupted by the next start", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_close_crash_" });
  const config = testConfig({ runtime: { dataDir: dir }, history: { enabled: false } });
  const files = new HeldRunClosed();
  const first = await startRuntime(config, { host: { files } });
  let release = () => {};
  let closing: Promise<unknown> = Promise.resolve();
  try {
    const { run } = await first.runs.open({});
    // Two calls decided in the run, still in flight (written ahead, no outcome yet).
    for (let i = 0; i < 2; i++) assert.ok(await first.audit.writeAhead(decision(i)) !== null);
    files.gate = new Promise((r) => release = r);
    closing = first.runs.close(run.run_id, { close_reason: "completed" }).catch((e) => e);
    await waitFor("the run_closed write under way", () => files.held > 0);
    // The process dies here: the in_flight events are in the run's file, its run_closed is not.
    files.gate = null;
    const next = await startRuntime(config, { host: { files } });
    try {
      const interrupted = (await next.audit.query({ deviceId: "motorctl0", limit: 100 })).entries
        .filter((e) => e.outcome === "interrupted");
      assert.equal(interrupted.length, 2, "the audit trail found both calls interrupted");
      const events = (await next.runs.listEvents(run.run_id, { limit: 1000 })).events;
      assert.deepEqual(
        events.map((e) => [e.category, e.type, e.payload.outcome ?? null]),
        [
          ["run_opened", "", null],
          ["call", "sim0/motorctl0 set_motor_duty", "in_flight"],
          ["call", "sim0/motorctl0 set_motor_duty", "in_flight"],
          ["run_closed", "abandoned", null],
        ],
        "each call has one ending: the in_flight its close wrote",
      );
    } finally {
      await next.stop();
    }
  } finally {
    release();
    await closing;
    await first.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel: a call listed in_flight by a close that failed is not recorded again as interrupted when the process dies later", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_close_failed_crash_" });
  const config = testConfig({ runtime: { dataDir: dir }, history: { enabled: false } });
  const files = new HeldRunClosed();
  const first = await startRuntime(config, { host: { files } });
  try {
    const { run } = await first.runs.open({});
    assert.ok(await first.audit.writeAhead(decision(0)) !== null); // in flight from now on
    files.fail = true;
    await assert.rejects(first.runs.close(run.run_id, { close_reason: "completed" }));
    files.fail = false;
    // The run stays open and goes on: its in_flight event is no longer the end of its file.
    await first.runs.addMarker(run.run_id, { type: "after_the_failed_close" });
    // The process dies here, the call still in flight.
    const next = await startRuntime(config, { host: { files } });
    try {
      const events = (await next.runs.listEvents(run.run_id, { limit: 1000 })).events;
      assert.deepEqual(
        events.map((e) => [e.category, e.type, e.payload.outcome ?? null]),
        [
          ["run_opened", "", null],
          ["call", "sim0/motorctl0 set_motor_duty", "in_flight"],
          ["annotation", "after_the_failed_close", null],
          ["run_closed", "abandoned", null],
        ],
        "the call has one ending: the in_flight its failed close wrote",
      );
    } finally {
      await next.stop();
    }
  } finally {
    await first.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
