/**
 * `runtime --fleet URL --group G` meets the Sparkplug id rules the edge node's configuration
 * enforces on `sparkplug.group_id` (one topic level: no `/`, `+`, `#`, no control characters):
 * the view subscribed to `spBv1.0/<G>/#` and kept the messages whose group is G. `--group +` (the
 * MQTT wildcard, for every group) got every group's messages and kept none: an empty table, exit
 * 0, with nodes on the broker. `--group ''` listed nothing the same way, `--group a/b` too, and
 * `--group '#'` exited 3, "broker not reached", with the broker up. Each is a usage error (exit 2)
 * naming `--group`. Against a real Mosquitto with a node of group "lab" on it, the CLI as a child
 * process.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { runtimeCli, withFleetLab } from "./_fleet_rig.ts";

Deno.test({
  name:
    "runtime --fleet --group refuses a group no Sparkplug node can have ('+', '#', 'a/b', '', a control character) as a usage error naming --group, not an empty list or 'broker not reached'",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (rig) => {
      const peer = await rig.client("peer");
      // A node of group "lab", born again and again while the views listen.
      const birth = Buffer.from(encode({
        timestamp: Date.now(),
        metrics: [{ name: "bdSeq", datatype: DataType.UInt64, long_value: 0 }],
      }));
      const births = setInterval(
        () => void peer.publishAsync("spBv1.0/lab/NBIRTH/rig-1", birth, { qos: 1 }).catch(() => {}),
        100,
      );
      try {
        const fleet = (group: string) =>
          runtimeCli(["--fleet", rig.broker.url, "--group", group, "--wait-ms", "500"]);
        // The group as it is: listed.
        const lab = await fleet("lab");
        assert.equal(lab.code, 0, lab.stderr);
        assert.match(lab.stdout, /^lab\s+rig-1\s+reachable/m);
        for (const group of ["+", "#", "a/b", "", "lab\u0007"]) {
          const r = await fleet(group);
          assert.equal(r.code, 2, `--group ${JSON.stringify(group)}: ${r.stdout}${r.stderr}`);
          assert.match(r.stderr, /^runtime: --group /, r.stderr);
          assert.equal(r.stdout, "");
        }
        const wildcard = await fleet("+");
        assert.match(wildcard.stderr, /must not contain '\/', '\+' or '#'.*omit --group/);
      } finally {
        clearInterval(births);
      }
    }),
});
