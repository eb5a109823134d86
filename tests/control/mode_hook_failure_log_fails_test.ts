/**
 * The e-stop must work whatever else is failing: a logger that throws (a closed stderr) when
 * ModeManager writes the ERROR line of a failed hook call into FAULT, or the WARN line naming the
 * calls a reload dropped, loses that line -- never the failure in the e-stop's answer, its
 * `hook_failure` event, nor a stop action. In-process: the real Estop and ModeManager over a
 * router whose hook call fails; the modes' logger throws on every WARN and ERROR line.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { ModeManager } from "../../src/control/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { LineLogger, systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader, InventoryReader, ProviderSummary } from "../../src/state/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { call, hook } from "../safety/_fixture.ts";
import { heaterOffLadder, providersUp } from "../safety/_clock_rig.ts";

const COOLER_ON = call("plant/plant0", "set_cooler", { enabled: true });
const FAN_ON = call("plant/plant0", "set_fan", { enabled: true });

/** An e-stop over real modes whose set_cooler call fails and whose logger throws on WARN/ERROR. */
function rig() {
  const made: string[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      made.push(`${req.providerId} ${req.functionName}`);
      if (req.functionName !== "set_cooler") return Promise.resolve({});
      return Promise.reject(new RuntimeError("INTERNAL", "cooler broken"));
    },
  } as unknown as CallRouter;
  const inventory = providersUp("plant");
  const thrown: string[] = [];
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (line, level) => {
      if (level === "warn" || level === "error") {
        thrown.push(line);
        throw new Error("stderr is closed");
      }
    },
  });
  const bus = new EventBus();
  const hookEvents: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => {
    if (event.kind === "hook_failure") hookEvents.push(event);
  });
  const hooks = (calls: ReturnType<typeof call>[]) => ({
    beforeTransition: [],
    afterTransition: [hook("*", "FAULT", calls, false)],
  });
  const modes = new ModeManager({
    router,
    inventory,
    bus,
    clock: systemClock,
    log,
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: hooks([COOLER_ON, FAN_ON]),
  });
  const estop = new Estop({
    router,
    inventory,
    reads: {} as FreshReader,
    clock: systemClock,
    log,
    bus,
    modes,
    safeState: heaterOffLadder(),
  });
  return { estop, modes, made, hookEvents, thrown, hooks };
}

Deno.test("ModeManager reports a failed hook call into FAULT in the e-stop's answer and as hook_failure when its logger throws on the ERROR line", async () => {
  const r = rig();
  const result = await r.estop.trigger("logger broken");
  assert.ok(r.thrown.some((l) => l.includes("cooler broken")), "the ERROR line threw");
  assert.deepEqual(r.made, ["plant set_heater", "plant set_cooler", "plant set_fan"]);
  assert.deepEqual(
    result.hook_failures.map((f) => `${f.device_handle} ${f.function} ${f.error}`),
    ["plant/plant0 set_cooler INTERNAL: cooler broken"],
    "the failed stop action is in the answer, not only in a line that was lost",
  );
  assert.equal(r.hookEvents.length, 1, "and published as hook_failure");
});

Deno.test("ModeManager makes the hook calls into FAULT a reload dropped, and those in force, when its logger throws on the WARN line naming them", async () => {
  const r = rig();
  // FAULT committed with cooler and fan; a reload before the hooks run drops the fan.
  const entry = r.modes.enterFault("test");
  r.modes.reconfigure(r.hooks([COOLER_ON]), "BLOCK");
  const failures = await entry.runHooks();
  assert.ok(r.thrown.some((l) => l.includes("dropped or changed")), "the WARN line threw");
  assert.deepEqual(r.made, ["plant set_fan", "plant set_cooler"], "dropped first, then in force");
  assert.deepEqual(failures.map((f) => f.function), ["set_cooler"]);
});

Deno.test("ModeManager makes the hook calls into FAULT again for a provider back while FAULT stands when its logger throws on the WARN line saying so", async () => {
  const made: string[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (
      req: CallRequest,
    ) => (made.push(`${req.providerId} ${req.functionName}`), Promise.resolve({})),
  } as unknown as CallRouter;
  const availability: ((p: ProviderSummary, up: boolean) => void)[] = [];
  const host = { id: "plant", available: true, config: { timeoutMs: 1000 } } as ProviderSummary;
  const inventory = {
    onAvailability: (l: (p: ProviderSummary, up: boolean) => void) => {
      availability.push(l);
      return () => {};
    },
    provider: () => host,
    providers: () => [host],
    devices: () => [],
  } as unknown as InventoryReader;
  const thrown: string[] = [];
  const modes = new ModeManager({
    router,
    inventory,
    bus: new EventBus(),
    clock: systemClock,
    log: new LineLogger({
      level: "debug",
      journald: false,
      now: () => 0,
      write: (line, level) => {
        if (level === "warn" || level === "error") {
          thrown.push(line);
          throw new Error("stderr is closed");
        }
      },
    }),
    automationEnabled: true,
    manualGatingPolicy: "BLOCK",
    hooks: { beforeTransition: [hook("*", "FAULT", [COOLER_ON], false)], afterTransition: [] },
  });
  await modes.forceFault("test");
  assert.deepEqual(made, ["plant set_cooler"]);
  for (const l of availability) l(host, true); // it restarted: its own start-up values
  await waitFor("the hook call made again", () => made.length === 2, 2000);
  assert.ok(thrown.some((l) => l.includes("is AVAILABLE again")), "the WARN line threw");
  assert.deepEqual(made, ["plant set_cooler", "plant set_cooler"]);
});
