/**
 * AuditTrail.record contains its own failures ("Never throws"): an entry it cannot record is
 * reported on an ERROR line. That report went through a logger that may itself throw, and then
 * the failure escaped into the caller after all -- the e-stop's clear (which records before it
 * releases the latch), a FAULT commit. A listener that throws is reported the same way, and a
 * throwing report there also skipped the listeners after it. Unit tests: the real AuditTrail (and
 * the real Estop over it) with a logger whose every line throws.
 */
import assert from "node:assert/strict";
import { type AuditEntry, AuditTrail } from "../../src/audit/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import type { AuditDecision } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { Estop } from "../../src/safety/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { testLogger } from "../helpers/kernel.ts";
import {
  faultRecordingModes,
  heaterOffLadder,
  providersUp,
  recordingRouter,
} from "../safety/_clock_rig.ts";

/** A logger whose every line throws; `lines` counts the lines it was asked to write. */
function throwingLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const line = (level: string) => (message: string) => {
    lines.push(`${level} ${message}`);
    throw new Error("log sink failed");
  };
  const log: Logger = {
    debug: line("DEBUG"),
    info: line("INFO"),
    warn: line("WARN"),
    error: line("ERROR"),
    child: () => log,
  };
  return { log, lines };
}

function decision(functionName: string): AuditDecision {
  return {
    action: "call",
    origin: { kind: "http" },
    outcome: "accepted",
    device_handle: "sim0/relayio0",
    function: functionName,
    args: {},
    result: {},
    latency_ms: 1,
  };
}

Deno.test("AuditTrail.record does not throw when recording fails and its logger throws", () => {
  const { log, lines } = throwingLogger();
  const trail = new AuditTrail({
    clock: new ManualClock(),
    log,
    mode: () => {
      throw new Error("mode port failed");
    },
  });
  trail.record(decision("set_relay"));
  assert.deepEqual(lines, ["ERROR audit entry not recorded: mode port failed"]);
});

Deno.test("AuditTrail.record reaches every listener when one throws and its logger throws", () => {
  const { log, lines } = throwingLogger();
  const trail = new AuditTrail({ clock: new ManualClock(), log, mode: () => "MANUAL" });
  const seen: AuditEntry[] = [];
  trail.onEntry(() => {
    throw new Error("listener broken");
  });
  trail.onEntry((entry) => void seen.push(entry));
  trail.record(decision("set_relay"));
  trail.record(decision("set_other")); // closes the first entry: the listeners get it
  assert.equal(seen.length, 1, "the listener after the one that threw got the entry");
  assert.equal(seen[0]!.function, "set_relay");
  assert.deepEqual(lines, ["ERROR audit listener failed: listener broken"]);
});

Deno.test("Estop.clear releases the latch when its audit cannot record and the audit's logger throws", async () => {
  let modeFails = false;
  const audit = new AuditTrail({
    clock: systemClock,
    log: throwingLogger().log,
    mode: () => {
      if (modeFails) throw new Error("mode port failed");
      return "FAULT";
    },
  });
  const estop = new Estop({
    router: recordingRouter(),
    inventory: providersUp("plant"),
    reads: {} as FreshReader,
    clock: systemClock,
    log: testLogger(),
    audit,
    modes: faultRecordingModes().modes,
    safeState: heaterOffLadder(),
  });
  await estop.trigger("latched for the test");
  assert.equal(estop.latched, true);
  modeFails = true;
  assert.deepEqual(estop.clear(), { latched: false });
  assert.equal(estop.latched, false, "the release is in force");
});
