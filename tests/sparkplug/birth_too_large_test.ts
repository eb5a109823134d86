/**
 * A broker that closes the connection at a birth it refuses (Mosquitto's `max_packet_size` below a
 * DBIRTH) closes every connection right after its births. The edge node must not reconnect every
 * reconnect_ms for ever (a bdSeq and its save, an NBIRTH and an NDEATH at the host, log lines each
 * time): from BIRTH_LOSSES_BEFORE_BACKOFF such closes in a row it says so once, naming the largest
 * birth, and waits longer before each next connection. Against a real Mosquitto and the simulated
 * provider (its chaos_control device's DBIRTH is over 2 kB).
 */
import assert from "node:assert/strict";
import { Mosquitto, mosquittoMissing } from "../helpers/mosquitto.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { infoLines, sparkplugHost } from "../helpers/sparkplug_host.ts";
import {
  BIRTH_LOSSES_BEFORE_BACKOFF,
  BROKER_ERRORS_SAID,
  decode,
} from "../../src/sparkplug/mod.ts";

const GROUP = "lab";
const NODE = "rig-big";
/** Mosquitto's max_packet_size: above the NBIRTH and some DBIRTHs, below the largest. */
const MAX_PACKET = 1000;
const RECONNECT_MS = 100;

Deno.test({
  name: "a broker closing every connection at its births: said once, reconnects slow down",
  ignore: mosquittoMissing(),
  async fn() {
    const broker = await Mosquitto.start({ maxPacketSize: MAX_PACKET });
    const host = await sparkplugHost(broker.url, GROUP);
    // When each NBIRTH reached the host (monotonic ms), by its bdSeq.
    const nbirthAt = new Map<number, number>();
    host.client.on("message", (topic, payload) => {
      if (topic !== `spBv1.0/${GROUP}/NBIRTH/${NODE}`) return;
      const bdSeq = decode(new Uint8Array(payload)).metrics?.find((m) => m.name === "bdSeq");
      nbirthAt.set(Number(bdSeq?.long_value), performance.now());
    });
    const { lines, log } = infoLines();
    const rt = await startRuntime(
      testConfig({
        runtime: { name: NODE },
        providers: [simProvider("sim0")],
        sparkplug: {
          enabled: true,
          brokerUrl: broker.url,
          groupId: GROUP,
          reconnectMs: RECONNECT_MS,
        },
      }),
      { host: { log } },
    );
    try {
      const said = await waitFor(
        "the WARN saying the broker closes the connection at the births",
        () => lines.find((l) => /closed the connection within \d+ ms .* of its births/.test(l)),
      );
      assert.match(said, /^WARN /);
      const m = / the largest message written is (\S+), (\d+) bytes of payload/.exec(said);
      assert.ok(m, said);
      assert.match(m[1]!, new RegExp(`^spBv1\\.0/${GROUP}/DBIRTH/${NODE}/sim0:`));
      assert.ok(
        Number(m[2]) > MAX_PACKET,
        `the largest message is over the broker's bound: ${said}`,
      );
      const k = BIRTH_LOSSES_BEFORE_BACKOFF;
      // The connection of bdSeq i is the (i + 1)th closed at its births: from the kth on, the
      // wait before the next one doubles (2 x reconnect_ms after the kth, 4 x, then 8 x).
      await waitFor("two more NBIRTHs", () => nbirthAt.has(k + 2), 20_000);
      for (const [bdSeq, times] of [[k + 1, 4], [k + 2, 8]] as const) {
        const gap = nbirthAt.get(bdSeq)! - nbirthAt.get(bdSeq - 1)!;
        assert.ok(gap >= times * RECONNECT_MS - 10, `waited ${gap} ms before bdSeq ${bdSeq}`);
      }
      const warns = (re: RegExp) => lines.filter((l) => l.startsWith("WARN") && re.test(l));
      assert.equal(warns(/of its births/).length, 1, "said once");
      assert.equal(warns(/lost the broker/).length, k, "then each loss is no WARN");
      // The broker's errors are WARNed in the first k losses, each message once per connection
      // (a close may carry one error, two in turn -- a read's and a write's ECONNRESET -- or none:
      // fresh-clone CIs saw 4 and 6 for k = 5); in the losses after them only a message not said
      // before in the stretch is (a write's EPIPE, once), never one per loss.
      await waitFor("one more NBIRTH", () => nbirthAt.has(k + 3), 20_000);
      const brokerErrors = (from: number) =>
        lines.slice(from).filter((l) => l.startsWith("WARN") && / broker connection: /.test(l))
          .map((l) => l.slice(l.indexOf(" broker connection: ")));
      const after = brokerErrors(lines.indexOf(said) + 1);
      assert.equal(new Set(after).size, after.length, `each message once: ${after.join(", ")}`);
      assert.ok(after.length <= BROKER_ERRORS_SAID, after.join(", "));
    } finally {
      await rt.stop();
      await host.close();
      await broker.dispose();
    }
  },
});
