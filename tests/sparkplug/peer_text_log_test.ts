/**
 * The edge node's log lines quote what a provider (a device id, a signal id) or a broker (a
 * command's metric name, its topic) sent, cut to SPARKPLUG_QUOTED_NAME_CHARS, and a command's
 * reason cut to SPARKPLUG_QUOTED_REASON_CHARS: a quote in them cannot make the rest of a line
 * ambiguous, 10 KB cannot flood one. The node runs among doubles (tests/sparkplug/_edge_node_rig.ts).
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import type { PublishedEvent } from "../../src/events/mod.ts";
import {
  DataType,
  encode,
  MAX_CLASH_SIGNALS_NAMED,
  SPARKPLUG_QUOTED_NAME_CHARS,
  SPARKPLUG_QUOTED_REASON_CHARS,
  sparkplugDeviceId,
} from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { deviceCaps, edgeNodeRig, oneDevice, pulseFunction, signalSpec } from "./_edge_node_rig.ts";

const P = "p";
const LONG = "L".repeat(10_000);
const cut = (text: string, n: number) => `${text.slice(0, n)}\u2026`;

function update(deviceId: string, signalId: string, id: number): PublishedEvent {
  return {
    id,
    event: {
      kind: "state_update",
      provider_id: P,
      device_id: deviceId,
      signal_id: signalId,
      value: { type: "string", string: "x".repeat(100_000) },
      quality: "OK",
      timestamp_ms: 0,
    },
  } as PublishedEvent;
}

Deno.test("SparkplugEdgeNode quotes a provider's device and signal ids in its too-large line, cut to SPARKPLUG_QUOTED_NAME_CHARS", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const r = edgeNodeRig({
    providers: [{
      id: P,
      available: true,
      devices: [
        deviceCaps(P, 'd"0', { signals: [signalSpec('s" x', "string")] }),
        deviceCaps(P, LONG, { signals: [signalSpec(LONG, "string")] }),
      ],
    }],
    log,
    // Room for the births (a 10 KB signal id), none for a value of 100 KB.
    maxMessageBytes: 65_536,
  });
  await r.online();
  r.emit(update('d"0', 's" x', 1));
  r.emit(update(LONG, LONG, 2));
  await flushMicrotasks();
  const said = lines.filter((l) => l.includes(" left out: alone"));
  assert.equal(said.length, 2, said.map((l) => l.slice(0, 200)).join("\n"));
  assert.match(said[0]!, /DDATA metric "s\\" x" of "p:d\\"0" left out: alone/);
  const long = JSON.stringify(cut(LONG, SPARKPLUG_QUOTED_NAME_CHARS));
  const device = JSON.stringify(cut(`p:${LONG}`, SPARKPLUG_QUOTED_NAME_CHARS));
  assert.ok(said[1]!.includes(`DDATA metric ${long} of ${device} left out: alone`), said[1]);
  assert.ok(lines.every((l) => l.length < 1000), "every line bounded");
  await r.stop();
});

Deno.test("SparkplugEdgeNode quotes a broker's command name and topic and cuts a refusal's reason to SPARKPLUG_QUOTED_REASON_CHARS in its command lines", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  const reason = `busy "now"\nERROR forged ${"R".repeat(10_000)}`;
  const r = edgeNodeRig({
    providers: oneDevice(P, "d0", { functions: [pulseFunction("pulse")] }),
    mode: "MANUAL",
    commands: {
      call: () => Promise.reject(new RuntimeError("FAILED_PRECONDITION", reason)),
      estop: () => Promise.resolve(),
    },
    log,
  });
  await r.online();
  const device = sparkplugDeviceId(P, "d0");
  // A metric no function of the device has, named at length by the broker.
  r.command(`spBv1.0/g/DCMD/n/${device}`, [
    { name: `Functions/"${LONG}`, datatype: DataType.Boolean, boolean_value: true },
  ]);
  // A function the device has: its call is refused with a 10 KB reason.
  r.command(`spBv1.0/g/DCMD/n/${device}`, [
    { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  const said = lines.filter((l) => l.includes("sparkplug: command "));
  assert.equal(said.length, 2, said.map((l) => l.slice(0, 200)).join("\n"));
  const topic = JSON.stringify(`spBv1.0/g/DCMD/n/${device}`);
  const name = JSON.stringify(cut(`Functions/"${LONG}`, SPARKPLUG_QUOTED_NAME_CHARS));
  assert.ok(
    said[0]!.endsWith(
      `sparkplug: command ${name} on ${topic} refused (1 so far): "no such function"`,
    ),
    said[0]!.slice(0, 400),
  );
  const why = JSON.stringify(cut(reason, SPARKPLUG_QUOTED_REASON_CHARS));
  assert.ok(
    said[1]!.endsWith(
      `sparkplug: command "Functions/pulse" on ${topic} refused (2 so far): ${why}`,
    ),
    said[1]!.slice(0, 600),
  );
  assert.ok(lines.every((l) => l.length < 1000), "every line bounded");
  await r.stop();
});

Deno.test("SparkplugEdgeNode quotes a retained command's topic cut to SPARKPLUG_QUOTED_NAME_CHARS, the command's name in an internal error's line, and names MAX_CLASH_SIGNALS_NAMED clashing signals at most", async () => {
  const { lines, log } = capturingLogger({ level: "info" });
  // A refusal whose message cannot be read: the answer's own work throws (an internal error).
  // (A logger that throws no longer does: the node wraps its logger in neverThrowing.)
  const hostile = new RuntimeError("FAILED_PRECONDITION", "not now");
  Object.defineProperty(hostile, "message", {
    get() {
      throw new Error("injected: the refusal's message could not be read");
    },
  });
  const fn = `f"${LONG}`;
  const many = Array.from({ length: MAX_CLASH_SIGNALS_NAMED + 5 }, (_, i) => `s${i}`);
  const r = edgeNodeRig({
    providers: oneDevice(P, "d0", {
      // Every signal is named as a function's metric: a clash of each.
      signals: many.map((s) => signalSpec(`Functions/${s}`, "double")),
      functions: [pulseFunction(fn, 1), ...many.map((s, i) => pulseFunction(s, i + 2))],
    }),
    mode: "MANUAL",
    commands: {
      call: () => Promise.reject(hostile),
      estop: () => Promise.resolve(),
    },
    log,
  });
  await r.online();
  const device = sparkplugDeviceId(P, "d0");
  const retainedTopic = `spBv1.0/g/DCMD/n/${device}"${LONG}`;
  r.session.deliver(
    retainedTopic,
    encode({ timestamp: 1, metrics: [{ name: "x", datatype: DataType.Boolean }] }),
    true,
  );
  r.command(`spBv1.0/g/DCMD/n/${device}`, [
    { name: `Functions/${fn}`, datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  const retained = lines.filter((l) => l.includes("retained command on "));
  assert.equal(retained.length, 1, lines.map((l) => l.slice(0, 200)).join("\n"));
  const topic = JSON.stringify(cut(retainedTopic, SPARKPLUG_QUOTED_NAME_CHARS));
  assert.ok(retained[0]!.includes(`retained command on ${topic} ignored`), retained[0]);
  const internal = lines.filter((l) => l.includes("internal error in the answer to "));
  assert.equal(internal.length, 1, lines.map((l) => l.slice(0, 200)).join("\n"));
  const name = JSON.stringify(cut(`Functions/${fn}`, SPARKPLUG_QUOTED_NAME_CHARS));
  assert.ok(
    internal[0]!.includes(`internal error in the answer to ${name} (the node goes on)`),
    internal[0]!.slice(0, 400),
  );
  const clash = lines.filter((l) => l.includes(" not published (named as a"));
  assert.equal(clash.length, 1, lines.map((l) => l.slice(0, 200)).join("\n"));
  const named = many.slice(0, MAX_CLASH_SIGNALS_NAMED).map((s) => `"Functions/${s}"`).join(", ");
  assert.ok(clash[0]!.includes(`signals ${named} and 5 more not published`), clash[0]);
  assert.ok(lines.every((l) => l.length < 2000), "every line bounded");
  await r.stop();
});
