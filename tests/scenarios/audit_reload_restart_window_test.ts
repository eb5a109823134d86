/**
 * A call to an actuating function of a provider a configuration reload is restarting (its entry
 * changed) is a decision on an actuating request, refused unsent, as one to a provider that crashed
 * (audit_provider_down_test.ts): on the audit trail with `refused_by` `unavailable`, the function
 * named as the stopped process declared it (docs/http-api.md, "Audit trail") -- in both parts of
 * the restart: before its new process is registered (no host, so no inventory of its own: the
 * operator's 503, the e-stop's ladder call and the hook call into FAULT) and once it is registered
 * but not up (nothing listed yet). Held open by the provider itself: its old process takes seconds
 * to exit once its stdin closes, its new one seconds to answer Hello. Real child processes (the
 * programmable provider), the HTTP handler called directly.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { callBody } from "./alarms_helpers.ts";
import { POL_INVENTORY, startPolWithHooks } from "./_audit_unavailable_rig.ts";

Deno.test("a call refused while a reload restarts its provider is audited refused by `unavailable`: before its new process is registered (the operator's 503, the e-stop's ladder call, the hook call into FAULT) and before it is up", async () => {
  // Once stdin closes, the old process takes 3 s to exit (within the stop's budget, 10 s): the
  // reload starts its successor only then.
  const { fx, file, entries } = await startPolWithHooks({
    prefix: "audit-reload-window-",
    first: { exitDelayMs: 3000 },
    runtime: { shutdownTimeoutMs: 10_000 },
  });
  try {
    const rt = fx.runtime;
    const post = (path: string, body: unknown) => fx.request("POST", path, { body });
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    // The new process answers Hello 3 s late: its host registered, not up, meanwhile.
    await Deno.writeTextFile(file, JSON.stringify({ ...POL_INVENTORY, hello: { delayMs: 3000 } }));
    const pol = rt.config.providers[0]!;
    const reload = rt.reload({
      ...rt.config,
      providers: [{ ...pol, timeoutMs: pol.timeoutMs + 1 }],
    });
    await waitFor(
      "pol's old process gone, its new one not registered",
      () => rt.registry.host("pol") === undefined && rt.registry.replacing("pol"),
      10_000,
    );
    const restarting =
      "Provider unavailable: pol (provider pol is being restarted by a configuration reload)";
    const refused = await post("/v0/call", callBody("pol/act0", 10, {}));
    assert.equal(refused.status, 503);
    assert.equal((refused.json as { status: { message: string } }).status.message, restarting);
    const stop = await post("/v0/estop", { reason: "pressed during the reload" });
    assert.equal(stop.status, 200);
    // Answered while the old process still exits: it held no call when the reload closed it, so
    // the drain has nothing of it to wait for (docs/safety.md, step 2: only a call a stopped
    // provider held is waited for, until its process has exited).
    assert.ok(
      rt.registry.host("pol") === undefined && rt.registry.replacing("pol"),
      "answered within the window",
    );
    assert.deepEqual((stop.json as { drain: unknown }).drain, {
      complete: true,
      pending_providers: [],
    });
    // Refused before the new process was registered: the reason names the restart.
    const actions = (stop.json as { actions: { function: string; error?: string }[] }).actions;
    assert.deepEqual(actions.map((a) => [a.function, a.error]), [[
      "pulse",
      `UNAVAILABLE: ${restarting}`,
    ]]);
    await waitFor(
      "the hook call into FAULT recorded",
      () => entries.some((e) => e.action === "call" && e.origin.kind === "hook"),
    );

    await waitFor(
      "pol's new process registered, not up",
      () => rt.registry.host("pol") !== undefined,
      10_000,
    );
    const starting = await post("/v0/call", callBody("pol/act0", 11, {}));
    assert.equal(starting.status, 503);
    assert.equal(rt.registry.host("pol")?.available, false, "still before its new process is up");

    const report = await reload;
    assert.deepEqual(report.providers.restarted, ["pol"], JSON.stringify(report));
    rt.audit.flushOpen();
    const calls = entries.filter((e) => e.action === "call" && e.outcome === "refused").map((
      e,
    ) => [e.origin.kind, e.device_handle, e.function, e.refused_by, e.reason]);
    assert.deepEqual(calls, [
      ["http", "pol/act0", "pulse", "unavailable", `UNAVAILABLE: ${restarting}`],
      ["estop", "pol/act0", "pulse", "unavailable", `UNAVAILABLE: ${restarting}`],
      ["hook", "pol/act0", "vent", "unavailable", `UNAVAILABLE: ${restarting}`],
      ["http", "pol/act0", "vent", "unavailable", "UNAVAILABLE: Provider unavailable: pol"],
    ]);
  } finally {
    await fx.close();
  }
});
