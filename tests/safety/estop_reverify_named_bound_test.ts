/**
 * The lines of a re-verification name its batch's providers bounded (docs/safety.md, "Merged, not
 * re-run"): the first MAX_NAMED_IN_WARNING, each cut to QUOTED_PROVIDER_ID_CHARS, the rest counted
 * ("and N more"); its audit record keeps every id. A reload that changes the expectations of 25
 * providers while latched reads them back in one batch. In-process: the real Estop over a router
 * that answers every call at once, a reader that reads every expectation back as met, a logger
 * whose lines the test keeps, and (for the clock's lines) a clock whose monoMs throws.
 */
import assert from "node:assert/strict";
import type { AuditDecision } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import { MAX_NAMED_IN_WARNING, type SafeStateConfig } from "../../src/safety/mod.ts";
import { type Clock, QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";
import type { FreshReader } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { untilTurns } from "../helpers/turns.ts";
import { containedEstop, failingClock, heaterOffReader, providersUp } from "./_clock_rig.ts";
import { expectation } from "./_fixture.ts";

const PROVIDERS = MAX_NAMED_IN_WARNING + 5;
/** The first provider's id is longer than a line names: cut there, whole in the audit record. */
const LONG_ID = `p00${"x".repeat(QUOTED_PROVIDER_ID_CHARS + 50)}`;
const IDS = Array.from(
  { length: PROVIDERS },
  (_, i) => i === 0 ? LONG_ID : `p${String(i).padStart(2, "0")}`,
);
/** How the lines name the batch: 20 ids, the first cut, then the count of the rest. */
const NAMED = [
  `${LONG_ID.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`,
  ...IDS.slice(1, MAX_NAMED_IN_WARNING),
].join(", ") + ` and ${PROVIDERS - MAX_NAMED_IN_WARNING} more`;
const RELOADED = "expectations reloaded while latched";

/** One heater expectation per provider, on device `device`: a new list each call. */
function ladder(device: string): SafeStateConfig {
  return {
    setpoints: [],
    hooks: [],
    zeroIsSafe: false,
    expect: IDS.map((id, i) => expectation(`${id}/${device}/heater`, { equals: false }, i)),
    verifyTimeoutMs: 1000,
  };
}

/** Latched and verified; then a reload moves every expectation: one re-verification of all. */
async function reverifiedBatch(clock: Clock, beforeReload: () => void = () => {}) {
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  const audited: AuditDecision[] = [];
  const estop = containedEstop({
    inventory: providersUp(...IDS),
    reads: heaterOffReader().reads,
    clock,
    log,
    audit: { record: (d) => audited.push(d) },
    safeState: ladder("dev"),
  });
  const stopped = await estop.trigger("test");
  assert.equal(stopped.verification.checks.length, PROVIDERS);
  beforeReload();
  const runs = estop.reconfigure(ladder("dev2"));
  assert.equal(runs.length, 1, "one batch for every provider whose expectations changed");
  await Promise.all(runs);
  const records = audited.filter((d) =>
    d.action === "estop" && (d.args as { reason?: string } | null)?.reason === RELOADED
  );
  return { lines, records, estop };
}

Deno.test("Estop re-verification line names its first MAX_NAMED_IN_WARNING providers, each cut, and counts the rest; the audit record keeps every id", async () => {
  const { lines, records, estop } = await reverifiedBatch(systemClock);
  assert.equal(estop.status().verification?.outcome, "verified");
  const said = lines.filter((l) => l.includes("e-stop re-verification ("));
  assert.equal(said.length, 1, said.join("\n"));
  assert.ok(
    said[0]!.startsWith("INFO") &&
      said[0]!.includes(`e-stop re-verification (${NAMED} ${RELOADED}): verified after `),
    said[0],
  );
  assert.ok(!said[0]!.includes(IDS[MAX_NAMED_IN_WARNING]!), "the 21st provider is counted");
  assert.ok(!said[0]!.includes(LONG_ID), "a long id is cut");
  assert.equal(records.length, 1);
  assert.deepEqual(records[0]!.args, { provider_ids: IDS, reason: RELOADED });
});

Deno.test("Estop re-verification's clock failure lines name its providers as its result line does", async () => {
  let reloaded = false;
  const { clock, failures } = failingClock({
    read: "monoMs",
    times: Infinity,
    when: () => reloaded,
  });
  const { lines, records } = await reverifiedBatch(clock, () => void (reloaded = true));
  assert.ok(failures() > 0, "the clock threw");
  const said = lines.filter((l) => l.startsWith("ERROR") && l.includes("e-stop re-verification"));
  assert.deepEqual(
    said.map((l) => l.slice(l.indexOf("e-stop re-verification"))),
    [
      `e-stop re-verification (${NAMED}): reading the clock failed: clock monoMs failed; ` +
      "asked once more",
      `e-stop re-verification (${NAMED}): its start is unknown: reading the clock failed: ` +
      "clock monoMs failed",
    ],
    lines.join("\n"),
  );
  assert.equal(records.length, 1);
  assert.equal(records[0]!.latency_ms, null);
});

Deno.test("Estop re-verification merged into a newer stop's read-back names its providers bounded in its line", async () => {
  const { log, lines } = capturingLogger({ level: "info", now: () => 0 });
  const met = heaterOffReader().reads;
  // Held while `holding`: each read waits for the test to answer it.
  let holding = false;
  const held: (() => void)[] = [];
  const reads: FreshReader = {
    readFresh: (...args) =>
      holding
        ? new Promise((resolve) => held.push(() => resolve(met.readFresh(...args))))
        : met.readFresh(...args),
  };
  const clock = new ManualClock();
  const estop = containedEstop({
    inventory: providersUp(...IDS),
    reads,
    clock,
    log,
    safeState: ladder("dev"),
  });
  await estop.trigger("first");
  holding = true;
  // The reload's re-verification of every provider, its reads held.
  clock.advance(10);
  const [reverified] = estop.reconfigure(ladder("dev2"));
  await untilTurns(() => held.length === PROVIDERS, "the re-verification's reads");
  // A reload re-parses the same list; a press's stop reads it back and answers first.
  clock.advance(10);
  assert.deepEqual(estop.reconfigure(ladder("dev2")), []);
  const second = estop.trigger("second");
  await untilTurns(() => held.length === 2 * PROVIDERS, "the second stop's reads");
  held.splice(PROVIDERS).forEach((answer) => answer());
  await second;
  held.splice(0).forEach((answer) => answer());
  await reverified;
  const said = lines.filter((l) => l.includes("e-stop re-verification ("));
  assert.equal(said.length, 1, said.join("\n"));
  assert.ok(
    said[0]!.startsWith("INFO") &&
      said[0]!.endsWith(
        `e-stop re-verification (${NAMED} ${RELOADED}): ended after a newer read-back ` +
          "(a stop's, cause api): merged into it, which status shows",
      ),
    said[0],
  );
});
