/**
 * The reason of an e-stop arriving after its latch (an HTTP body read late: recordEstopReason) is
 * a safety event. When no run can record it -- the e-stop latched between runs, in the window of
 * an open that then failed, or its run closed before the reason came -- it is counted among the
 * safety events no run recorded, which the next run opened gives in its run_opened
 * (`safety_events_between_runs`), as its trigger is; never dropped uncounted. One that arrives
 * while a run's open is written (its run_opened took the count already) is counted by the run
 * opened after that one. One arriving once the stop made its last save (as it begins, or after
 * it) is said in one WARN with its count, never lost unsaid, and arms no save timer that would
 * outlive the stop.
 */
import assert from "node:assert/strict";
import type { RunRegistry } from "../../src/runs/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { registryOn, RunJournalFaultFiles } from "./_run_fault_rig.ts";

/** The reason of an e-stop latched now, still arriving: `give` delivers it. */
function reasonArriving(registry: RunRegistry): (reason: string) => Promise<void> {
  let give!: (r: string) => void;
  const reason = new Promise<string>((r) => give = r);
  registry.recordEstopReason(reason, "api");
  return async (r) => {
    give(r);
    await reason; // the registry's handler was chained before this await's: it has run
  };
}

/** The `safety_events_between_runs` of the next run opened. */
async function countedByNextRun(registry: RunRegistry): Promise<unknown> {
  const { run } = await registry.open({});
  const opened = (await registry.listEvents(run.run_id, { limit: 1 })).events[0]!;
  return opened.payload.safety_events_between_runs;
}

Deno.test("an e-stop reason arriving between runs (its latch between runs too) is counted by the next run's run_opened", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  try {
    const arrive = reasonArriving(registry);
    await arrive("door opened");
    const counted = await countedByNextRun(registry) as Record<string, unknown> | undefined;
    assert.equal(counted?.count, 1, "the reason no run recorded is counted");
    assert.equal(counted?.estop_triggers, 0);
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an e-stop reason whose latch came in the window of an open that then failed is counted by the next run's run_opened", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  try {
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    const opening = registry.open({});
    await waitFor("the open's write under way", () => files.held > 0);
    const arrive = reasonArriving(registry); // latched while the open is written
    files.journalFails = true; // its record in runs.jsonl fails: no run
    files.gate = null;
    release();
    await assert.rejects(opening);
    files.journalFails = false;
    await arrive("door opened");
    const counted = await countedByNextRun(registry) as Record<string, unknown> | undefined;
    assert.equal(counted?.count, 1, "the reason no run recorded is counted");
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an e-stop reason arriving after the run of its latch closed is counted by the next run's run_opened", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  try {
    const { run } = await registry.open({});
    const arrive = reasonArriving(registry); // latched while the run is open
    await registry.close(run.run_id, {});
    await arrive("door opened");
    const counted = await countedByNextRun(registry) as Record<string, unknown> | undefined;
    assert.equal(counted?.count, 1, "the reason no run recorded is counted");
  } finally {
    await registry.shutdown();
  }
});

Deno.test("an e-stop reason of a latch between runs arriving while a run's open is written is counted by the run opened after it", async () => {
  const files = new RunJournalFaultFiles();
  const registry = registryOn(files);
  await registry.start();
  try {
    const arrive = reasonArriving(registry); // latched between runs
    let release!: () => void;
    files.gate = new Promise((r) => release = r);
    const opening = registry.open({});
    await waitFor("the open's write under way", () => files.held > 0);
    await arrive("door opened"); // its run_opened is being written: too late for it
    files.gate = null;
    release();
    const { run } = await opening;
    const opened = (await registry.listEvents(run.run_id, { limit: 10 })).events;
    assert.deepEqual(
      opened.map((e) => e.category),
      ["run_opened"],
      "the reason is no event of the run opened (its trigger was none of that run's)",
    );
    assert.equal(opened[0]!.payload.safety_events_between_runs, undefined);
    // Saved after the open record (which resets the count at a start): a crash keeps it.
    await waitFor("the count saved", () => {
      const last = files.text("/data/runs.jsonl").trim().split("\n").at(-1)!;
      return JSON.parse(last).op === "between_runs";
    });
    await registry.close(run.run_id, {});
    const counted = await countedByNextRun(registry) as Record<string, unknown> | undefined;
    assert.equal(counted?.count, 1, "the reason no run recorded is counted");
  } finally {
    await registry.shutdown();
  }
});

/** The WARN lines of `lines`. */
function warned(lines: string[]): string[] {
  return lines.filter((l) => l.startsWith("WARN"));
}

Deno.test("an e-stop reason arriving after the registry stopped is said in one WARN with its count", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const arrive = reasonArriving(registry); // latched between runs, its body still arriving
  await registry.shutdown();
  assert.deepEqual(warned(lines), [], lines.join("\n"));
  await arrive("provider lost"); // the body read ends after the stop

  assert.equal(warned(lines).length, 1, lines.join("\n"));
  assert.match(
    warned(lines)[0]!,
    /^WARN .*run registry stopped: 1 safety events between runs \(0 e-stop triggers\) not recorded: noted after the stop's last save$/,
  );
});

Deno.test("an e-stop reason arriving between runs exactly as the stop begins arms no save timer after the stop", async () => {
  const files = new RunJournalFaultFiles();
  const clock = new ManualClock(0, 1_700_000_000_000);
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { clock, logger: log });
  await registry.start();
  // Arrived already: its handler runs in the same turn as the stop's first step.
  registry.recordEstopReason(Promise.resolve("door opened"), "api");
  await registry.shutdown();

  assert.equal(clock.pendingTimers, 0, "a timer was armed after the stop");
  // Noted before the stop's last save: saved by it, nothing lost, nothing said.
  const saved = files.text("/data/runs.jsonl").split("\n").filter((l) =>
    l.includes('"between_runs"')
  );
  assert.equal(saved.length, 1, files.text("/data/runs.jsonl"));
  assert.match(saved[0]!, /"count":1/);
  assert.deepEqual(warned(lines), [], lines.join("\n"));
});

Deno.test("an e-stop reason of the run left open at the stop, arriving after the stop, is said as that run's in its WARN", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const { run } = await registry.open({});
  const arrive = reasonArriving(registry); // latched in the run, its body still arriving
  await registry.shutdown(); // the run is left open (closed as abandoned at the next start)
  assert.deepEqual(warned(lines), [], lines.join("\n"));
  await arrive("provider lost"); // the body read ends after the stop

  assert.equal(warned(lines).length, 1, lines.join("\n"));
  assert.equal(
    warned(lines)[0]!.replace(/^WARN .*?run registry stopped: /, ""),
    `an e-stop reason of run ${run.run_id} (left open at the stop) not recorded: ` +
      `noted after the stop's last save`,
    lines.join("\n"),
  );
});

Deno.test("two shutdown() calls at once on a ready registry: the second waits for the first and says nothing; a late e-stop reason gives the stop's reason", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const arrive = reasonArriving(registry); // latched between runs, its body still arriving
  const before = lines.length;
  let firstDone = false;
  const first = registry.shutdown().then(() => (firstDone = true));
  const second = registry.shutdown().then(() => firstDone);
  assert.equal(await second, true, "the second shutdown() resolved before the first");
  await first;
  assert.equal(registry.info().available, false);
  // Before: 'INFO ... run registry start not retried: stopped before it succeeded (run registry
  // stopped)' -- of a start that succeeded.
  assert.deepEqual(
    lines.slice(before).filter((l) => /^(INFO|WARN|ERROR)/.test(l)),
    [],
    lines.join("\n"),
  );
  await arrive("provider lost"); // the body read ends after the stop

  assert.equal(warned(lines).length, 1, lines.join("\n"));
  assert.match(
    warned(lines)[0]!,
    /^WARN .*run registry stopped: 1 safety events between runs \(0 e-stop triggers\) not recorded: noted after the stop's last save$/,
  );
});

Deno.test("an e-stop reason of the run left open at the stop, arriving while the stop's files still close, says the registry is stopping, not stopped", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  const { run } = await registry.open({});
  const arrive = reasonArriving(registry); // latched in the run, its body still arriving
  let release!: () => void;
  files.gate = new Promise((r) => release = r); // the stop's writes held: its closes wait
  let stopped = false;
  const stopping = registry.shutdown().then(() => (stopped = true));
  await waitFor("the stop's last save held in its write", () => files.held > 0);
  await arrive("provider lost"); // after the stop's last save, before its files are closed
  try {
    assert.equal(stopped, false, "the stop ended before its held write was released");
    assert.equal(warned(lines).length, 1, lines.join("\n"));
    assert.equal(
      warned(lines)[0]!.replace(/^WARN .*?run registry stopping: /, ""),
      `an e-stop reason of run ${run.run_id} (left open at the stop) not recorded: ` +
        `noted after the stop's last save`,
      lines.join("\n"),
    );
  } finally {
    files.gate = null;
    release();
    await stopping;
  }
});

Deno.test("an e-stop reason between runs, arriving while the stop's files still close, says the registry is stopping, not stopped", async () => {
  const files = new RunJournalFaultFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  await registry.start();
  await reasonArriving(registry)("door opened"); // one between runs: the stop's last save writes it
  const arrive = reasonArriving(registry); // latched between runs, its body still arriving
  let release!: () => void;
  files.gate = new Promise((r) => release = r); // the stop's writes held: its closes wait
  let stopped = false;
  const stopping = registry.shutdown().then(() => (stopped = true));
  await waitFor("the stop's last save held in its write", () => files.held > 0);
  await arrive("provider lost"); // after the stop's last save, before its files are closed
  try {
    assert.equal(stopped, false, "the stop ended before its held write was released");
    assert.equal(warned(lines).length, 1, lines.join("\n"));
    assert.match(
      warned(lines)[0]!,
      /^WARN .*run registry stopping: 1 safety events between runs \(0 e-stop triggers\) not recorded: noted after the stop's last save$/,
      lines.join("\n"),
    );
  } finally {
    files.gate = null;
    release();
    await stopping;
  }
});
