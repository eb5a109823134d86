/**
 * A DCMD to a device its provider has now but whose DBIRTH has not gone out yet (the provider
 * added it while MAX_IN_FLIGHT writes were unconfirmed: its birth waits for a write to complete)
 * is refused as not born yet, naming the wait: the device is the node's and will be born, and
 * "no such device" told the host it does not exist.
 *
 * The node runs among doubles (tests/sparkplug/_edge_node_rig.ts) whose writes complete when the
 * test says so.
 */
import assert from "node:assert/strict";
import { DataType, MAX_IN_FLIGHT, sparkplugDeviceId } from "../../src/sparkplug/mod.ts";
import { flushMicrotasks } from "../helpers/clock.ts";
import { deviceCaps, edgeNodeRig, pulseFunction } from "./_edge_node_rig.ts";

const P = "p0";
const NEW = sparkplugDeviceId(P, "dev1");

/**
 * Born with dev0; then the broker stops confirming writes (MAX_IN_FLIGHT outstanding), the
 * provider's rediscovery finds dev1, and a DCMD to dev1 arrives: its DBIRTH waits for a write.
 */
async function commandWhileBirthWaits() {
  const caps = (d: string) => deviceCaps(P, d, { functions: [pulseFunction("pulse")] });
  const provider = { id: P, available: true, devices: [caps("dev0")] };
  const rig = edgeNodeRig({ providers: [provider], mode: "MANUAL", hold: true, recordCalls: true });
  await rig.online();
  rig.session.complete();
  await flushMicrotasks();
  assert.ok(rig.node.online, "born");
  const resultAlias = rig.nodeAlias("Runtime/Command Result");
  while (rig.session.inFlight < MAX_IN_FLIGHT) rig.node.rebirth();
  const from = rig.session.published.length;
  provider.devices = [caps("dev0"), caps("dev1")];
  rig.changed(P);
  await flushMicrotasks();
  rig.command(`spBv1.0/g/DCMD/n/${NEW}`, [
    { name: "Functions/pulse", datatype: DataType.Boolean, boolean_value: true },
  ]);
  await flushMicrotasks();
  assert.deepEqual(rig.calls, [], "no call: the device is not born");
  return { rig, resultAlias, from };
}

Deno.test("a DCMD to a device added while the writes are full (its DBIRTH waiting) is refused as not born yet, not as no such device", async () => {
  const { rig, resultAlias, from } = await commandWhileBirthWaits();
  // Writes complete: the DBIRTH that waited and the answer (a write each).
  rig.session.completeOne();
  await flushMicrotasks();
  rig.session.completeOne();
  await flushMicrotasks();
  const after = rig.session.published.slice(from);
  const answers = after.flatMap((m) =>
    m.topic === "spBv1.0/g/NDATA/n"
      ? (m.payload.metrics ?? []).filter((x) => x.alias === resultAlias).map((x) => x.string_value)
      : []
  );
  assert.deepEqual(answers, [
    `${NEW}/Functions/pulse: REFUSED: device not born yet (its DBIRTH waits for the writes in ` +
    `flight: MAX_IN_FLIGHT ${MAX_IN_FLIGHT}); send it again after the DBIRTH`,
  ]);
  assert.ok(
    after.some((m) => m.topic === `spBv1.0/g/DBIRTH/n/${NEW}`),
    "born once a write completed",
  );
  await rig.stop();
});

Deno.test("the not-born-yet answer to a DCMD follows the DBIRTH it names, whichever write completes first", async () => {
  const { rig, resultAlias, from } = await commandWhileBirthWaits();
  const isAnswer = (m: (typeof rig.session.published)[number]) =>
    m.topic === "spBv1.0/g/NDATA/n" &&
    (m.payload.metrics ?? []).some((x) =>
      x.alias === resultAlias && String(x.string_value).startsWith(`${NEW}/Functions/pulse:`)
    );
  const birth = `spBv1.0/g/DBIRTH/n/${NEW}`;
  // Writes complete one by one until both went out.
  for (let i = 0; i < 4; i++) {
    rig.session.completeOne();
    await flushMicrotasks();
  }
  const after = rig.session.published.slice(from);
  const order = after.filter((m) => m.topic === birth || isAnswer(m)).map((m) =>
    m.topic === birth ? "DBIRTH" : "answer"
  );
  assert.deepEqual(
    order,
    ["DBIRTH", "answer"],
    "a host reads the refusal after the birth it names",
  );
  assert.deepEqual(rig.calls, []);
  await rig.stop();
});
