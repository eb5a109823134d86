/**
 * The fleet view (issue 38 item 6, `runtime --fleet URL`): three runtimes on one broker, listed
 * from their births (asked for by Rebirth, since births are not retained), data and deaths.
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { collectFleet } from "../../src/sparkplug/mod.ts";
import { connectMqttJs } from "../../src/host/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";

const NAMES = ["rig-a", "rig-b", "rig-c"];

Deno.test({
  name: "three runtimes on one broker are listed by the fleet view; a stopped one shows dead",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    const runtimes: Kernel[] = [];
    try {
      for (const name of NAMES) {
        runtimes.push(
          await startRuntime(testConfig({
            runtime: { name },
            providers: [simProvider("sim0")],
            sparkplug: { enabled: true, brokerUrl: broker.url, groupId: "lab" },
          })),
        );
      }
      await runtimes[1]!.modes.request("MANUAL");
      const { nodes } = await collectFleet({
        url: broker.url,
        group: "lab",
        waitMs: 2000,
        connect: connectMqttJs,
        clock: systemClock,
      });
      assert.deepEqual(
        nodes.map((n) => [n.node, n.reachable, n.born, n.mode, n.estopLatched, n.providersUp]),
        [
          ["rig-a", true, true, "IDLE", false, 1],
          ["rig-b", true, true, "MANUAL", false, 1],
          ["rig-c", true, true, "IDLE", false, 1],
        ],
      );
      assert.ok(nodes.every((n) => n.devices === runtimes[0]!.inventory.devices().length));

      // Another group is not listed.
      const other = await collectFleet({
        url: broker.url,
        group: "plant",
        waitMs: 500,
        connect: connectMqttJs,
        clock: systemClock,
      });
      assert.deepEqual(other.nodes, []);

      // rig-c stops while the view listens (once the view knows it): its NDEATH marks it dead.
      let seen: () => void = () => {};
      const rigCSeen = new Promise<void>((r) => (seen = r));
      const view = collectFleet({
        url: broker.url,
        group: "lab",
        waitMs: 4000,
        connect: connectMqttJs,
        clock: systemClock,
        onUpdate: (n) => {
          if (n.node === "rig-c" && n.born) seen();
        },
      });
      await rigCSeen;
      await runtimes.pop()!.stop();
      const after = await view;
      assert.deepEqual(
        after.nodes.map((n) => [n.node, n.reachable]),
        [["rig-a", true], ["rig-b", true], ["rig-c", false]],
      );
    } finally {
      for (const rt of runtimes) await rt.stop();
      await broker.dispose();
    }
  },
});

Deno.test({
  name: "runtime --fleet prints the edge nodes as JSON; an unreachable broker exits 3",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start();
    let rt: Kernel | null = null;
    try {
      rt = await startRuntime(testConfig({
        runtime: { name: "rig-cli" },
        providers: [simProvider("sim0")],
        sparkplug: { enabled: true, brokerUrl: broker.url, groupId: "lab" },
      }));
      const run = (args: string[]) =>
        new Deno.Command(Deno.execPath(), {
          args: [
            "run",
            ...compiledPermissions(),
            new URL("../../src/main.ts", import.meta.url).pathname,
            ...args,
          ],
          stdout: "piped",
          stderr: "piped",
        }).output();
      const out = await run([
        "--fleet",
        broker.url,
        "--group",
        "lab",
        "--wait-ms",
        "2000",
        "--format",
        "json",
      ]);
      assert.equal(out.code, 0, new TextDecoder().decode(out.stderr));
      const parsed = JSON.parse(new TextDecoder().decode(out.stdout));
      assert.deepEqual(
        parsed.nodes.map((n: { node: string; reachable: boolean; mode: string }) => [
          n.node,
          n.reachable,
          n.mode,
        ]),
        [["rig-cli", true, "IDLE"]],
      );
      const port = broker.port;
      await broker.pause();
      const down = await run(["--fleet", `mqtt://127.0.0.1:${port}`, "--wait-ms", "500"]);
      assert.equal(down.code, 3);
      assert.match(
        new TextDecoder().decode(down.stderr),
        /^runtime: fleet view: broker not reached/,
      );
      const usage = await run(["--fleet", "http://x"]);
      assert.equal(usage.code, 2);
    } finally {
      await rt?.stop();
      await broker.dispose();
    }
  },
});
