/**
 * The e-stop must work whatever else is failing, its logger included (a closed stdout): the stop
 * path runs in promise reactions, where a log line that throws used to skip the rest of the step
 * -- the ladder's calls, the calls after a failed one, the securing of a provider back while
 * latched (an unhandled rejection there ends the runtime, main.ts). A line the logger fails to
 * write is lost; every call is made and the trigger answers. In-process: the real Estop over a
 * router that answers every call at once (or fails the chosen functions), a modes port that
 * records FAULT, and a logger whose lines of the chosen levels throw while the test says so.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { failedPrecondition } from "../../src/common/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { type SafeStateConfig } from "../../src/safety/mod.ts";
import type { InventoryReader } from "../../src/state/mod.ts";
import { call } from "./_fixture.ts";
import { containedEstop, providerComingBack, providersUp } from "./_clock_rig.ts";

/** A ladder of calls to plant, `fns` in order, with no read-back. */
function ladder(...fns: string[]): SafeStateConfig {
  return {
    setpoints: [],
    hooks: fns.map((fn) => call("plant/plant0", fn)),
    zeroIsSafe: false,
    expect: [],
    verifyTimeoutMs: 100,
  };
}

/** An e-stop whose logger throws on lines of `levels` while `broken.on` is set. */
function rig(o: {
  levels: string[];
  fns: string[];
  failing?: string[];
  inventory?: InventoryReader;
}) {
  const broken = { on: false };
  const made: string[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    drainFrom: () => () => Promise.resolve(true),
    call: (req: CallRequest) => {
      made.push(req.functionName ?? "");
      return o.failing?.includes(req.functionName ?? "")
        ? Promise.reject(failedPrecondition(`${req.functionName} failed`))
        : Promise.resolve({});
    },
  } as unknown as CallRouter;
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => 0,
    write: (line) => {
      if (broken.on && o.levels.some((l) => line.startsWith(l))) {
        throw new Error("log sink failed");
      }
    },
  });
  const estop = containedEstop({
    router,
    inventory: o.inventory ?? providersUp("plant"),
    log,
    safeState: ladder(...o.fns),
  });
  return { estop, broken, made };
}

Deno.test("Estop.trigger makes the ladder's calls and answers when its logger throws on every WARN and ERROR line", async () => {
  const r = rig({ levels: ["WARN", "ERROR"], fns: ["stop_a", "stop_b"] });
  r.broken.on = true;
  const result = await r.estop.trigger("logger broken");
  assert.deepEqual(r.made, ["stop_a", "stop_b"], "the ladder's calls were made");
  assert.deepEqual(result.actions.map((a) => a.success), [true, true]);
  assert.equal(result.fault_engaged, true);
});

Deno.test("Estop.trigger attempts every ladder call after a failed one when its logger throws on ERROR lines", async () => {
  const r = rig({ levels: ["ERROR"], fns: ["stop_a", "stop_b"], failing: ["stop_a"] });
  r.broken.on = true;
  const result = await r.estop.trigger("logger broken");
  assert.deepEqual(r.made, ["stop_a", "stop_b"], "the call after the failed one was attempted");
  assert.deepEqual(result.actions.map((a) => a.success), [false, true]);
  assert.match(result.actions[0]!.error ?? "", /^FAILED_PRECONDITION: stop_a failed/);
});

Deno.test("Estop secures a provider back while latched when its logger throws on WARN lines", async () => {
  const back = providerComingBack("plant");
  const r = rig({ levels: ["WARN"], fns: ["stop_a"], inventory: back.inventory });
  await r.estop.trigger("test");
  assert.deepEqual(r.made, ["stop_a"]);
  r.broken.on = true;
  back.comeBack();
  const securing = r.estop.securing(back.host);
  assert.ok(securing !== null, "a securing run began");
  const actions = await securing;
  assert.deepEqual(r.made, ["stop_a", "stop_a"], "the provider was secured again");
  assert.deepEqual(actions.map((a) => a.success), [true]);
});
