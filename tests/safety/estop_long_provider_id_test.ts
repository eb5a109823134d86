/**
 * Configuration ids have no length bound, and a device id is the provider's text: the e-stop's
 * lines and its re-arm refusal that name a provider or a device cut its id (provider ids to
 * QUOTED_PROVIDER_ID_CHARS, device ids to QUOTED_DEVICE_ID_CHARS, marked with an ellipsis), so a
 * 10 kB id does not make a 10 kB line. The stop itself is made as usual. In-process: the real
 * Estop over a router that answers the stop's calls at once and holds the securing run's until
 * the test answers them, whose drains do not finish, a provider with a 10 kB id whose device (with
 * a 10 kB id) answers again while latched, and a logger that keeps every line.
 */
import assert from "node:assert/strict";
import type { ArmCheck, CallRequest, CallRouter } from "../../src/control/mod.ts";
import { QUOTED_DEVICE_ID_CHARS, QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";
import { verifySafeState } from "../../src/safety/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { untilTurns } from "../helpers/turns.ts";
import {
  containedEstop,
  failingClock,
  faultRecordingModes,
  heaterOffLadder,
  heaterOffReader,
  providerComingBack,
} from "./_clock_rig.ts";
import { call, expectation } from "./_fixture.ts";

/** A provider id of 10 kB (no bound in the configuration). */
const LONG_PROVIDER = `p${"x".repeat(10_000)}`;
/** A device id of 10 kB (the provider's text). */
const LONG_DEVICE = `d${"y".repeat(10_000)}`;
/** The provider id as the e-stop's lines name it: cut, with an ellipsis. */
const CUT_PROVIDER = `${LONG_PROVIDER.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`;
/** The device id as the e-stop's lines name it: cut, with an ellipsis. */
const CUT_DEVICE = `${LONG_DEVICE.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026`;
/**
 * Longest line (or refusal) the test lets through: the cut ids and the lines' own words, far
 * below one uncut id.
 */
const MAX_LINE_CHARS = 1_000;

Deno.test("Estop lines and its re-arm refusal cut a 10 kB provider id and device id", async () => {
  let hold = false;
  const held: (() => void)[] = [];
  const made: string[] = [];
  const router = {
    addGate() {},
    resolve: () => ({ device: {}, fn: { args: [] } }),
    // Its in-flight calls never finish in time: the drain's ERROR line names the provider.
    drainFrom: () => () => Promise.resolve(false),
    call: (req: CallRequest) => {
      made.push(String(req.functionName));
      return hold
        ? new Promise<unknown>((resolve) => held.push(() => resolve({})))
        : Promise.resolve({});
    },
  } as unknown as CallRouter;
  const { inventory, host } = providerComingBack(LONG_PROVIDER);
  const { modes } = faultRecordingModes();
  let armCheck: ArmCheck | null = null;
  modes.addArmCheck = (check) => void (armCheck = check);
  const deviceReturns: ((providerId: string, deviceId: string) => void)[] = [];
  const { log, lines } = capturingLogger({ now: () => 0 });
  const estop = containedEstop({
    router,
    inventory,
    reads: heaterOffReader().reads,
    log,
    modes,
    devices: { onDeviceReturn: (l) => (deviceReturns.push(l), () => {}) },
    // Two calls: the securing run, released after the first, says it ended before the second.
    safeState: {
      ...heaterOffLadder(),
      hooks: [
        call(`${LONG_PROVIDER}/plant0`, "set_heater", { enabled: false }),
        call(`${LONG_PROVIDER}/plant0`, "set_fan", { duty: 0 }),
      ],
    },
  });

  const result = await estop.trigger("test");
  assert.deepEqual(made, ["set_heater", "set_fan"], "the stop made both calls");
  assert.equal(result.actions.filter((a) => a.success).length, 2);
  assert.deepEqual(
    result.drain.pending_providers,
    [LONG_PROVIDER],
    "the answer keeps the id whole",
  );

  // Its device answers again while latched: a securing run, its first call held on the wire.
  hold = true;
  for (const l of deviceReturns) l(LONG_PROVIDER, LONG_DEVICE);
  await untilTurns(() => held.length === 1, "the securing run's first call");
  estop.clear();
  const refusal = armCheck!("FAULT", "MANUAL");
  assert.ok(
    typeof refusal === "string",
    "re-arming refused while the securing call is on the wire",
  );
  assert.ok(refusal.length <= MAX_LINE_CHARS, `the refusal is ${refusal.length} chars`);
  assert.ok(refusal.includes(`provider(s) ${CUT_PROVIDER} (back while latched)`), refusal);
  held.splice(0).forEach((answer) => answer());
  await estop.securing(host);
  assert.equal(armCheck!("FAULT", "MANUAL"), null, "let through once the call has answered");

  const long = lines.filter((l) => l.length > MAX_LINE_CHARS);
  assert.deepEqual(
    long.map((l) => `${l.slice(0, 120)}... (${l.length} chars)`),
    [],
    "every line is bounded",
  );
  /** The one line that begins (after its level and time) with `words`. */
  const lineWith = (words: string) => {
    const found = lines.filter((l) => l.includes(words));
    assert.equal(found.length, 1, `one line with ${words.slice(0, 60)}:\n${lines.join("\n")}`);
    return found[0]!;
  };
  assert.match(
    lineWith(`e-stop: in-flight calls to ${CUT_PROVIDER} had not finished within`),
    /^ERROR/,
  );
  assert.match(
    lineWith(
      `e-stop latched: provider ${CUT_PROVIDER} has device ${CUT_DEVICE} answering again; ` +
        "bringing it to the safe state (2 call(s))",
    ),
    /^WARN/,
  );
  assert.ok(
    lineWith("its further securing runs for devices answering again").includes(
      `or provider ${CUT_PROVIDER} itself comes back`,
    ),
  );
  assert.match(
    lineWith(`e-stop: provider ${CUT_PROVIDER}'s securing run ended after 1 of 2`),
    /^WARN/,
  );
});

Deno.test("verifySafeState's clock ERROR lines cut a 10 kB provider id and device id", async () => {
  let asked = 0;
  // Its start is read; every read after it fails (asked once more, failing again).
  const { clock, failures } = failingClock({
    read: "monoMs",
    times: Infinity,
    when: () => asked++ > 0,
  });
  const { log, lines } = capturingLogger({ level: "debug", now: () => 0 });
  const v = await verifySafeState({
    reads: heaterOffReader().reads,
    clock,
    expect: [expectation(`${LONG_PROVIDER}/${LONG_DEVICE}/heater`, { equals: false })],
    timeoutMs: 1000,
    log,
  });
  assert.equal(v.outcome, "verified", "read back once, bounded by the timeout");
  assert.ok(failures() >= 2, "the clock failed");
  const errors = lines.filter((l) => l.startsWith("ERROR"));
  for (const l of lines) {
    assert.ok(l.length <= MAX_LINE_CHARS, `${l.slice(0, 120)}... (${l.length} chars)`);
  }
  // The first failure is written, naming the device; the others are counted (bounded per
  // read-back), that line naming none.
  assert.ok(
    errors[0]?.includes(`safe-state verification (${CUT_PROVIDER}/${CUT_DEVICE}): reading`),
    errors.join("\n"),
  );
});
