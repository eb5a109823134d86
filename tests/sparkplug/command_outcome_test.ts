/**
 * What a DCMD's answer says (docs/sparkplug.md, "Commands"): REFUSED only for a write that never
 * reached the provider; a write the provider got and that then failed or was not answered in time
 * is FAILED (it may have acted), as the audit trail records it. Against a real Mosquitto and the
 * simulated provider, whose relay board answers later than the provider's timeout_ms
 * (chaos_control inject_call_latency) but still switches.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { withSparkplugRuntime } from "../helpers/sparkplug_host.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";

const GROUP = "lab";
const NODE = "rig-outcome";
const relay = sparkplugDeviceId("sim0", "relayio0");
/**
 * The provider's call timeout, and how late the relay board answers (it still switches). Not much
 * later: the provider serves one request at a time, and two polls in a row without an answer
 * would have it killed as unresponsive (LIVENESS_FAILURE_LIMIT).
 */
const TIMEOUT_MS = 500;
const LATENCY_MS = 650;

Deno.test({
  name:
    "a DCMD the provider got but did not answer in time is answered FAILED, not REFUSED (the relay did switch)",
  ignore: mosquittoMissing(),
  async fn() {
    await withSparkplugRuntime({
      group: GROUP,
      config: (brokerUrl) =>
        testConfig({
          runtime: { name: NODE },
          providers: [simProvider("sim0", { timeoutMs: TIMEOUT_MS })],
          sparkplug: { enabled: true, brokerUrl, groupId: GROUP, commands: true },
        }),
      start: { arm: true },
    }, async (rt, host) => {
      const entries: AuditEntry[] = [];
      rt.audit.onEntry((e) => entries.push(e));
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = (birth.payload.metrics ?? []).find((m) =>
        m.name === "Functions/set_relay_ch3"
      )!.alias;
      await rt.router.call({
        providerId: "sim0",
        deviceId: "chaos_control",
        functionName: "inject_call_latency",
        args: {
          device_id: { type: "string", string: "relayio0" },
          latency_ms: { type: "int64", int64: LATENCY_MS },
        },
        origin: "manual",
      });

      const before = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
        { name: "Functions/set_relay_ch3", datatype: 11, boolean_value: true },
      ]);
      const answer = await waitFor(
        "the command's answer",
        () =>
          host.messages.slice(before).flatMap((m) =>
            m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}` ? m.payload.metrics ?? [] : []
          ).find((x) => x.alias === alias && typeof x.string_value === "string"),
      );
      // The provider got the write: the relay switches once its late answer is done.
      await waitFor("relay 3 on", async () => {
        await rt.cache.pollDevice("sim0", "relayio0");
        const v = rt.cache.signal("sim0", "relayio0", "relay_ch3_state")?.value;
        return v?.type === "bool" && v.bool;
      });
      rt.audit.flushOpen();
      const audited = entries.find((e) => e.origin.kind === "sparkplug" && e.action === "call");
      assert.equal(audited?.outcome, "failed", "the audit trail: sent, then failed");
      assert.match(
        String(answer.string_value),
        /^FAILED: DEADLINE_EXCEEDED/,
        `the host is told ${
          JSON.stringify(answer.string_value)
        }, though the provider got the write and the relay switched`,
      );
    });
  },
});
