/**
 * A device id is the provider's text (a hook call's, configured) and has no length bound: the
 * FAULT lines that name one -- a failed hook call into FAULT, the hook calls into FAULT made again
 * for a device answering again -- cut it to QUOTED_DEVICE_ID_CHARS (marked with an ellipsis), as
 * every line naming a device cuts it, so a 10 kB id makes no 10 kB line. A provider id (configured,
 * of no length bound either) is cut to QUOTED_PROVIDER_ID_CHARS in those lines, in the lines of
 * the calls made again for its return and in a veto's reason. A reload's dropped hook calls are
 * named up to MAX_NAMED_IN_WARNING. The answer's `hook_failures` keeps the handle whole.
 * In-process: real modes over a router that refuses every call at once, an inventory whose
 * provider is up, and device and provider returns the test announces.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import {
  failedPrecondition,
  MAX_NAMED_IN_WARNING,
  QUOTED_DEVICE_ID_CHARS,
  QUOTED_PROVIDER_ID_CHARS,
  RuntimeError,
} from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { untilTurns } from "../helpers/turns.ts";
import { call, hook } from "../safety/_fixture.ts";
import { deviceReturns, hookModes, returnsInventory } from "./_mode_hook_rig.ts";

/** A device id of 10 kB. */
const LONG_DEVICE = `d${"y".repeat(10_000)}`;
/** The device id as the lines name it: cut, with an ellipsis. */
const CUT_DEVICE = `${LONG_DEVICE.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026`;
/** A provider id of 10 kB (configured). */
const LONG_PROVIDER = `p${"x".repeat(10_000)}`;
/** The provider id as the lines name it: cut, with an ellipsis. */
const CUT_PROVIDER = `${LONG_PROVIDER.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`;
/** Longest line the test lets through: the cut ids and the line's words, far below one id. */
const MAX_LINE_CHARS = 1_000;

/** A router that refuses every call at once with `message` (FAILED_PRECONDITION). */
function refusingRouter(message = "refused (test)"): { calls: CallRequest[]; router: CallRouter } {
  const calls: CallRequest[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      calls.push(req);
      return Promise.reject(failedPrecondition(message));
    },
  } as unknown as CallRouter;
  return { calls, router };
}

/** The lines longer than MAX_LINE_CHARS, each shown by its start and length. */
function longLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.length > MAX_LINE_CHARS).map((l) =>
    `${l.slice(0, 120)}... (${l.length} chars)`
  );
}

Deno.test("ModeManager's FAULT lines cut a 10 kB device id: a failed hook call into FAULT and the calls made again for its return", async () => {
  const { calls, router } = refusingRouter();
  const { inventory } = returnsInventory();
  const { devices, answersAgain } = deviceReturns();
  const { log, lines } = capturingLogger({ now: () => 0 });
  const modes = hookModes(
    router,
    inventory,
    [hook("*", "FAULT", [call(`plant/${LONG_DEVICE}`, "set_heater", { enabled: false })], false)],
    { log, devices },
  );

  const report = await modes.requestWithReport("FAULT");
  assert.equal(report.hook_failures.length, 1, "its one call failed");
  assert.equal(
    report.hook_failures[0]!.device_handle,
    `plant/${LONG_DEVICE}`,
    "the answer keeps the handle whole",
  );

  // Its device answers again while FAULT stands: the hook call into FAULT is made again.
  answersAgain("plant", LONG_DEVICE);
  await untilTurns(() => calls.length === 2, "the hook call made again");
  // Its line said once its failure is in (the calls made again are awaited in turn).
  await untilTurns(
    () => lines.filter((l) => l.includes(" set_heater failed: ")).length === 2,
    `the failure of the call made again:\n${lines.map((l) => l.slice(0, 200)).join("\n")}`,
  );

  assert.deepEqual(longLines(lines), [], "every line is bounded");
  const failed = lines.filter((l) =>
    l.includes(`_transition hook `) && l.includes(` call plant/${CUT_DEVICE} set_heater failed: `)
  );
  assert.equal(failed.length, 2, `each failed call's line names the cut id:\n${lines.join("\n")}`);
  assert.ok(failed.every((l) => l.startsWith("ERROR")), failed.join("\n"));
  assert.equal(
    lines.filter((l) =>
      l.includes(
        `FAULT: provider plant has device ${CUT_DEVICE} answering again; making its 1 hook`,
      )
    ).length,
    1,
    `the line of the calls made again names the cut id:\n${lines.join("\n")}`,
  );
  assert.equal((await modes.requestWithReport("MANUAL")).mode, "MANUAL");
});

Deno.test("ModeManager's FAULT lines cut a 10 kB provider id: a failed hook call into FAULT, the calls made again for its return and its device's, the spell's count", async () => {
  const { calls, router } = refusingRouter();
  const { inventory, comesBack } = returnsInventory();
  const { devices, answersAgain } = deviceReturns();
  const { log, lines } = capturingLogger({ now: () => 0 });
  const modes = hookModes(
    router,
    inventory,
    [hook("*", "FAULT", [call(`${LONG_PROVIDER}/d0`, "set_heater", { enabled: false })], false)],
    { log, devices },
  );

  const report = await modes.requestWithReport("FAULT");
  assert.equal(report.hook_failures[0]!.device_handle, `${LONG_PROVIDER}/d0`, "kept whole");
  // Its provider comes back, then its device answers again: the call is made again each time.
  comesBack(LONG_PROVIDER);
  await untilTurns(() => calls.length === 2, "the hook call made again for the provider");
  answersAgain(LONG_PROVIDER, "d0");
  await untilTurns(() => calls.length === 3, "the hook call made again for its device");
  await untilTurns(
    () => lines.filter((l) => l.includes(" set_heater failed: ")).length === 3,
    `the failure of each call:\n${lines.map((l) => l.slice(0, 200)).join("\n")}`,
  );
  // Leaving FAULT ends the device-return spell: its count names the provider.
  assert.equal((await modes.requestWithReport("MANUAL")).mode, "MANUAL");

  assert.deepEqual(longLines(lines), [], "every line is bounded");
  const shown = lines.map((l) => l.slice(0, 300)).join("\n");
  assert.equal(
    lines.filter((l) => l.includes(` call ${CUT_PROVIDER}/d0 set_heater failed: `)).length,
    3,
    `each failed call's line names the cut provider id:\n${shown}`,
  );
  for (
    const said of [
      `FAULT: provider ${CUT_PROVIDER} is AVAILABLE again; making its 1 hook call(s)`,
      `FAULT: provider ${CUT_PROVIDER} has device d0 answering again; making its 1 hook`,
      `or provider ${CUT_PROVIDER} itself comes back`,
      `FAULT: provider ${CUT_PROVIDER}: hook calls into FAULT made again 1 time(s)`,
    ]
  ) {
    assert.equal(lines.filter((l) => l.includes(said)).length, 1, `${said}:\n${shown}`);
  }
});

Deno.test("ModeManager's veto cuts the failed hook call's provider id, device id and error", async () => {
  const message = `bus down ${"M".repeat(20_000)}`;
  const { router } = refusingRouter(message);
  const { inventory } = returnsInventory();
  const modes = hookModes(router, inventory, [
    hook("IDLE", "MANUAL", [call(`${LONG_PROVIDER}/${LONG_DEVICE}`, "set_heater")], true),
  ]);
  const err = await modes.request("MANUAL").then(
    () => assert.fail("the hook vetoes"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RuntimeError);
  assert.equal(err.code, "FAILED_PRECONDITION");
  assert.ok(err.message.length <= MAX_LINE_CHARS, `${err.message.length} chars`);
  assert.match(
    err.message,
    new RegExp(
      `^Mode transition IDLE -> MANUAL vetoed: before_transition hook \\S+ call ` +
        `${CUT_PROVIDER}/${CUT_DEVICE} set_heater failed: FAILED_PRECONDITION: bus down M+\u2026$`,
    ),
    err.message.slice(0, 600),
  );
  assert.equal(modes.current(), "IDLE");
});

Deno.test("ModeManager's line of the hook calls into FAULT a reload dropped names the first MAX_NAMED_IN_WARNING and counts the rest", async () => {
  const { calls, router } = refusingRouter();
  const { inventory } = returnsInventory();
  const { log, lines } = capturingLogger({ now: () => 0 });
  const total = MAX_NAMED_IN_WARNING + 5;
  const dropped = Array.from({ length: total }, (_, i) => call(`plant/d${i}`, "set_heater"));
  const modes = hookModes(router, inventory, [hook("*", "FAULT", dropped, false)], { log });
  // FAULT committed with them all; a reload before the hooks run drops every one.
  const entry = modes.enterFault("test");
  modes.reconfigure({ beforeTransition: [], afterTransition: [] }, "BLOCK");
  await entry.runHooks();
  assert.equal(calls.length, total, "every dropped call is still made");
  const said = lines.filter((l) => l.includes("dropped or changed"));
  assert.equal(said.length, 1, lines.join("\n"));
  const named = Array.from(
    { length: MAX_NAMED_IN_WARNING },
    (_, i) => `plant/d${i} set_heater`,
  ).join(", ");
  assert.ok(
    said[0]!.includes(
      `dropped or changed ${total} before_transition hook call(s) into FAULT; this stop makes ` +
        `them (${named} and 5 more), then those in force`,
    ),
    said[0],
  );
});
