/**
 * The fleet view reads every node message on a shared broker, and the broker bounds what it hands
 * on only by its own packet size (Mosquitto's default: some 256 MB). A message over
 * MAX_FLEET_MESSAGE_BYTES is refused before it is decoded: it lists no node and changes none,
 * is counted (`refusedOversize`) and WARNed once per node per tenfold count. Before, every such
 * payload was decoded whole (a misbehaving node publishing MiBs at a high rate had the view
 * allocate and decode all of it) and taken. A message of exactly the bound is taken. Against a
 * real Mosquitto, a peer publishing, and the CLI as a child process.
 */
import assert from "node:assert/strict";
import { Buffer } from "node:buffer";
import { mosquittoMissing } from "../helpers/mosquitto.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  DataType,
  encode,
  FLEET_OVERSIZE_WARN_FACTOR,
  type FleetNode,
  MAX_FLEET_MESSAGE_BYTES,
  MAX_FLEET_OVERSIZE_NODES_WARNED,
} from "../../src/sparkplug/mod.ts";
import { listeningFleet, runtimeCli, withFleetLab } from "./_fleet_rig.ts";

/**
 * A node message of exactly `bytes` bytes of Sparkplug payload: its `Runtime/Mode` (and bdSeq),
 * filled up to the size by a String metric the view does not read.
 */
function sized(bytes: number, mode: string): Buffer {
  const build = (fill: number) =>
    encode({
      timestamp: Date.now(),
      metrics: [
        { name: "bdSeq", datatype: DataType.UInt64, long_value: 0 },
        { name: "Runtime/Mode", datatype: DataType.String, string_value: mode },
        { name: "Filler", datatype: DataType.String, string_value: "x".repeat(fill) },
      ],
    });
  let fill = Math.max(0, bytes - build(0).length);
  for (let i = 0; i < 8; i++) {
    const diff = bytes - build(fill).length;
    if (diff === 0) return Buffer.from(build(fill));
    fill += diff;
  }
  throw new Error(`no payload of exactly ${bytes} bytes`);
}

Deno.test({
  name:
    "collectFleet refuses a node message over MAX_FLEET_MESSAGE_BYTES unread (no node listed, no metric changed), counts it in refusedOversize and WARNs once per node; one of exactly the bound is taken",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const peer = await lab.client("peer");
      const { log, lines } = capturingLogger({ level: "info" });
      const end = new AbortController();
      let subscribed: () => void = () => {};
      const ready = new Promise<void>((r) => (subscribed = r));
      const view = lab.collect({
        waitMs: 20000,
        interrupt: end.signal,
        log,
        onUpdate: (n: Readonly<FleetNode>) => {
          if (n.node === "marker" && n.mode === "READY") subscribed();
          // The peer's last message: every one before it (one client, QoS 1) was handled.
          if (n.node === "marker" && n.mode === "DONE") end.abort();
        },
      });
      const publish = (topic: string, payload: Buffer) =>
        peer.publishAsync(`spBv1.0/lab/${topic}`, payload, { qos: 1 });
      // Births are not retained: published again until the view has subscribed and read one.
      const marker = setInterval(() => void publish("NBIRTH/marker", sized(100, "READY")), 100);
      await ready.finally(() => clearInterval(marker));

      await publish("NBIRTH/over", sized(MAX_FLEET_MESSAGE_BYTES + 1, "OVER"));
      await publish("NBIRTH/fits", sized(MAX_FLEET_MESSAGE_BYTES, "AUTO"));
      await publish("NDATA/fits", sized(MAX_FLEET_MESSAGE_BYTES + 1, "OVER"));
      await publish("NDATA/over", sized(MAX_FLEET_MESSAGE_BYTES + 1, "OVER"));
      await publish("NDATA/over", sized(MAX_FLEET_MESSAGE_BYTES + 1, "OVER"));
      await publish("NDATA/marker", sized(100, "DONE"));
      const r = await view;

      assert.deepEqual(
        r.nodes.map((n) => [n.node, n.born, n.mode]),
        [["fits", true, "AUTO"], ["marker", true, "DONE"]],
        "a node seen only through messages over the bound is not listed; one's metrics stay",
      );
      assert.equal(r.refusedOversize, 4);
      const warned = lines.filter((l) => l.includes("MAX_FLEET_MESSAGE_BYTES"));
      assert.equal(warned.length, 2, `one line per node:\n${lines.join("\n")}`);
      assert.match(warned[0]!, /^WARN\b.*edge node "over" \(group "lab"\).*NBIRTH of \d+ bytes/);
      assert.match(warned[1]!, /^WARN\b.*edge node "fits" \(group "lab"\).*NDATA of \d+ bytes/);
    }),
});

Deno.test({
  name:
    "runtime --fleet says the messages refused over MAX_FLEET_MESSAGE_BYTES: the table's last line, JSON refusedOversize, a WARN on stderr",
  ignore: mosquittoMissing(),
  fn: () =>
    withFleetLab(async (lab) => {
      const peer = await lab.client("peer");
      const big = sized(MAX_FLEET_MESSAGE_BYTES + 1, "OVER");
      const args = ["--fleet", lab.broker.url, "--group", "lab", "--wait-ms", "3000"];
      // Births are not retained: published one after the other for as long as the view runs.
      const whilePublishing = async (run: Promise<Awaited<ReturnType<typeof runtimeCli>>>) => {
        let done = false;
        const births = (async () => {
          while (!done) {
            await peer.publishAsync("spBv1.0/lab/NBIRTH/big", big, { qos: 1 });
            await new Promise((r) => setTimeout(r, 100));
          }
        })();
        try {
          return await run;
        } finally {
          done = true;
          await births;
        }
      };
      const table = await whilePublishing(runtimeCli(args));
      const json = await whilePublishing(runtimeCli([...args, "--format", "json"]));
      assert.equal(table.code, 0, table.stderr);
      assert.match(
        table.stdout,
        /\n\(\d+ messages? over MAX_FLEET_MESSAGE_BYTES \(\d+ bytes\) refused unread.*\)\n$/,
      );
      assert.doesNotMatch(table.stdout, /\bbig\b/);
      assert.match(table.stderr, /^WARN\b.*edge node "big" \(group "lab"\)/m);
      assert.equal(json.code, 0, json.stderr);
      const parsed = JSON.parse(json.stdout);
      assert.deepEqual(parsed.nodes, []);
      assert.ok(parsed.refusedOversize > 0, json.stdout);
    }),
});

Deno.test("collectFleet WARNs a node's refused messages at its 1st, 10th, 100th only, for MAX_FLEET_OVERSIZE_NODES_WARNED nodes; one line says the further nodes' are not logged", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const { clock, collected, session } = await listeningFleet(1000, { log });
  // Never decoded: any bytes of that size will do, one buffer for every message.
  const over = new Uint8Array(MAX_FLEET_MESSAGE_BYTES + 1);
  const refused = FLEET_OVERSIZE_WARN_FACTOR ** 2;
  for (let i = 0; i < refused; i++) session.deliver("spBv1.0/g/NDATA/loud", over);
  for (let n = 0; n < MAX_FLEET_OVERSIZE_NODES_WARNED + 5; n++) {
    session.deliver(`spBv1.0/g/DDATA/n${n}/dev`, over);
  }
  clock.advance(1000);
  const r = await collected;
  assert.equal(r.refusedOversize, refused + MAX_FLEET_OVERSIZE_NODES_WARNED + 5);
  assert.deepEqual(r.nodes, []);
  const loud = lines.filter((l) => l.includes('edge node "loud"'));
  assert.deepEqual(
    loud.map((l) => /(\d+) of its messages refused so far/.exec(l)?.[1]),
    ["1", String(FLEET_OVERSIZE_WARN_FACTOR), String(refused)],
  );
  assert.match(lines.find((l) => l.includes('edge node "n0"'))!, /DDATA \(device "dev"\) of/);
  // "loud" and the first nodes up to the bound each have their line; the rest, one in all.
  const perNode = lines.filter((l) => / edge node "n\d+"/.test(l));
  assert.equal(perNode.length, MAX_FLEET_OVERSIZE_NODES_WARNED - 1);
  assert.equal(lines.filter((l) => l.includes("not logged")).length, 1);
  assert.equal(lines.length, loud.length + perNode.length + 1, lines.join("\n"));
});
