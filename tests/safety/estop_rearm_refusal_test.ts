/**
 * Re-arming refused while the latch is released but stop actions still run (docs/safety.md,
 * "Arming waits for the stop"): the refusal says what it waits for, in each case it is given in --
 * a stop not answered yet (its ladder, its hooks into FAULT, its read-back: a press by POST
 * /v0/estop is answered then), a securing run's safe-state call still on the wire (no press waits
 * for it: the release ends the run once that call has answered), or both; the securing runs'
 * providers named up to 5, the rest counted ("and N more"). In-process: the real Estop over a
 * router that holds each call until the test answers it, providers whose return the test
 * announces, and the arm check the Estop hands its modes port.
 */
import assert from "node:assert/strict";
import type { ArmCheck, CallRequest, CallRouter } from "../../src/control/mod.ts";
import { MAX_NAMED_IN_WARNING } from "../../src/safety/mod.ts";
import type { InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { untilTurns } from "../helpers/turns.ts";
import {
  containedEstop,
  faultRecordingModes,
  heaterOffLadder,
  heaterOffReader,
  providerComingBack,
} from "./_clock_rig.ts";
import { call } from "./_fixture.ts";

/** The refusal while a stop has not answered yet. */
const STOP_WAIT = "its stop has ended (its safe-state calls, the hooks into FAULT and its " +
  "read-back; a press by POST /v0/estop is answered then)";
/** The refusal while plant's securing run has a call on the wire. */
const SECURING_WAIT = "the securing run of provider(s) plant (back while latched) has ended: " +
  "the release ends it once its safe-state call on the wire has answered";

function rig() {
  const held: { req: CallRequest; answer(): void }[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: CallRequest) =>
      new Promise<unknown>((resolve) => held.push({ req, answer: () => resolve({}) })),
  } as unknown as CallRouter;
  const { inventory, host, comeBack } = providerComingBack("plant");
  const { modes } = faultRecordingModes();
  let armCheck: ArmCheck | null = null;
  modes.addArmCheck = (check) => void (armCheck = check);
  const estop = containedEstop({
    router,
    inventory,
    reads: heaterOffReader().reads,
    modes,
  });
  const answerAll = () => held.splice(0).forEach((h) => h.answer());
  return {
    estop,
    host,
    comeBack,
    held: () => held.length,
    answerAll,
    arming: () => armCheck!("FAULT", "MANUAL"),
  };
}

/** Latched, its stop answered; plant comes back and its securing run's call is on the wire. */
async function securingOnTheWire(r: ReturnType<typeof rig>): Promise<void> {
  const stop = r.estop.trigger("test");
  await untilTurns(() => r.held() === 1, "the stop's ladder call");
  r.answerAll();
  await stop;
  r.comeBack();
  await untilTurns(() => r.held() === 1, "the securing run's call");
}

Deno.test("Estop re-arm refusal after a release while the stop runs names the stop and its answer", async () => {
  const r = rig();
  const stop = r.estop.trigger("test");
  await untilTurns(() => r.held() === 1, "the stop's ladder call");
  r.estop.clear();
  assert.equal(
    r.arming(),
    `E-stop still running: FAULT -> MANUAL refused until ${STOP_WAIT}; retry then`,
  );
  r.answerAll();
  await stop;
  assert.equal(r.arming(), null, "let through once the stop has answered");
});

Deno.test("Estop re-arm refusal after a release while only a securing call is on the wire names that run, no press's answer", async () => {
  const r = rig();
  await securingOnTheWire(r);
  r.estop.clear();
  const refusal = r.arming();
  assert.equal(
    refusal,
    `E-stop still running: FAULT -> MANUAL refused until ${SECURING_WAIT}; retry then`,
  );
  assert.ok(!String(refusal).includes("POST /v0/estop"), "the press was answered already");
  r.answerAll();
  await r.estop.securing(r.host);
  assert.equal(r.arming(), null, "let through once the call on the wire has answered");
});

Deno.test("Estop re-arm refusal after a release while a stop waits behind a securing call names both", async () => {
  const r = rig();
  await securingOnTheWire(r);
  r.estop.clear();
  // Pressed again and released again: the new stop's ladder call waits behind the one on the wire.
  const second = r.estop.trigger("again");
  r.estop.clear();
  assert.equal(
    r.arming(),
    `E-stop still running: FAULT -> MANUAL refused until ${STOP_WAIT}, and ${SECURING_WAIT}; ` +
      "retry then",
  );
  await untilTurns(() => {
    r.answerAll();
    return r.arming() === null;
  }, "every stop action answered");
  await second;
});

/**
 * The providers the refusal names by id at most (estop.ts ARM_REFUSAL_NAMED_PROVIDERS), written
 * out: the test fails if the bound is removed or moved.
 */
const REFUSAL_NAMED = 5;

/** An inventory of providers `ids`, up, no devices, whose return the test announces at once. */
function providersComingBack(ids: readonly string[]) {
  const listeners: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const hosts = ids.map((id) =>
    ({
      id,
      available: true,
      devices: [],
      config: { timeoutMs: 1000 },
    }) as unknown as ProviderSummary
  );
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      listeners.push(l);
      return () => {};
    },
    onChange: () => () => {},
    provider: (id: string) => hosts.find((h) => h.id === id),
    providers: () => hosts,
    devices: () => [],
  } as unknown as InventoryReader;
  return {
    inventory,
    hosts,
    comeBack: () => hosts.forEach((h) => listeners.forEach((l) => l(h, true))),
  };
}

for (const count of [REFUSAL_NAMED, REFUSAL_NAMED + 1, MAX_NAMED_IN_WARNING + 5]) {
  Deno.test(`Estop re-arm refusal with ${count} providers' securing calls on the wire names ${REFUSAL_NAMED} at most and counts the rest`, async () => {
    const ids = Array.from({ length: count }, (_, i) => `p${String(i).padStart(2, "0")}`);
    const held: (() => void)[] = [];
    const router = {
      addGate() {},
      resolve: () => ({ device: {}, fn: { args: [] } }),
      drainFrom: () => () => Promise.resolve(true),
      call: (_req: CallRequest) => new Promise<unknown>((resolve) => held.push(() => resolve({}))),
    } as unknown as CallRouter;
    const answerAll = () => held.splice(0).forEach((answer) => answer());
    const { inventory, hosts, comeBack } = providersComingBack(ids);
    const { modes } = faultRecordingModes();
    let armCheck: ArmCheck | null = null;
    modes.addArmCheck = (check) => void (armCheck = check);
    const estop = containedEstop({
      router,
      inventory,
      reads: heaterOffReader().reads,
      modes,
      // One hook call per provider: each provider's securing run makes one call.
      safeState: {
        ...heaterOffLadder(),
        hooks: ids.map((id) => call(`${id}/plant0`, "set_heater", { enabled: false })),
      },
    });
    const stop = estop.trigger("test");
    await untilTurns(() => held.length === count, "the stop's ladder calls");
    answerAll();
    await stop;
    comeBack();
    await untilTurns(() => held.length === count, "every securing run's call");
    estop.clear();
    const named = count <= REFUSAL_NAMED
      ? ids.join(", ")
      : `${ids.slice(0, REFUSAL_NAMED).join(", ")} and ${count - REFUSAL_NAMED} more`;
    assert.equal(
      armCheck!("FAULT", "MANUAL"),
      `E-stop still running: FAULT -> MANUAL refused until the securing run of provider(s) ` +
        `${named} (back while latched) has ended: the release ends it once its safe-state ` +
        "call on the wire has answered; retry then",
    );
    answerAll();
    await Promise.all(hosts.map((h) => estop.securing(h)));
    assert.equal(armCheck!("FAULT", "MANUAL"), null, "let through once every call has answered");
  });
}
