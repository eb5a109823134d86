/**
 * The hook calls into FAULT made again for a provider while FAULT stands (ModeManager
 * #providerBack), as their turn finds them (docs/safety.md, "A provider that comes back while in
 * FAULT"): a run waiting behind the FAULT entry's own hook calls says every cause that joined it
 * (every device whose return joined it, or the provider's own return in place of those; a reload
 * beside either), its successor's only once a restarted provider's successor joins it; and one
 * whose provider a reload took out (removed, or restarted: another host under its id) before its
 * turn makes no call, as the e-stop's securing run of it makes none (tests/safety/estop_reload_
 * ladder_waiting_run_test.ts). In-process: a router that holds each call until the test answers it.
 */
import assert from "node:assert/strict";
import type { ProviderSummary } from "../../src/state/mod.ts";
import type { ModeManagerOptions } from "../../src/control/mod.ts";
import { MAX_NAMED_IN_WARNING } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { macrotask } from "../helpers/turns.ts";
import { call, hook } from "../safety/_fixture.ts";
import {
  deviceReturns,
  type HeldCall,
  heldCalls,
  holdingRouter,
  hookModes,
  returnsInventory,
  upProvider,
} from "./_mode_hook_rig.ts";

/**
 * Modes over plant, listed as `listed()` answers, with one hook into FAULT (set_heater off) and a
 * router that holds each call until the test answers it.
 */
function plantModes(
  listed: () => ProviderSummary | undefined,
  devices?: ModeManagerOptions["devices"],
) {
  const { held, router } = holdingRouter();
  const { inventory, comesBack } = returnsInventory(
    (id) => (id === "plant" ? listed() : upProvider(id)) as ProviderSummary,
  );
  const { log, lines } = capturingLogger();
  const modes = hookModes(
    router,
    inventory,
    [hook("*", "FAULT", [call("plant/plant0", "set_heater", { enabled: false })], false)],
    { log, devices },
  );
  return { modes, held, lines, comesBack };
}

type PlantModes = ReturnType<typeof plantModes>;

/**
 * Modes in FAULT over plant (hook into FAULT: set_heater off), the FAULT entry's own call held:
 * `deviceReturn(id)` tells a device of plant answering again, `comeBack()` plant itself up again,
 * `ladderReloaded()` a reload changing plant's e-stop ladder calls (`host`, the one listed first),
 * `takeOut()` a reload removing plant, `replaceHost()` one restarting it (another host under its
 * id, not up yet); `endEntry()` answers the entry's call and waits for FAULT's answer;
 * `madeAgainOnce()` then answers the one run of hook calls made again: its one line.
 */
async function faultWithHeldEntry() {
  const host = upProvider("plant");
  let listed: ProviderSummary | undefined = host;
  const { devices, answersAgain } = deviceReturns();
  const { modes, held, lines, comesBack } = plantModes(() => listed, devices);
  const fault = modes.requestWithReport("FAULT");
  await heldCalls(held, 1);
  const endEntry = async () => {
    held[0]!.answer();
    assert.deepEqual((await fault).hook_failures, []);
  };
  return {
    modes,
    host,
    held,
    lines,
    endEntry,
    madeAgainOnce: async (): Promise<string> => {
      await endEntry();
      await heldCalls(held, 2);
      held[1]!.answer();
      const said = madeAgainLines(lines);
      assert.equal(said.length, 1, lines.join("\n"));
      return said[0]!;
    },
    deviceReturn: (deviceId: string) => answersAgain("plant", deviceId),
    comeBack: () => comesBack("plant"),
    ladderReloaded: () => modes.ladderReloaded(host),
    takeOut: () => (listed = undefined),
    replaceHost: () => (listed = { ...host, available: false } as ProviderSummary),
    /** The successor under plant's id is listed up, its own return not told (yet). */
    successorListedUp: () => (listed = { ...listed!, available: true } as ProviderSummary),
    /** The successor under plant's id comes up (as it tells its availability). */
    successorUp: () => {
      listed = { ...listed!, available: true } as ProviderSummary;
      comesBack("plant");
    },
  };
}

/** The lines saying plant's hook calls into FAULT are made again. */
function madeAgainLines(lines: readonly string[]): string[] {
  return lines.filter((l) => /FAULT: provider plant .*making its 1 hook call/.test(l));
}

/**
 * Answers every held call and asks FAULT -> MANUAL until it is accepted (re-arming waits for a
 * run of hook calls made again), at most 200 tries a macrotask apart: whether it was.
 */
async function leaveFaultAnswering(
  modes: ReturnType<typeof hookModes>,
  held: readonly HeldCall[],
): Promise<boolean> {
  let left = false;
  for (let i = 0; i < 200 && !left; i++) {
    for (const h of held) h.answer();
    left = await modes.requestWithReport("MANUAL").then(() => true, () => false);
    if (!left) await macrotask();
  }
  return left;
}

/** The calls held after the FAULT entry's own: those made again, as provider/function. */
function madeAgainCalls(held: readonly HeldCall[]): string[] {
  return held.slice(1).map((h) => `${h.req.providerId}/${h.req.functionName}`);
}

/**
 * The hook calls made again are plant's successor's set_heater off, once (`why`), said at WARN
 * as plant's return.
 */
function assertSuccessorsMadeAgain(
  held: readonly HeldCall[],
  lines: readonly string[],
  why: string,
): void {
  assert.deepEqual(madeAgainCalls(held), ["plant/set_heater"], why);
  assert.match(madeAgainLines(lines).join("\n"), /^WARN .*provider plant is AVAILABLE again;/);
}

/**
 * Modes over plant in FAULT, committed, its hooks not begun (an e-stop's ladder still runs):
 * `meanwhile(old)` is what plant's old host does then (`setup` first, before FAULT). A reload
 * restarts plant (its successor not up yet), the stop's hooks begin, the successor comes up while
 * they run (its run waits for them); the FAULT entry's call is answered and the hooks end.
 */
async function successorUpDuringStopHooks(
  meanwhile: (rig: PlantModes, old: ProviderSummary) => void,
  setup: (rig: PlantModes) => void = () => {},
): Promise<PlantModes> {
  const old = upProvider("plant");
  let listed: ProviderSummary = old;
  const rig = plantModes(() => listed);
  const { modes, held, comesBack } = rig;
  setup(rig);
  const entry = modes.enterFault("test stop");
  meanwhile(rig, old);
  listed = { ...old, available: false } as ProviderSummary;
  const hooks = entry.runHooks();
  await heldCalls(held, 1);
  listed = { ...listed, available: true } as ProviderSummary;
  comesBack("plant");
  held[0]!.answer();
  assert.deepEqual(await hooks, []);
  return rig;
}

/**
 * The e-stop's securing runs of plant: the one a reload of the old host's ladder began (not begun
 * before it) made set_heater off on that host; none for its successor (the latch is released).
 */
const securedOnOldHostOnly: Parameters<ReturnType<typeof hookModes>["setLatchSecuring"]>[0] = (
  _host,
  o,
) =>
  o?.notBegun === true
    ? Promise.resolve([call("plant/plant0", "set_heater", { enabled: false })])
    : null;

Deno.test("ModeManager in FAULT: device returns joining a waiting run of the hook calls made again are each named in its line", async () => {
  const { deviceReturn, madeAgainOnce } = await faultWithHeldEntry();
  deviceReturn("plant0");
  deviceReturn("plant1");
  deviceReturn("plant0");
  const said = await madeAgainOnce();
  assert.match(said, /provider plant has devices plant0, plant1 answering again;/);
});

Deno.test("ModeManager in FAULT: a run of the hook calls made again joined by many devices names MAX_NAMED_IN_WARNING of them and counts the rest", async () => {
  const { deviceReturn, madeAgainOnce } = await faultWithHeldEntry();
  const devices = Array.from({ length: MAX_NAMED_IN_WARNING + 2 }, (_, i) => `plant${i}`);
  for (const d of devices) deviceReturn(d);
  const said = await madeAgainOnce();
  const named = devices.slice(0, MAX_NAMED_IN_WARNING).join(", ");
  assert.ok(said.includes(`has devices ${named} and 2 more answering again;`), said);
});

Deno.test("ModeManager in FAULT: the provider's own return joining a waiting device-return run says its return at WARN, opening no device-return spell", async () => {
  const { deviceReturn, comeBack, madeAgainOnce } = await faultWithHeldEntry();
  deviceReturn("plant0");
  comeBack();
  const said = await madeAgainOnce();
  assert.match(said, /^WARN .*provider plant is AVAILABLE again; making its 1 hook call/);
  assert.doesNotMatch(said, /logged at DEBUG/, "no device-return spell opened");
});

Deno.test("ModeManager in FAULT: a reload of its ladder calls joining a waiting device-return run says both at WARN, opening no device-return spell", async () => {
  const { deviceReturn, ladderReloaded, madeAgainOnce } = await faultWithHeldEntry();
  deviceReturn("plant0");
  ladderReloaded();
  const said = await madeAgainOnce();
  assert.match(said, /^WARN .*provider plant has device plant0 answering again and had its e-stop/);
  assert.doesNotMatch(said, /logged at DEBUG/, "no device-return spell opened");
});

/** What each cause the rig tells is, in a test's name. */
const WHAT = {
  comeBack: "the provider's return",
  ladderReloaded: "a reload of its ladder calls",
  deviceReturn: "a device's return",
} as const;

for (
  const [first, joins, says] of [
    [
      "comeBack",
      "ladderReloaded",
      "is AVAILABLE again and had its e-stop ladder calls changed by a reload",
    ],
    [
      "ladderReloaded",
      "comeBack",
      "had its e-stop ladder calls changed by a reload and is AVAILABLE again",
    ],
    [
      "deviceReturn",
      "ladderReloaded",
      "has device plant0 answering again and had its e-stop ladder calls changed by a reload",
    ],
  ] as const
) {
  Deno.test(`ModeManager in FAULT: a waiting run of the hook calls made again begun by ${WHAT[first]} and joined by ${WHAT[joins]} names both at WARN`, async () => {
    const rig = await faultWithHeldEntry();
    for (const tell of [first, joins]) {
      tell === "deviceReturn" ? rig.deviceReturn("plant0") : rig[tell]();
    }
    const said = await rig.madeAgainOnce();
    assert.ok(said.startsWith("WARN "), said);
    assert.ok(said.includes(`FAULT: provider plant ${says}; making its 1 hook call`), said);
  });
}

Deno.test("ModeManager in FAULT: a waiting run of the hook calls made again that a restarted provider's successor joins says the successor's return, not the old host's reason", async () => {
  const rig = await faultWithHeldEntry();
  rig.ladderReloaded();
  rig.replaceHost();
  rig.successorUp();
  const said = await rig.madeAgainOnce();
  assert.match(said, /^WARN .*FAULT: provider plant is AVAILABLE again; making its 1 hook call/);
});

Deno.test("ModeManager in FAULT: a restarted provider's successor whose device return joins the old host's waiting device-return run names only the successor's device", async () => {
  const rig = await faultWithHeldEntry();
  rig.deviceReturn("plant0");
  rig.replaceHost();
  // Its device return told before its own return (an order the ports do not forbid): the run is
  // the successor's now, and the old host's device return is no cause of it.
  rig.successorListedUp();
  rig.deviceReturn("plant1");
  const said = await rig.madeAgainOnce();
  assert.match(said, /FAULT: provider plant has device plant1 answering again; making its 1 hook/);
});

for (const [what, reload] of [["removes", "takeOut"], ["restarts", "replaceHost"]] as const) {
  Deno.test(`ModeManager in FAULT: a run of the hook calls made again whose provider a reload ${what} before its turn makes no call, with one INFO line`, async () => {
    const rig = await faultWithHeldEntry();
    const { modes, held, lines, deviceReturn, endEntry } = rig;
    deviceReturn("plant0");
    rig[reload]();
    await endEntry();
    // Re-arming waits for the run: accepted once it has ended (a call it made is answered).
    const left = await leaveFaultAnswering(modes, held);
    assert.ok(left, "FAULT -> MANUAL accepted once the run has ended");
    assert.deepEqual(
      madeAgainCalls(held),
      [],
      "no call made again to plant after the reload took it out",
    );
    assert.deepEqual(madeAgainLines(lines), [], lines.join("\n"));
    const dropped = lines.filter((l) => /provider plant .*reload took it out/.test(l));
    assert.equal(dropped.length, 1, lines.join("\n"));
    assert.match(dropped[0]!, /^INFO /);
  });
}

Deno.test("ModeManager in FAULT: a run of the hook calls made again whose provider a reload restarts, the successor back before its turn, makes them for the successor, once", async () => {
  const rig = await faultWithHeldEntry();
  const { modes, held, lines, deviceReturn, endEntry } = rig;
  deviceReturn("plant0");
  rig.replaceHost();
  rig.successorUp();
  await endEntry();
  const left = await leaveFaultAnswering(modes, held);
  assert.ok(left, "FAULT -> MANUAL accepted once the run has ended");
  assertSuccessorsMadeAgain(
    held,
    lines,
    "the successor's return gets the hook calls made again, once",
  );
});

Deno.test("ModeManager in FAULT: a return of the restarted provider's old host waiting for the stop's hooks to begin leaves the successor's return its hook calls made again", async () => {
  // FAULT committed, its hooks not begun (an e-stop's ladder still runs): the old host comes
  // back and waits for them.
  const { modes, held, lines } = await successorUpDuringStopHooks(({ comesBack }) =>
    comesBack("plant")
  );
  const left = await leaveFaultAnswering(modes, held);
  assert.ok(left, "FAULT -> MANUAL accepted once the run has ended");
  assert.deepEqual(
    madeAgainCalls(held),
    ["plant/set_heater"],
    "the successor's return gets the hook calls made again, once",
  );
  assert.deepEqual(
    lines.filter((l) => /reload took it out/.test(l)),
    [],
    "the successor, listed at the turn, is not taken for a host the reload took out",
  );
});

Deno.test("ModeManager in FAULT: a reason of the restarted provider's old host waiting for the stop's hooks to begin adds nothing to its successor's line", async () => {
  // FAULT committed, its hooks not begun: a reload changes the old host's ladder calls.
  const { modes, held, lines } = await successorUpDuringStopHooks(({ modes }, old) =>
    modes.ladderReloaded(old)
  );
  assert.ok(await leaveFaultAnswering(modes, held), "FAULT -> MANUAL accepted once the run ended");
  assert.deepEqual(madeAgainCalls(held), ["plant/set_heater"]);
  const said = madeAgainLines(lines);
  assert.equal(said.length, 1, lines.join("\n"));
  assert.match(
    said[0]!,
    /^WARN .*FAULT: provider plant is AVAILABLE again; making its 1 hook call/,
  );
});

Deno.test("ModeManager in FAULT: a restarted provider's successor joining the old host's waiting run gets its hook calls made again, not left out for the old host's ladder calls", async () => {
  const rig = await faultWithHeldEntry();
  const { modes, held, lines, endEntry } = rig;
  // The e-stop's securing runs of plant: the one a reload of the old host's ladder began made
  // set_heater off on that host; the latch is released before the successor's turn (none for it).
  modes.setLatchSecuring(securedOnOldHostOnly);
  rig.ladderReloaded();
  // A reload restarts plant; its successor, a new process, comes up before the run's turn.
  rig.replaceHost();
  rig.successorUp();
  await endEntry();
  assert.ok(await leaveFaultAnswering(modes, held), "FAULT -> MANUAL accepted once the run ended");
  assertSuccessorsMadeAgain(
    held,
    lines,
    "the successor gets set_heater off: the old host's ladder call never reached it",
  );
});

Deno.test("ModeManager in FAULT: a reason of the restarted provider's old host waiting for the stop's hooks to begin leaves none of its successor's hook calls out for the old host's ladder calls", async () => {
  // The securing run a reload of the old host's ladder began made set_heater off on that host; the
  // latch is released before the successor's turn (none for it). FAULT committed, its hooks not
  // begun: a reload changes the old host's ladder calls.
  const { modes, held, lines } = await successorUpDuringStopHooks(
    ({ modes }, old) => modes.ladderReloaded(old),
    ({ modes }) => modes.setLatchSecuring(securedOnOldHostOnly),
  );
  assert.ok(await leaveFaultAnswering(modes, held), "FAULT -> MANUAL accepted once the run ended");
  assertSuccessorsMadeAgain(
    held,
    lines,
    "the successor gets set_heater off: the old host's ladder call never reached it",
  );
});

/**
 * Modes over plant, listed as `listed()` answers, in FAULT with a reload's hooks: committed with
 * set_cooler, a reload putting set_heater off in its place before the stop's hooks run (so a
 * return of plant gets set_cooler, the stop's dropped call, then set_heater; another reason only
 * set_heater). `beforeHooks` runs before the stop's hooks begin. Resolves once the stop's hooks'
 * run holds its first call (set_cooler).
 */
async function faultWithDroppedCall(
  listed: () => ProviderSummary,
  beforeHooks: (comesBack: (id: string) => void) => void = () => {},
) {
  const { held, router } = holdingRouter();
  const { inventory, comesBack } = returnsInventory(
    (id) => (id === "plant" ? listed() : upProvider(id)) as ProviderSummary,
  );
  const { log, lines } = capturingLogger();
  const modes = hookModes(router, inventory, [
    hook("*", "FAULT", [call("plant/plant0", "set_cooler", { enabled: true })], false),
  ], { log });
  const entry = modes.enterFault("test stop");
  const heaterOff = call("plant/plant0", "set_heater", { enabled: false });
  modes.reconfigure({
    beforeTransition: [hook("*", "FAULT", [heaterOff], false)],
    afterTransition: [],
  }, "BLOCK");
  beforeHooks(comesBack);
  const hooks = entry.runHooks();
  await heldCalls(held, 1);
  /** Ends the stop's own run (set_cooler, set_heater) and leaves FAULT: the calls made again. */
  const madeAgain = async (): Promise<string[]> => {
    held[0]!.answer();
    await heldCalls(held, 2);
    held[1]!.answer();
    assert.deepEqual(await hooks, []);
    assert.ok(await leaveFaultAnswering(modes, held), "FAULT -> MANUAL accepted once it ended");
    return held.slice(2).map((h) => `${h.req.providerId}/${h.req.functionName}`);
  };
  return { modes, lines, comesBack, madeAgain };
}

Deno.test("ModeManager in FAULT: a restarted provider's successor taking over the old host's waiting return is made the hooks in force, not the stop's dropped call the old host's return asked for", async () => {
  const old = upProvider("plant");
  let listed: ProviderSummary = old;
  const rig = await faultWithDroppedCall(() => listed);
  // The old host comes back while the stop's hooks run: its run waits (it would get set_cooler,
  // the stop's dropped call, then set_heater).
  rig.comesBack("plant");
  // A reload restarts plant and changes its ladder calls: the successor's reason is no return.
  listed = { ...old } as ProviderSummary;
  rig.modes.ladderReloaded(listed);
  // Before: ["plant/set_cooler", "plant/set_heater"] (the old host's return kept for it).
  assert.deepEqual(await rig.madeAgain(), ["plant/set_heater"], rig.lines.join("\n"));
});

Deno.test("ModeManager in FAULT: a return of the restarted provider's old host waiting for the stop's hooks to begin does not make its successor's run a return", async () => {
  const old = upProvider("plant");
  let listed: ProviderSummary = old;
  // FAULT committed, its hooks not begun: the old host comes back and waits for them; a reload
  // restarts plant before they begin.
  const rig = await faultWithDroppedCall(() => listed, (comesBack) => {
    comesBack("plant");
    listed = { ...old } as ProviderSummary;
  });
  // While they run, the same reload changes the successor's ladder calls: its run is no return.
  rig.modes.ladderReloaded(listed);
  // Before: ["plant/set_cooler", "plant/set_heater"] (the old host's return joined it as one).
  assert.deepEqual(await rig.madeAgain(), ["plant/set_heater"], rig.lines.join("\n"));
});
