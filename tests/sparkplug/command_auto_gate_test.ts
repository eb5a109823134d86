/**
 * A DCMD goes through every gate an operator's call goes through (docs/sparkplug.md, "Commands"):
 * in AUTO with `manual_gating_policy: BLOCK` it is refused as `POST /v0/call` is, while the tree's
 * own calls pass, the refusal published back and audited with origin sparkplug and mode AUTO.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { sparkplugHost } from "../helpers/sparkplug_host.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { AuditEntry } from "../../src/audit/mod.ts";
import {
  automationOptions,
  cached,
  enterAuto,
  MOTOR_THEN_SLEEP,
  TreeDir,
} from "../scenarios/automation_helpers.ts";

const GROUP = "lab";
const NODE = "rig-auto";
const relay = sparkplugDeviceId("sim0", "relayio0");

Deno.test({
  name: "DCMD in AUTO with manual_gating_policy BLOCK is refused and audited, as POST /v0/call is",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const host = await sparkplugHost(broker.url, GROUP);
    const dir = await TreeDir.create();
    let rt: Kernel | null = null;
    try {
      const tree = await dir.write("motor.xml", MOTOR_THEN_SLEEP);
      rt = await startRuntime(testConfig({
        ...automationOptions(tree, { manualGatingPolicy: "BLOCK" }),
        runtime: { name: NODE },
        sparkplug: { enabled: true, brokerUrl: broker.url, groupId: GROUP, commands: true },
      }));
      const entries: AuditEntry[] = [];
      rt.audit.onEntry((e) => entries.push(e));
      const birth = await waitFor(
        "relayio0's DBIRTH",
        () => host.messages.find((m) => m.topic === `spBv1.0/${GROUP}/DBIRTH/${NODE}/${relay}`),
      );
      const alias = (birth.payload.metrics ?? []).find((m) => m.name === "Functions/set_relay_ch1")!
        .alias as number;

      await enterAuto(rt);
      await waitFor(
        "the tree started motor 1",
        () => cached(rt!, "sim0/motorctl0", "motor1_duty") === 0.5,
      );
      const before = host.messages.length;
      await host.send(`spBv1.0/${GROUP}/DCMD/${NODE}/${relay}`, [
        { name: "Functions/set_relay_ch1", datatype: 11, boolean_value: true },
      ]);
      const answer = await waitFor(
        "the command's answer",
        () =>
          host.messages.slice(before).flatMap((m) =>
            m.topic === `spBv1.0/${GROUP}/DDATA/${NODE}/${relay}` ? m.payload.metrics ?? [] : []
          ).find((x) => x.alias === alias && typeof x.string_value === "string"),
      );
      assert.match(answer.string_value as string, /^REFUSED: .*AUTO/);
      assert.equal(rt.modes.current(), "AUTO");
      assert.equal(cached(rt, "sim0/relayio0", "relay_ch1_state"), false);

      rt.audit.flushOpen();
      const refused = entries.filter((e) =>
        e.origin.kind === "sparkplug" && e.function === "set_relay_ch1"
      );
      assert.deepEqual(refused.map((e) => [e.outcome, e.mode, e.refused_by]), [
        ["refused", "AUTO", "mode"],
      ]);
    } finally {
      await rt?.stop();
      await host.close();
      await broker.dispose();
      await dir.dispose();
    }
  },
});
