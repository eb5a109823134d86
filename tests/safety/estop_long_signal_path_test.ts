/**
 * A configured signal path (`<provider>/<device>/<signal>` in safety.safe_state.expect) has no
 * length bound: the read-back's failed-check lines and the start-up "expectation does not resolve"
 * lines cut its parts as every line cuts ids (provider id to QUOTED_PROVIDER_ID_CHARS, signal id
 * to ESTOP_QUOTED_NAME_CHARS, device id to QUOTED_DEVICE_ID_CHARS, each marked with an ellipsis), so a
 * 10 kB id makes no 10 kB line; the answer keeps the path whole. In-process: the real Estop over a
 * router that answers every call at once and a reader that reads the expected signal back as not
 * met; unresolvedExpectations against an inventory that lists none of the long ids.
 */
import assert from "node:assert/strict";
import { QUOTED_DEVICE_ID_CHARS, QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";
import { ESTOP_QUOTED_NAME_CHARS, unresolvedExpectations } from "../../src/safety/mod.ts";
import type { FreshRead, FreshReader } from "../../src/state/mod.ts";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { containedEstop, heaterOffLadder } from "./_clock_rig.ts";
import { expectation } from "./_fixture.ts";

/** A provider id of 10 kB (no bound in the configuration). */
const LONG_PROVIDER = `p${"x".repeat(10_000)}`;
/** A device id of 10 kB. */
const LONG_DEVICE = `d${"y".repeat(10_000)}`;
/** A signal id of 10 kB. */
const LONG_SIGNAL = `s${"z".repeat(10_000)}`;
/** The path as the lines name it: each part cut, with an ellipsis. */
const CUT_PATH = `${LONG_PROVIDER.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026/` +
  `${LONG_DEVICE.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026/` +
  `${LONG_SIGNAL.slice(0, ESTOP_QUOTED_NAME_CHARS)}\u2026`;
/** Longest line the test lets through: the cut ids and the line's words, far below one id. */
const MAX_LINE_CHARS = 1_000;

Deno.test("Estop's failed-check line of a read-back cuts a 10 kB configured signal path; the answer keeps it whole", async () => {
  const path = `${LONG_PROVIDER}/${LONG_DEVICE}/${LONG_SIGNAL}`;
  // Reads the signal back as true: the expectation (false) is not met.
  const reads: FreshReader = {
    readFresh: () =>
      Promise.resolve({
        ok: true,
        samples: new Map([[LONG_SIGNAL, { value: { type: "bool", bool: true }, quality: "OK" }]]),
      } as FreshRead),
  };
  const { log, lines } = capturingLogger({ level: "debug", now: () => 0 });
  const estop = containedEstop({
    reads,
    log,
    safeState: {
      ...heaterOffLadder(),
      expect: [expectation(path, { equals: false })],
      verifyTimeoutMs: 1,
    },
  });
  const result = await estop.trigger("test");
  assert.equal(result.verification.outcome, "mismatch");
  assert.equal(result.verification.checks[0]!.signal, path, "the answer keeps the path whole");
  const long = lines.filter((l) => l.length > MAX_LINE_CHARS);
  assert.deepEqual(
    long.map((l) => `${l.slice(0, 120)}... (${l.length} chars)`),
    [],
    "every line is bounded",
  );
  const failed = lines.filter((l) => l.includes(`mismatch: ${CUT_PATH}: reads true`));
  assert.equal(failed.length, 1, `one failed-check line naming the cut path:\n${lines.join("\n")}`);
  assert.match(failed[0]!, /^ERROR/);
});

Deno.test("unresolvedExpectations cuts 10 kB provider, device and signal ids in what it says", () => {
  const devices = [
    deviceCapabilities(LONG_PROVIDER, LONG_DEVICE, {
      signals: [{
        signalId: "flag",
        name: "flag",
        description: "",
        valueType: "bool",
        unit: "",
        pollHintHz: 1,
        staleAfterMs: 0,
      }],
    }),
  ];
  const cutDevice = `${LONG_PROVIDER.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026/` +
    `${LONG_DEVICE.slice(0, QUOTED_DEVICE_ID_CHARS)}\u2026`;
  const problems = unresolvedExpectations([
    expectation(`${LONG_PROVIDER}/${LONG_DEVICE}x/flag`, { equals: false }, 0),
    expectation(`${LONG_PROVIDER}/${LONG_DEVICE}/${LONG_SIGNAL}`, { equals: false }, 1),
    expectation(`${LONG_PROVIDER}/${LONG_DEVICE}/flag`, { equals: 0 }, 2),
  ], devices);
  assert.deepEqual(problems, [
    `safety.safe_state.expect[0]: device not found: ${cutDevice}`,
    `safety.safe_state.expect[1]: signal not found: ${CUT_PATH}`,
    `safety.safe_state.expect[2]: ${cutDevice}/flag is declared bool, the expectation wants a number`,
  ]);
});
