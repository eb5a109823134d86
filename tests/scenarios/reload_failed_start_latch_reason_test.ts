/**
 * A reload fails to start a provider it restarts (p0), a later reload starts it and its new
 * process is up without a device it listed before (probe). The device-loss latch keeps the cause
 * of the loss -- the failed start, at the first reload, the date it keeps -- as it does for the
 * device that came back (other), lost by the same start; the device's condition (and so
 * GET /v0/automation/status `blocked_devices`) says why it is down now: not in the inventory. Both
 * are true, and why_not_running says them in one line: "was lost (...)", "is down (...)". The
 * latch restates a reason only while it is a placeholder (the reload restarting the provider),
 * never a cause told already (docs/safety.md section 5). The latch's reasons show in
 * why_not_running once it forced FAULT: sim1 (no restarts) is killed in AUTO for that. Real
 * child processes.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { type Inventory, programmableProvider, T } from "../helpers/programmable_provider.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider, withUnstartable } from "../helpers/sim_config.ts";
import { automationConfig, TreeDir, treeXml } from "./automation_helpers.ts";
import { failedStartText } from "../../src/providers/mod.ts";

/** p0's inventory: `other` always, `probe` (the device the tree reads) when `withProbe`. */
function inventory(withProbe: boolean): Inventory {
  const sample = (id: string) => [{ id, type: T.DOUBLE, double: 1, quality: 1 }];
  return {
    devices: {
      ...(withProbe
        ? { probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: sample("temp") } }
        : {}),
      other: { signals: [{ id: "x", type: T.DOUBLE }], values: sample("x") },
    },
  };
}

const FAILED_START = "provider p0 failed to start at a configuration reload (cannot start " +
  `provider 'p0' ("/nonexistent/provider")`;

Deno.test("Reload: a device a failed start lost and a later start leaves out stays latched for that failed start, and is down as not in the inventory", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "reads_probe.xml",
      treeXml(
        `<Sequence><ReadSignal device_handle="p0/probe" signal_id="temp" value="{t}" />` +
          `<ReadSignal device_handle="sim1/tempctl0" signal_id="tc1_temp" value="{u}" />` +
          `</Sequence>`,
      ),
    );
    const invFile = `${dir.path}/p0.json`;
    await Deno.writeTextFile(invFile, JSON.stringify(inventory(true)));
    const providers = [
      simProvider("sim0"),
      simProvider("sim1", { restart: false }),
      programmableProvider("p0", invFile),
    ];
    await using r = await rig({
      config: automationConfig(tree, { config: { providers } }),
      arm: true,
      programs: false,
    });
    const rt = r.kernel;
    const listed = (p: string, d: string) => rt.inventory.capabilities(p, d) !== undefined;
    await waitFor(
      "p0/probe and sim1 listed",
      () => listed("p0", "probe") && listed("sim1", "tempctl0"),
    );
    await rt.modes.request("AUTO");
    r.kill("sim1");
    await waitFor("FAULT forced by the loss of sim1", () => rt.modes.current() === "FAULT");
    const good = rt.config;

    const broken = await rt.reload(withUnstartable(good, "p0"));
    assert.match(broken.providers.failed.map(failedStartText).join(), /^p0: cannot start provider/);
    await Deno.writeTextFile(invFile, JSON.stringify(inventory(false)));
    const fixed = await rt.reload(good);
    assert.deepEqual(fixed.providers.added, ["p0"]);
    await waitFor("p0 up without probe", () => listed("p0", "other") && !listed("p0", "probe"));

    const status = rt.automation!.status();
    assert.deepEqual(
      status.blocked_devices.map((b) => [b.device_handle, b.condition, b.reason]),
      [["p0/probe", "down", "not in the inventory of provider p0"]],
      "down now: not in the inventory",
    );
    const why = status.why_not_running ?? "";
    for (const handle of ["p0/probe", "p0/other"]) {
      assert.ok(status.device_loss_latched.includes(handle), `${handle} latched`);
      assert.ok(why.includes(`${handle} was lost (${FAILED_START}`), `${handle}: ${why}`);
    }
    assert.ok(why.includes("p0/probe is down (not in the inventory of provider p0)"), why);
  } finally {
    await dir.dispose();
  }
});
