/**
 * A run's `call` event carries the call's audit entry: a 64-bit integer beyond 2^53 in it (an
 * argument a tree, hook or Sparkplug command sent, a provider's result) is the same integer there
 * as on the audit trail, never a neighbouring one that JSON parsing rounded it to (the real kernel
 * over the simulated provider).
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { tv } from "../scenarios/automation_helpers.ts";

Deno.test("Kernel: a call event keeps an int64 argument beyond 2^53 exact, as the audit trail does", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_call_exact_k_" });
  const rt = await startRuntime(testConfig({ runtime: { dataDir: dir } }), { arm: true });
  try {
    const { run } = await rt.runs.open({});
    const big = 9007199254740993n; // 2^53 + 1: a double cannot hold it
    await rt.router.call({
      providerId: "sim0",
      deviceId: "motorctl0",
      functionName: "set_motor_duty",
      args: { motor_index: { type: "int64", int64: big }, duty: tv.d(0.1) },
      origin: "manual",
    }).catch(() => {}); // refused or not, its decision is audited and is an event of the run
    await rt.runs.close(run.run_id, {});
    const audited = (await rt.audit.query({ limit: 100 })).entries
      .filter((e) => e.action === "call" && e.function === "set_motor_duty");
    assert.equal(audited.length, 1, "the call is on the audit trail");
    const auditArg = (audited[0]!.args as { motor_index: { int64: unknown } }).motor_index.int64;
    assert.equal(String(auditArg), "9007199254740993", "the audit trail keeps it exact");
    const calls = (await rt.runs.listEvents(run.run_id, {})).events
      .filter((e) => e.category === "call");
    assert.equal(calls.length, 1, "the call is an event of the run");
    const args = calls[0]!.payload.args as { motor_index: { int64: unknown } };
    assert.equal(
      String(args.motor_index.int64),
      "9007199254740993",
      "the run's call event names the integer the call was made with",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
