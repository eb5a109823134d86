/**
 * A start of the run registry held by a hung mount (start() is not in turn with shutdown) that
 * the registry's shutdown overtakes: once the disk answers, the start goes no further than its
 * step -- the stopped registry becomes not available, holds no runs.jsonl open, and writes nothing
 * beside a later runtime on the folder (no run left open closed as abandoned). In-memory files
 * whose folder creation waits until the test lets it go; handles opened and closed counted.
 */
import assert from "node:assert/strict";
import { flushMicrotasks } from "../helpers/clock.ts";
import { FaultyMemoryFiles } from "../helpers/faulty_memory_files.ts";
import {
  HeldCountedFiles,
  pressEstop,
  registryOn,
  runLeftOpen,
  stoppedWhileStartHeld,
} from "./_run_fault_rig.ts";
import { EventBus } from "../../src/events/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

/** Files whose ensureDir waits while `held` is set (a hung mount); append handles counted. */
class HeldFolderFiles extends HeldCountedFiles {
  override async ensureDir(path: string): Promise<void> {
    await this.hold();
    await super.ensureDir(path);
  }
}

Deno.test("RunRegistry: shut down while its start waits on the disk, once the disk answers it is not available, holds no file open and closes no run", async () => {
  const files = new HeldFolderFiles();
  // A run the previous process left open (it crashed): a start closes it as abandoned.
  const { runsBefore, eventsFile, eventsBefore, handlesBefore } = await runLeftOpen(files);

  const registry = registryOn(files);
  // The runtime stops while the start waits; the hung mount answers at last.
  await stoppedWhileStartHeld(registry, files, () => files.waiting, "the start waits on the disk");

  assert.equal(registry.info().available, false, "a stopped registry became available");
  assert.equal(
    files.opened - files.closed,
    handlesBefore,
    "the stopped registry's start left runs.jsonl open",
  );
  assert.equal(files.text("/data/runs.jsonl"), runsBefore, "the stopped registry wrote runs.jsonl");
  assert.equal(files.text(eventsFile), eventsBefore, "the stopped registry closed the run");
});

/**
 * The WARN lines, the lines saying the start is not retried (none may: its first try failed not,
 * none was retried), and those saying the stop came while it was under way, of `lines`.
 */
function stopLines(
  lines: string[],
): { warned: string[]; notRetried: string[]; underWay: string[] } {
  return {
    warned: lines.filter((l) => l.startsWith("WARN")),
    notRetried: lines.filter((l) => l.includes("not retried")),
    underWay: lines.filter((l) => l.includes("stopped while its start was under way")),
  };
}

/**
 * Asserts the stop is said once at WARN: `count` safety events between runs (e-stop triggers all)
 * not recorded, the registry stopped while it started.
 */
function assertLostSaid(lines: string[], count: number): void {
  const { warned } = stopLines(lines);
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0]!,
    new RegExp(
      `^WARN .*${count} safety events between runs \\(${count} e-stop triggers\\) not recorded: ` +
        "run registry stopped while it started$",
    ),
  );
}

/** Asserts the stop during the first start is said once, at INFO, hinting at no fault. */
function assertUnderWaySaid(lines: string[]): void {
  const { notRetried, underWay } = stopLines(lines);
  assert.deepEqual(notRetried, [], lines.join("\n"));
  assert.equal(underWay.length, 1, lines.join("\n"));
  assert.match(
    underWay[0]!,
    /^INFO .*run registry stopped while its start was under way: not started$/,
    "a stop during the first start is said at INFO",
  );
}

Deno.test("RunRegistry: a stop right after a start on a healthy disk says it came while the start was under way, not that the start is not retried", async () => {
  const files = new FaultyMemoryFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  const starting = registry.start();
  await registry.shutdown(); // Ctrl-C right after the start: the disk is fine
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();

  assert.equal(registry.info().available, false, "a stopped registry became available");
  // No e-stop was counted: nothing lost, no WARN; no ERROR either (no fault).
  assert.deepEqual(lines.filter((l) => /^(WARN|ERROR)/.test(l)), [], lines.join("\n"));
  assertUnderWaySaid(lines);
});

Deno.test("RunRegistry: shut down while its start waits on the disk, it WARNs once how many e-stops between runs it could not record", async () => {
  const files = new HeldFolderFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  const bus = new EventBus();
  registry.attach(bus);
  await stoppedWhileStartHeld(registry, files, () => files.waiting, "the start waits on the disk", {
    beforeStop: () => pressEstop(bus, 3), // no run can record it: counted between runs
  });

  assertLostSaid(lines, 1);
  assertUnderWaySaid(lines);
});

/** Files whose listing of the runs' event folder waits while `held` is set (a hung mount). */
class HeldListingFiles extends FaultyMemoryFiles {
  held: Promise<void> | null = null;
  listing = 0;
  override async listNames(dir: string): Promise<string[]> {
    if (dir.endsWith("/runs") && this.held !== null) {
      this.listing++;
      await this.held;
    }
    return await super.listNames(dir);
  }
}

Deno.test("RunRegistry: shut down while its start, having taken the count of safety events between runs, waits on the disk, it WARNs once how many e-stops it could not record", async () => {
  const files = new HeldListingFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  const bus = new EventBus();
  registry.attach(bus);
  pressEstop(bus, 3); // before the start: counted between runs, taken by the start's last steps
  pressEstop(bus, 4);
  // Shut down before the start gives the count back.
  await stoppedWhileStartHeld(
    registry,
    files,
    () => files.listing,
    "the start waits on the disk, listing the event files",
  );

  assert.equal(registry.info().available, false, "a stopped registry became available");
  assertLostSaid(lines, 2);
  assertUnderWaySaid(lines);
});

Deno.test("RunRegistry: shut down while its start, having taken the count of safety events between runs, waits on the disk, e-stops before and after the take are said in one WARN with the total", async () => {
  const files = new HeldListingFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  const bus = new EventBus();
  registry.attach(bus);
  pressEstop(bus, 3); // before the start: taken by the start's last steps
  pressEstop(bus, 4);
  let release = () => {};
  files.held = new Promise((r) => (release = r));
  const starting = registry.start();
  for (let i = 0; i < 100 && files.listing < 1; i++) await flushMicrotasks();
  assert.equal(files.listing, 1, "the start waits on the disk, listing the event files");
  pressEstop(bus, 5); // after the take: counted apart
  await registry.shutdown();
  files.held = null;
  release();
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();

  const { warned } = stopLines(lines);
  assert.equal(warned.length, 1, lines.join("\n"));
  assert.match(
    warned[0]!,
    /^WARN .*3 safety events between runs \(3 e-stop triggers\) not recorded: run registry stopped while it started$/,
  );
  assertUnderWaySaid(lines);
});

Deno.test("RunRegistry: start() called once shutdown() was (its stop under way) makes no call on the disk: no folder made after the stop", async () => {
  const files = new HeldFolderFiles();
  const { log, lines } = capturingLogger({ level: "debug" });
  const registry = registryOn(files, { logger: log });
  let release = () => {};
  files.held = new Promise((r) => (release = r)); // a hung mount
  const stopping = registry.shutdown(); // the runtime stops before its start reached the registry
  const starting = registry.start();
  await stopping;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  // Before: the start waited on the disk (its folder), past the stop and its lock's release.
  assert.equal(files.waiting, 0, "a start after the stop was asked called the disk");
  files.held = null;
  release(); // the mount answers
  await starting;
  for (let i = 0; i < 100; i++) await flushMicrotasks();
  assert.deepEqual(await files.listNames("/data"), [], "a folder made after the stop");
  assert.equal(registry.info().available, false, "a stopped registry became available");
  assert.deepEqual(lines.filter((l) => /^(WARN|ERROR)/.test(l)), [], lines.join("\n"));
});
