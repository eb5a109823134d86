/**
 * A device id is the provider's text (a hook call's, configured) and has no length bound: the
 * FAULT lines that name one -- a failed hook call into FAULT, the hook calls into FAULT made again
 * for a device answering again -- cut it to QUOTED_DEVICE_ID_CHARS (marked with an ellipsis), as
 * every line naming a device cuts it, so a 10 kB id makes no 10 kB line. The answer's
 * `hook_failures` keeps the handle whole. In-process: real modes over a router that refuses every
 * call at once, an inventory whose provider is up, and device returns the test announces.
 */
import assert from "node:assert/strict";
import type { CallRequest, CallRouter } from "../../src/control/mod.ts";
import { failedPrecondition, QUOTED_DEVICE_ID_CHARS } from "../../src/common/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { untilTurns } from "../helpers/turns.ts";
import { call, hook } from "../safety/_fixture.ts";
import { hookModes, returnsInventory } from "./_mode_hook_rig.ts";

/** A device id of 10 kB. */
const LONG_DEVICE = `d${"y".repeat(10_000)}`;
/** The device id as the lines name it: cut, with an ellipsis. */
const CUT_DEVICE = `${LONG_DEVICE.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026`;
/** Longest line the test lets through: the cut id and the line's words, far below one id. */
const MAX_LINE_CHARS = 1_000;

Deno.test("ModeManager's FAULT lines cut a 10 kB device id: a failed hook call into FAULT and the calls made again for its return", async () => {
  const calls: CallRequest[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    call: (req: CallRequest) => {
      calls.push(req);
      return Promise.reject(failedPrecondition("refused (test)"));
    },
  } as unknown as CallRouter;
  const { inventory } = returnsInventory();
  const returns: ((providerId: string, deviceId: string) => void)[] = [];
  const devices = {
    onDeviceReturn: (l: (providerId: string, deviceId: string) => void) => {
      returns.push(l);
      return () => {};
    },
  };
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
  for (const l of returns) l("plant", LONG_DEVICE);
  await untilTurns(() => calls.length === 2, "the hook call made again");
  // Its line said once its failure is in (the calls made again are awaited in turn).
  await untilTurns(
    () => lines.filter((l) => l.includes(" set_heater failed: ")).length === 2,
    `the failure of the call made again:\n${lines.map((l) => l.slice(0, 200)).join("\n")}`,
  );

  const long = lines.filter((l) => l.length > MAX_LINE_CHARS);
  assert.deepEqual(
    long.map((l) => `${l.slice(0, 120)}... (${l.length} chars)`),
    [],
    "every line is bounded",
  );
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
