/**
 * A Rebirth storm spread over time (one NCMD `Node Control/Rebirth` every few ms for seconds) is
 * not a birth set per set completed: Rebirths within MIN_REBIRTH_INTERVAL_MS of the last one's
 * births are answered by one set at the end of the interval. Before, on Mosquitto, each set that
 * completed was followed by the next (hundreds of NBIRTHs in 3 s); the folding of 9576512e only
 * caught the requests that arrived while a set was still going out. The last Rebirth is still
 * answered: an NBIRTH follows it.
 *
 * A runtime on a real Mosquitto (tests/sparkplug/_fleet_rig.ts), a host client of the test.
 */
import assert from "node:assert/strict";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { waitFor } from "../helpers/kernel.ts";
import { MIN_REBIRTH_INTERVAL_MS } from "../../src/sparkplug/mod.ts";
import { FLEET_GROUP, rebirth, withFleetLab } from "./_fleet_rig.ts";

/** How long the host asks, and how often (ms). */
const STORM_MS = 3000;
const EVERY_MS = 5;

Deno.test({
  name: "a Rebirth storm over seconds gets at most one birth set per MIN_REBIRTH_INTERVAL_MS",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const rt = await lab.runtime("storm-1");
      await waitFor("the births", () => rt.sparkplug!.online);
      const host = await lab.client("storm-host");
      const nbirths: number[] = [];
      host.on("message", (topic) => {
        if (topic === `spBv1.0/${FLEET_GROUP}/NBIRTH/storm-1`) nbirths.push(performance.now());
      });
      await host.subscribeAsync(`spBv1.0/${FLEET_GROUP}/NBIRTH/storm-1`, { qos: 0 });
      const start = performance.now();
      let sent = 0;
      let lastSent = start;
      while (performance.now() - start < STORM_MS) {
        host.publish(`spBv1.0/${FLEET_GROUP}/NCMD/storm-1`, rebirth(), { qos: 0 });
        sent++;
        lastSent = performance.now();
        await new Promise((r) => setTimeout(r, EVERY_MS));
      }
      // The last is answered (a loaded machine reads it late).
      await waitFor(
        "an NBIRTH after the last Rebirth",
        () => nbirths.some((t) => t > lastSent),
        20_000,
      );
      const elapsed = performance.now() - start;
      // Each set of the storm's but the first waits MIN_REBIRTH_INTERVAL_MS after the one before.
      const most = Math.floor(elapsed / MIN_REBIRTH_INTERVAL_MS) + 2;
      assert.ok(
        nbirths.length <= most,
        `${nbirths.length} NBIRTHs for ${sent} Rebirths over ${Math.round(elapsed)} ms ` +
          `(at most ${most})`,
      );
      assert.ok(nbirths.length >= 2, `${nbirths.length} NBIRTHs: the storm is answered`);
    }),
});
