/**
 * The e-stop in the open run through the real kernel (the simulated provider): its trigger, the
 * reason an HTTP body gives after the latch and its clear are `estop` events, history off too.
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
    assert.deepEqual(
      events.filter((e) => e.category === "estop").map((e) => [e.type, e.payload.reason]),
      [["trigger", null], ["reason", "door opened"], ["clear", null]],
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
