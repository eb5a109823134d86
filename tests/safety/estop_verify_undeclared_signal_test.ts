/**
 * The e-stop's read-back judges a fresh read as a poll judges it (docs/safety.md, section 3). A
 * provider that came back (crash-restarted) with a signal renamed no longer declares the signal
 * an expectation names; should it still answer a read of the old id (a compatibility alias, a
 * table left behind), the value is one the device does not declare: a poll drops it (counted
 * `undeclared_signal`), GET /v0/state does not show it, the plan warns that the expectation does
 * not resolve -- and it must not verify the stop either. Over real HTTP, the programmable
 * provider as a child process its supervisor restarts.
 */
import assert from "node:assert/strict";
import { startServing, tempDir, waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  type Inventory,
  programmableProvider,
  T,
  TestClock,
} from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** The brake's feedback, answered engaged; `declared` is the id the device declares it under. */
const inventory = (declared: string): Inventory => ({
  devices: {
    axis: {
      signals: [{ id: declared, type: T.BOOL, hint: 0 }],
      values: [{ id: "brake_engaged", type: T.BOOL, bool: true, quality: 1 }],
    },
  },
});

Deno.test("the e-stop's read-back does not verify by a signal the device no longer declares", async () => {
  const dir = tempDir("estop-undeclared-");
  const file = `${dir}/axis.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory("brake_engaged")));
  const clock = new TestClock();
  const config = testConfig({
    providers: [programmableProvider("p0", file, { restart: {} })],
    pollingIntervalMs: 60_000,
    runtime: { dataDir: dir },
    safety: {
      expect: [{
        signal: "p0/axis/brake_engaged",
        providerId: "p0",
        deviceId: "axis",
        signalId: "brake_engaged",
        equals: true,
        path: "safety.safe_state.expect[0]",
      }],
      verifyTimeoutMs: 300,
    },
  });
  const rt = await startServing(config, { clock });
  const base = `http://127.0.0.1:${rt.http!.port}`;
  const estop = async () => {
    const res = await apiFetch(`${base}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(res.status, 200);
    return (await res.json()).verification;
  };
  const clear = async () => {
    const res = await apiFetch(`${base}/v0/estop/clear`, { method: "POST" });
    assert.equal(res.status, 200);
    await res.body?.cancel();
  };
  try {
    // Declared: the read-back verifies by it.
    const first = await estop();
    assert.equal(first.outcome, "verified");
    await clear();
    // The provider restarts declaring the brake's feedback as brake_state (with another meaning,
    // for all the runtime knows), and still answers a read of brake_engaged.
    await Deno.writeTextFile(file, JSON.stringify(inventory("brake_state")));
    const host = rt.registry.host("p0")!;
    const pid = host.session!.pid;
    await host.request("call", { device_id: "axis", function_id: 3, args: {} });
    await waitFor("rediscovered", () => host.available && host.session!.pid !== pid);
    assert.deepEqual(
      rt.inventory.capabilities("p0", "axis")!.signals.map((s) => s.signalId),
      ["brake_state"],
    );
    const second = await estop();
    assert.notEqual(
      second.outcome,
      "verified",
      `an undeclared signal verified the stop: ${JSON.stringify(second)}`,
    );
    assert.equal(second.checks[0].outcome, "unreachable");
    assert.equal(second.checks[0].observed, null);
    assert.match(second.checks[0].reason, /does not declare/);
  } finally {
    await rt.stop();
  }
});
