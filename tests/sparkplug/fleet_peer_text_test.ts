/**
 * The fleet view's table (`runtime --fleet URL`) meets a node metric a peer publishes: whatever
 * client the broker lets publish under `spBv1.0/<group>/...` chooses the text of `Runtime/Mode`
 * (any String), and with a broker other than Mosquitto the group and node ids too. Printed as they
 * came, a newline forged a row of the table and an escape sequence moved the terminal's cursor
 * (ESC [1A ESC [2K erases the line above: the row of a node whose e-stop is latched). Against a
 * real Mosquitto, a real runtime latched, and the CLI as a child process.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { DataType, encode } from "../../src/sparkplug/mod.ts";
import { runtimeCli, withFleetLab } from "./_fleet_rig.ts";

const ESC = "\u001b";

Deno.test({
  name:
    "runtime --fleet prints a peer's node metric text escaped, one row per node: a Runtime/Mode holding a newline or an escape sequence forges no row and erases none (the latched node's stays)",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const peer = await lab.client("peer");
      const rt = await lab.runtime("rig-1");
      await rt.estop.trigger("test");
      // A peer's NBIRTH, published again and again while the view listens (births are not
      // retained). Its mode: up one line and erase it, then a forged row saying rig-1 runs
      // unlatched.
      const forged = `IDLE${ESC}[1A${ESC}[2K\nlab    rig-1  reachable  MANUAL  -  0 (0 unacked)`;
      const birth = Buffer.from(encode({
        timestamp: Date.now(),
        metrics: [
          { name: "bdSeq", datatype: DataType.UInt64, long_value: 0 },
          { name: "Runtime/Mode", alias: 1, datatype: DataType.String, string_value: forged },
        ],
      }));
      const births = setInterval(
        () => void peer.publishAsync("spBv1.0/lab/NBIRTH/aaa", birth, { qos: 1 }).catch(() => {}),
        100,
      );
      const out = await runtimeCli([
        "--fleet",
        lab.broker.url,
        "--group",
        "lab",
        "--wait-ms",
        "2000",
      ]).finally(() => clearInterval(births));
      const stdout = out.stdout;
      assert.equal(out.code, 0, out.stderr);
      assert.ok(!stdout.includes(ESC), `no escape character reaches the terminal: ${stdout}`);
      const lines = stdout.trimEnd().split("\n");
      assert.equal(lines.length, 3, `a header and one row per node:\n${stdout}`);
      assert.match(lines[1]!, /^lab\s+aaa\s+reachable\s+IDLE\\x1b\[1A\\x1b\[2K\\nlab /);
      const rig = lines.filter((l) => /^lab\s+rig-1\s/.test(l));
      assert.equal(rig.length, 1, stdout);
      assert.match(rig[0]!, /^lab\s+rig-1\s+reachable\s+FAULT\s+LATCHED\s/);
    }),
});
