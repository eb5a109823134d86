/**
 * A call to a provider while a configuration reload restarts it (its entry changed), in the window
 * between the old process's removal and the new one's registration -- held open, as in
 * estop_reload_restart_window_test.ts, by another provider the same reload removes, whose process
 * takes seconds to exit. The provider is configured and down, not unknown: the call is refused 503
 * UNAVAILABLE saying why (as for a provider that crashed), not 404 "Provider not found" (an id no
 * configuration has: a caller's mistake, which automation counts as a tree error). Real child
 * processes (the inert simulated providers and the programmable one), real HTTP on loopback.
 */
import assert from "node:assert/strict";
import { startServing } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { reloadIntoWindow, reloadWindowConfig } from "../helpers/reload_window.ts";

const MOTOR_OFF = {
  device_id: "motorctl0",
  function_id: 10,
  args: {
    motor_index: { type: "int64", int64: 1 },
    duty: { type: "double", double: 0 },
  },
};

Deno.test("a call to a provider a reload is restarting, before its new process is registered, is 503 UNAVAILABLE naming the restart, not 404", async () => {
  const rt = await startServing(testConfig(await reloadWindowConfig("call-reload-window-")));
  const post = async (providerId: string) => {
    const res = await fetch(`http://127.0.0.1:${rt.http!.port}/v0/call`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ provider_id: providerId, ...MOTOR_OFF }),
    });
    return { status: res.status, body: await res.json() };
  };
  try {
    await rt.modes.request("MANUAL");
    const { reload } = await reloadIntoWindow(rt);
    const during = await post("sim1");
    assert.equal(rt.registry.host("sim1"), undefined, "still in the window");
    assert.deepEqual(during, {
      status: 503,
      body: {
        status: {
          code: "UNAVAILABLE",
          message:
            "Provider unavailable: sim1 (provider sim1 is being restarted by a configuration reload)",
        },
      },
    });
    // An id no configuration has is still the caller's mistake.
    const unknown = await post("simX");
    assert.equal(unknown.status, 404, JSON.stringify(unknown));
    assert.equal(unknown.body.status.message, "Provider not found: simX");
    const report = await reload;
    assert.deepEqual(report.providers.restarted, ["sim1"], JSON.stringify(report));
    // Up again: the same call goes through.
    assert.equal((await post("sim1")).status, 200);
  } finally {
    await rt.stop();
  }
});
