/**
 * Four features on one provider, over real HTTP and a real provider process: the e-stop latch, the
 * supervisor restarting the provider, a host check that becomes unmet at one restart and met again
 * at the next, and a function's declared min_interval_ms. While latched, the provider comes back
 * without its device (its host unmet): it keeps the device's claim (`held_claims`) and shows why
 * (`host_check`); it comes back again with the device: the ladder's call is made again, passing the
 * interval the stop's own call started (docs/safety.md, "A provider that comes back while
 * latched"; docs/http-api.md, "Stop actions pass all three"); after the clear and re-arm, an
 * operator's call is still refused by that interval: it followed the function by name across both
 * restarts, one of them without the device (docs/http-api.md, "Provider policies").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import type { Inventory } from "../helpers/programmable_provider.ts";
import { callBody } from "./alarms_helpers.ts";
import { ACTUATE, HOST_UNMET_I2C1, PULSE_HOOK, withHostUnmetRig } from "./_host_unmet_rig.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";

/** The interval `pulse` declares: far longer than the test. */
const PULSE_INTERVAL_MS = 600_000;
const CLAIM = "i2c:/dev/i2c-1:0x61";

const WITH_DEVICE: Inventory = {
  devices: {
    act0: {
      signals: [],
      tags: { "anolis.claim": CLAIM },
      functions: [{
        function_id: 10,
        name: "pulse",
        policy: { category: ACTUATE, min_interval_ms: PULSE_INTERVAL_MS },
        args: [],
      }],
    },
  },
};

Deno.test("a provider back while latched, first without its device (host unmet) then with it, keeps its claim, gets the ladder's call past min_interval_ms, and the operator's call after the re-arm is still refused by it", async () => {
  const safety = { hooks: [PULSE_HOOK] };
  await withHostUnmetRig("estop-host-unmet-", WITH_DEVICE, safety, async (r) => {
    const { rt, api } = r;
    const entries: AuditEntry[] = [];
    rt.audit.onEntry((e) => entries.push(e));
    const ladderCalls = () =>
      entries.filter((e) => e.action === "call" && e.origin.kind === "estop").map((e) => [
        e.function,
        e.outcome,
        e.refused_by,
      ]);
    const pol = rt.registry.host("pol")!;
    const health = async () =>
      (await api.get("/v0/providers/health")).json.providers.find(
        (p: { provider_id: string }) => p.provider_id === "pol",
      );

    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await api.post("/v0/estop", { reason: "test" })).status, 200);
    // Sent (the provider implements no `pulse`: it answers an error), so its interval runs.
    await waitFor("the stop's ladder call", () => ladderCalls().length === 1);
    assert.deepEqual(ladderCalls(), [["pulse", "failed", null]]);

    // Back without its device, its host unmet: the claim is held and the reason shown.
    await r.restartAs(pol, HOST_UNMET_I2C1, "host unmet: pol up again");
    const unmet = await health();
    assert.equal(unmet.device_count, 0);
    assert.equal(unmet.host_check?.status, "unmet");
    assert.deepEqual(unmet.held_claims, [{ device_id: "act0", claims: [CLAIM] }]);

    // Back with its device while still latched: the ladder's pulse is made again, not refused
    // by the interval the stop's own pulse started.
    const before = ladderCalls().length;
    await r.restartAs(pol, WITH_DEVICE, "host met: pol up again");
    await waitFor(
      "the ladder's call to the device back",
      () => ladderCalls().slice(before).some(([, outcome]) => outcome !== "refused"),
      30_000,
    );
    assert.deepEqual(
      ladderCalls().slice(before).filter(([, outcome]) => outcome === "refused"),
      [],
      "no ladder call refused",
    );
    const back = await health();
    assert.deepEqual(back.held_claims, []);
    assert.equal(back.host_check, null);

    // Cleared and re-armed: the operator's pulse is still within the interval.
    assert.equal((await api.post("/v0/estop/clear")).status, 200);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const refused = await api.post("/v0/call", callBody("pol/act0", 10, {}));
    assert.equal(refused.status, 429, JSON.stringify(refused.json));
    assert.match(refused.json.status.message, /min_interval_ms is 600000 ms/);
  });
});
