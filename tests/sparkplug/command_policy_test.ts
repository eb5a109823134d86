/**
 * A DCMD meets the provider's declared policies (docs/sparkplug.md, "Commands": "against the
 * provider's policies"; docs/http-api.md, "Provider policies"): a write sooner than the function's
 * min_interval_ms after the last one sent, a function whose allowed_modes leave out the mode, and
 * one that requires_lease are answered `REFUSED` (the write never reached the provider), audited
 * with origin sparkplug and the policy as `refused_by`; the first write counts as sent whatever the
 * provider answered (`FAILED`), and the e-stop's ladder an NCMD triggers passes the interval the
 * DCMD started. Against a real Mosquitto and the programmable provider as a child process, whose
 * interval (10 minutes) no loaded machine can outlast between two writes.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import {
  commandResultAlias,
  nodeAnswers,
  withSparkplugRuntime,
} from "../helpers/sparkplug_host.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";

const GROUP = "lab";
const NODE = "rig-policy";
const DEV = sparkplugDeviceId("pol", "act0");
/** The interval `pulse` declares: far longer than the test. */
const PULSE_INTERVAL_MS = 600_000;
const ACTUATE = 3;

const INVENTORY: Inventory = {
  devices: {
    act0: {
      signals: [],
      functions: [
        {
          function_id: 10,
          name: "pulse",
          policy: { category: ACTUATE, min_interval_ms: PULSE_INTERVAL_MS },
          args: [],
        },
        {
          function_id: 11,
          name: "auto_only",
          policy: { category: ACTUATE, allowed_modes: ["AUTO"] },
          args: [],
        },
        { function_id: 12, name: "leased", policy: { category: ACTUATE, requires_lease: true } },
      ],
    },
  },
};

Deno.test({
  name:
    "DCMD: min_interval_ms, allowed_modes and requires_lease refuse the write unsent (REFUSED, audited); the e-stop's ladder passes the interval",
  ignore: mosquittoMissing(),
  async fn() {
    const dir = tempDir("sparkplug-policy-");
    await Deno.writeTextFile(`${dir}/pol.json`, JSON.stringify(INVENTORY));
    await withSparkplugRuntime({
      group: GROUP,
      config: (brokerUrl) =>
        testConfig({
          runtime: { name: NODE },
          providers: [programmableProvider("pol", `${dir}/pol.json`)],
          safety: {
            hooks: [{
              deviceHandle: "pol/act0",
              functionId: 0,
              functionName: "pulse",
              args: {},
              path: "safety.safe_state.hooks[0]",
            }],
          },
          sparkplug: { enabled: true, brokerUrl, groupId: GROUP, commands: true },
        }),
      start: { arm: true },
    }, async (rt, host) => {
      const entries: AuditEntry[] = [];
      rt.audit.onEntry((e) => entries.push(e));
      const birth = await waitFor(
        "act0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${DEV}`),
      );
      const aliasOf = (fn: string) =>
        (birth.payload.metrics ?? []).find((m) => m.name === `Functions/${fn}`)!.alias;
      const answerTo = async (fn: string): Promise<string> => {
        const from = host.messages.length;
        await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${DEV}`, [
          { name: `Functions/${fn}`, datatype: 12, string_value: "{}" },
        ]);
        const m = await waitFor(
          `the answer to ${fn}`,
          () =>
            host.messages.slice(from).flatMap((m) =>
              m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${DEV}` ? m.payload.metrics ?? [] : []
            ).find((x) => x.alias === aliasOf(fn) && typeof x.string_value === "string"),
        );
        return m.string_value as string;
      };

      // Sent: the provider answers it with an error (it implements none of these), which still
      // starts the interval.
      assert.match(await answerTo("pulse"), /^FAILED: /);
      assert.match(
        await answerTo("pulse"),
        /^REFUSED: Call refused: "pol\/act0" "pulse" was last called \d+ ms ago and its provider policy min_interval_ms is 600000 ms/,
      );
      assert.match(
        await answerTo("auto_only"),
        /^REFUSED: Call refused in MANUAL mode: "pol\/act0" "auto_only" is allowed only in "AUTO" \(provider policy allowed_modes\)/,
      );
      assert.match(await answerTo("leased"), /^REFUSED: .*requires a lease/);

      // The e-stop over Sparkplug: its ladder's pulse is sent though the interval runs.
      const resultAlias = await commandResultAlias(host, GROUP, NODE);
      const from = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/NCMD/${NODE}`, [
        { name: "Node Control/E-Stop", datatype: 11, boolean_value: true },
      ]);
      assert.deepEqual(
        await nodeAnswers(host, { group: GROUP, node: NODE, alias: resultAlias, from, count: 1 }),
        ["Node Control/E-Stop: OK"],
      );
      await waitFor(
        "the ladder's pulse audited",
        () => entries.find((e) => e.action === "call" && e.origin.kind === "estop"),
      );
      rt.audit.flushOpen();
      const calls = entries.filter((e) => e.action === "call").map((
        e,
      ) => [e.origin.kind, e.function, e.outcome, e.refused_by]);
      assert.deepEqual(calls, [
        ["sparkplug", "pulse", "failed", null],
        ["sparkplug", "pulse", "refused", "min_interval"],
        ["sparkplug", "auto_only", "refused", "allowed_modes"],
        ["sparkplug", "leased", "refused", "requires_lease"],
        // Sent (the provider's error), not refused by the interval the DCMD started.
        ["estop", "pulse", "failed", null],
      ]);
    });
  },
});
