/**
 * The e-stop in the open run through the real kernel (the simulated provider): its trigger, the
 * reason an HTTP body gives after the latch, its read-back and its clear are `estop` events,
 * history off too.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("Kernel: with history off, an e-stop's trigger, its reason read after the latch and its clear are events of the open run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_estop_k_" });
  const rt = await startRuntime(
    testConfig({ runtime: { dataDir: dir }, history: { enabled: false } }),
    { arm: true },
  );
  try {
    const { run } = await rt.runs.open({});
    let give = (_r: string | undefined) => {};
    const reason = new Promise<string | undefined>((r) => (give = r));
    const stopping = rt.estop.trigger(reason);
    give("door opened");
    await stopping;
    rt.estop.clear();
    await rt.runs.close(run.run_id, {});
    const events = (await rt.runs.listEvents(run.run_id, {})).events;
    // (The test config declares no safety.safe_state.expect: the read-back has nothing to check.)
    assert.deepEqual(
      events.filter((e) => e.category === "estop").map((e) =>
        e.type === "verification" ? [e.type, e.payload.outcome] : [e.type, e.payload.reason]
      ),
      [["trigger", null], ["reason", "door opened"], ["verification", "unverifiable"], [
        "clear",
        null,
      ]],
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel: a run opened while the e-stop is latched says so in its run_opened (mode FAULT, estop_latched), and one opened after the re-arm says the mode", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_estop_k_" });
  const rt = await startRuntime(
    testConfig({ runtime: { dataDir: dir }, history: { enabled: false } }),
    { arm: true },
  );
  try {
    await rt.estop.trigger("door opened");
    const latched = (await rt.runs.open({})).run;
    await rt.runs.close(latched.run_id, {});
    rt.estop.clear();
    const released = (await rt.runs.open({})).run;
    await rt.runs.close(released.run_id, {});
    // The times of the safety events between runs left out (the wall clock's).
    const opened = async (id: string) =>
      (await rt.runs.listEvents(id, { limit: 1 })).events.map((e) => {
        const between = e.payload.safety_events_between_runs as Record<string, unknown> | undefined;
        if (between === undefined) return [e.category, e.payload];
        const { count, estop_triggers } = between;
        return [e.category, {
          ...e.payload,
          safety_events_between_runs: { count, estop_triggers },
        }];
      });
    // Before: [["run_opened", {}]] -- nothing in the run showed it was opened under a stop.
    // The stop's trigger, FAULT entry and read-back came before it: in no run, counted by the
    // next one.
    assert.deepEqual(await opened(latched.run_id), [["run_opened", {
      mode: "FAULT",
      estop_latched: true,
      safety_events_between_runs: { count: 3, estop_triggers: 1 },
    }]]);
    // The re-arm (the stop's clear) came between the two runs.
    assert.deepEqual(await opened(released.run_id), [["run_opened", {
      mode: "FAULT",
      estop_latched: false,
      safety_events_between_runs: { count: 1, estop_triggers: 0 },
    }]]);
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel: an e-stop between runs, then a restart: the first run opened by the next process counts it (trigger, FAULT entry, read-back, its incident)", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_estop_k_" });
  const config = testConfig({ runtime: { dataDir: dir } });
  let rt = await startRuntime(config, { arm: true });
  try {
    await rt.runs.close((await rt.runs.open({})).run.run_id, {});
    await rt.estop.trigger("door opened");
    await rt.incidents!.settled();
    await rt.stop();
    rt = await startRuntime(config);
    const { run } = await rt.runs.open({});
    const between = (await rt.runs.listEvents(run.run_id, { limit: 1 })).events[0]!.payload
      .safety_events_between_runs as Record<string, unknown> | undefined;
    assert.deepEqual(
      between === undefined ? null : [between.count, between.estop_triggers],
      [4, 1],
      "the stop the previous process saw between runs is counted once",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
