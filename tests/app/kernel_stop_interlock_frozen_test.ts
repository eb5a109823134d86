/**
 * A normal stop stops the state cache's polls before the providers: from then on nothing refreshes
 * what the cache holds, while the stop actions' wait and the history's wait
 * (HISTORY_STOP_BEFORE_PROVIDERS_MS) still hold the providers' stop. A call still queued then (an
 * HTTP call behind a slow one, answered 504 by the drain and still waiting its turn; a Sparkplug
 * DCMD; a mode change's hooks) reaches the interlock gate at its turn: judged on the frozen values
 * it went out whatever its input had become on the hardware. It is refused instead (fail safe, as
 * the failed start-up's detach does). A call no interlock covers is carried out as before. Real
 * kernel serving HTTP on loopback, the simulated provider as a child process; the test asks its
 * calls at the moment the cache's stop has ended, through the router every caller goes through.
 */
import assert from "node:assert/strict";
import { startServing } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { neverBlockingInterlock } from "../scenarios/alarms_helpers.ts";
import { inertSim } from "../safety/_fixture.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import type { CallRequest } from "../../src/control/mod.ts";

Deno.test("Kernel.stop: a call an interlock covers, reaching its turn once the cache's polls ended, is refused, not judged on frozen values", async () => {
  const rt = await startServing(testConfig({
    http: { port: 0 },
    providers: [inertSim("sim0")],
    interlocks: neverBlockingInterlock(), // judged, a call passes
  }));
  let stopped: Promise<void> | null = null;
  try {
    await rt.modes.request("MANUAL");
    const duty = (motor: number): CallRequest => ({
      providerId: "sim0",
      deviceId: "motorctl0",
      functionId: 10,
      args: { motor_index: { type: "int64", int64: motor }, duty: { type: "double", double: 0.5 } },
      origin: "manual",
    });
    // Before the stop the interlock judges the call on fresh values, and lets it pass.
    await rt.router.call(duty(1));
    const covered: Array<{ ok: boolean; error: unknown; providerUp: boolean }> = [];
    let uncovered: unknown = "not asked";
    const cache = rt.cache;
    const stopCache = cache.stop.bind(cache);
    // The moment the cache's polls have ended, the providers still up (their stop comes later):
    // a call queued until then reaches its turn now. The stop waits for its answer here.
    cache.stop = async () => {
      await stopCache();
      if (covered.length > 0) return; // the stop's second call, if any
      const providerUp = rt.registry.host("sim0")!.available;
      await rt.router.call(duty(2)).then(
        () => covered.push({ ok: true, error: null, providerUp }),
        (error) => covered.push({ ok: false, error, providerUp }),
      );
      // No interlock covers it: nothing is judged on the frozen values, it goes out as before.
      uncovered = await rt.router.call({
        providerId: "sim0",
        deviceId: "relayio0",
        functionId: 1,
        args: { enabled: { type: "bool", bool: true } },
        origin: "manual",
      }).then(() => "sent", (err) => err);
    };
    stopped = rt.stop();
    await stopped;
    stopped = null;
    assert.equal(covered.length, 1, "the call was asked in the window");
    assert.equal(covered[0]!.providerUp, true, "its provider was still up: it could be sent");
    assert.equal(uncovered, "sent", "a call no interlock covers goes out in the window");
    assert.equal(covered[0]!.ok, false, "refused, not sent on frozen values");
    const error = covered[0]!.error;
    assert.ok(error instanceof RuntimeError, String(error));
    assert.equal(error.code, "FAILED_PRECONDITION");
    assert.match(
      error.message,
      /^Interlock hot_lockout cannot judge call sim0\/motorctl0 set_motor_duty: its inputs are no longer polled \(the runtime is stopping\); refused$/,
    );
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
