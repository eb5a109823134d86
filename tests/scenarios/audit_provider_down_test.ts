/**
 * A call to an actuating function of a provider that is down (crashed, its restart not yet up) is
 * a decision on an actuating request, refused unsent: it is on the audit trail with `refused_by`
 * `unavailable` (docs/http-api.md, "Audit trail"), an operator's `503` as the e-stop's ladder call
 * and the hook call into FAULT the stop could not make (docs/safety.md: "the ladder's calls ...
 * each one in the audit trail"). Over real HTTP, the programmable provider as a child process
 * killed with SIGKILL, its restart disabled.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { Api, callBody } from "./alarms_helpers.ts";
import { startPolWithHooks } from "./_audit_unavailable_rig.ts";

Deno.test("a call to a provider that is down is audited refused by `unavailable`: the operator's 503, the e-stop's ladder call and the hook call into FAULT", async () => {
  const { fx, entries } = await startPolWithHooks({ prefix: "audit-provider-down-" });
  try {
    const rt = fx.runtime;
    const api = new Api(`http://127.0.0.1:${(await fx.serve()).port}`);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const pol = rt.registry.host("pol")!;
    Deno.kill(pol.session!.pid, "SIGKILL");
    await waitFor("pol down", () => !pol.available);

    const refused = await api.post("/v0/call", callBody("pol/act0", 10, {}));
    assert.equal(refused.status, 503);
    assert.equal(refused.json.status.message, "Provider unavailable: pol");
    // A function the last inventory does not declare: still 503 (the provider comes first).
    assert.equal((await api.post("/v0/call", callBody("pol/act0", 99, {}))).status, 503);

    const stop = await api.post("/v0/estop", { reason: "provider down" });
    assert.equal(stop.status, 200);
    assert.deepEqual(
      stop.json.actions.map((a: { function: string; success: boolean }) => [a.function, a.success]),
      [["pulse", false]],
    );
    await waitFor(
      "the hook call into FAULT recorded",
      () => entries.some((e) => e.action === "call" && e.origin.kind === "hook"),
    );
    rt.audit.flushOpen();
    const calls = entries.filter((e) => e.action === "call").map((e) => [
      e.origin.kind,
      e.device_handle,
      e.function,
      e.outcome,
      e.refused_by,
      e.reason,
    ]);
    const down = "UNAVAILABLE: Provider unavailable: pol";
    assert.deepEqual(calls, [
      ["http", "pol/act0", "pulse", "refused", "unavailable", down],
      ["estop", "pol/act0", "pulse", "refused", "unavailable", down],
      ["hook", "pol/act0", "vent", "refused", "unavailable", down],
    ]);
  } finally {
    await fx.close();
  }
});
