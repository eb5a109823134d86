/**
 * The fleet view (issue 38 item 6, `runtime --fleet URL`): three runtimes on one broker, listed
 * from their births (asked for by Rebirth, since births are not retained), data and deaths.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { runtimeCli, withFleetLab } from "./_fleet_rig.ts";

const NAMES = ["rig-a", "rig-b", "rig-c"];

Deno.test({
  name: "three runtimes on one broker are listed by the fleet view; a stopped one shows dead",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const runtimes: Kernel[] = [];
      for (const name of NAMES) runtimes.push(await lab.runtime(name));
      await runtimes[1]!.modes.request("MANUAL");
      const { nodes } = await lab.collect();
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
      const other = await lab.collect({ group: "plant", waitMs: 500 });
      assert.deepEqual(other.nodes, []);

      // rig-c stops while the view listens (once the view knows it): its NDEATH marks it dead.
      let seen: () => void = () => {};
      const rigCSeen = new Promise<void>((r) => (seen = r));
      const view = lab.collect({
        waitMs: 4000,
        onUpdate: (n) => {
          if (n.node === "rig-c" && n.born) seen();
        },
      });
      await rigCSeen;
      await lab.stop(runtimes.pop()!);
      const after = await view;
      assert.deepEqual(
        after.nodes.map((n) => [n.node, n.reachable]),
        [["rig-a", true], ["rig-b", true], ["rig-c", false]],
      );
    }),
});

Deno.test({
  name: "runtime --fleet prints the edge nodes as JSON; an unreachable broker exits 3",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      await lab.runtime("rig-cli");
      const out = await runtimeCli([
        "--fleet",
        lab.broker.url,
        "--group",
        "lab",
        "--wait-ms",
        "2000",
        "--format",
        "json",
      ]);
      assert.equal(out.code, 0, out.stderr);
      const parsed = JSON.parse(out.stdout);
      assert.deepEqual(
        parsed.nodes.map((n: { node: string; reachable: boolean; mode: string }) => [
          n.node,
          n.reachable,
          n.mode,
        ]),
        [["rig-cli", true, "IDLE"]],
      );
      const port = lab.broker.port;
      await lab.broker.pause();
      const down = await runtimeCli(["--fleet", `mqtt://127.0.0.1:${port}`, "--wait-ms", "500"]);
      assert.equal(down.code, 3);
      assert.match(down.stderr, /^runtime: fleet view: broker not reached/);
      const usage = await runtimeCli(["--fleet", "http://x"]);
      assert.equal(usage.code, 2);
    }),
});
