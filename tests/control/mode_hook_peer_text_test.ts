/**
 * The log line of a failed mode-transition hook call quotes the call's error (it carries the
 * provider's message), cut to QUOTED_HOOK_ERROR_CHARS, so that a provider's 100 KB message or a
 * quote in it can neither flood nor forge the line; the hook_failure event keeps the error the call
 * failed with. A veto's reason (the 409's message) names the error cut to the same bound. The plant
 * provider in-process, its call answered with a scripted error.
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { QUOTED_HOOK_ERROR_CHARS } from "../../src/control/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { providerComingBack, recordingRouter } from "../safety/_clock_rig.ts";
import { call, fanIntoFault, hook } from "../safety/_fixture.ts";
import { hookModes, plantRefusingRig } from "./_mode_hook_rig.ts";

Deno.test("ModeManager's failed-hook line quotes the call's error, cut to QUOTED_HOOK_ERROR_CHARS; the hook_failure event keeps it", async () => {
  const message = `bus "down"\nERROR forged ${"M".repeat(100_000)}`;
  await using r = await plantRefusingRig({
    afterTransition: [
      hook("IDLE", "MANUAL", [call("plant/plant0", "set_fan", { duty: { double: 0 } })], false),
    ],
  }, message);
  assert.equal(await r.kernel.modes.request("MANUAL"), "MANUAL");
  const [failure] = r.events.filter((e) => e.kind === "hook_failure");
  assert.ok(failure?.kind === "hook_failure");
  const error = failure.error;
  assert.match(error, /^UNAVAILABLE: provider answered UNAVAILABLE: bus "down"\nERROR forged M/);
  const lines = r.lines.filter((l) => l.includes("after_transition hook "));
  assert.equal(lines.length, 1, lines.map((l) => l.slice(0, 200)).join("\n"));
  const quoted = JSON.stringify(`${error.slice(0, QUOTED_HOOK_ERROR_CHARS)}\u2026`);
  assert.ok(
    lines[0]!.endsWith(
      `after_transition hook test.hooks[IDLE->MANUAL] call plant/plant0 set_fan failed: ${quoted}`,
    ),
    lines[0]!.slice(0, 400),
  );
});

Deno.test("ModeManager's veto names the failed hook call's error, cut to QUOTED_HOOK_ERROR_CHARS, when its provider answers a 20 kB message", async () => {
  await using r = await plantRefusingRig({
    beforeTransition: [
      hook("MANUAL", "IDLE", [call("plant/plant0", "set_fan", { duty: { double: 0 } })], true),
    ],
  }, `bus down ${"M".repeat(20_000)}`);
  // The call runs in MANUAL (an actuating call is refused in IDLE): the veto keeps MANUAL.
  assert.equal(await r.kernel.modes.request("MANUAL"), "MANUAL");
  const err = await r.kernel.modes.request("IDLE").then(
    () => assert.fail("the hook vetoes"),
    (e: unknown) => e,
  );
  assert.ok(err instanceof RuntimeError);
  assert.equal(err.code, "FAILED_PRECONDITION");
  const error = "UNAVAILABLE: provider answered UNAVAILABLE: bus down M".padEnd(
    QUOTED_HOOK_ERROR_CHARS,
    "M",
  );
  assert.equal(
    err.message,
    "Mode transition MANUAL -> IDLE vetoed: before_transition hook test.hooks[MANUAL->IDLE] " +
      `call plant/plant0 set_fan failed: ${error}\u2026`,
  );
  assert.equal(r.kernel.modes.current(), "MANUAL");
});

Deno.test("ModeManager's line of FAULT hooks that failed to be made again for a returning provider quotes the error, cut to QUOTED_HOOK_ERROR_CHARS", async () => {
  const { inventory, comeBack } = providerComingBack("plant");
  const { log, lines } = capturingLogger();
  const modes = hookModes(recordingRouter(), inventory, [], {
    log,
    afterTransition: [fanIntoFault(0)],
  });
  // The securing run the e-stop hands over fails at the provider's turn with a 10 kB message
  // holding a line break.
  const message = `broke "here"\nERROR forged ${"M".repeat(10_000)}`;
  modes.setLatchSecuring(() => {
    throw new Error(message);
  });
  assert.equal(await modes.forceFault("test"), true);
  comeBack();
  await modes.faultHookCallsSettled("plant");
  const failed = lines.filter((l) => l.includes("FAULT hooks for plant failed"));
  assert.equal(failed.length, 1, lines.join("\n").slice(0, 2000));
  const quoted = JSON.stringify(`${message.slice(0, QUOTED_HOOK_ERROR_CHARS)}\u2026`);
  assert.ok(
    failed[0]!.endsWith(`FAULT hooks for plant failed: ${quoted}`),
    failed[0]!.slice(0, 600),
  );
});
