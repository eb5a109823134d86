/**
 * A disk tier that cannot be read (`<data_dir>/history` is a file, an I/O error) is the tier's
 * own trouble, as one that cannot be written is: a history question still gets the ring's
 * samples marked `incomplete: disk_unreadable`, and one WARN says the disk tier was not read (not
 * one per question). A real History
 * on real files in a temporary folder, fed by hand as the cache feeds it.
 */
import assert from "node:assert/strict";
import { History, HISTORY_QUERY_DISK_WAIT_MS, MAX_HISTORY_POINTS } from "../../src/history/mod.ts";
import type { DeviceState, SignalState } from "../../src/state/mod.ts";
import { ManualClock } from "../helpers/clock.ts";
import { handFedHistory } from "../helpers/hand_fed_history.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { tempDir } from "../helpers/kernel.ts";
import { RealJournalFiles } from "../helpers/journal_files.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";

Deno.test("a history question answers the ring's samples when the disk tier cannot be read", async () => {
  const dataDir = tempDir("history-read-fault-");
  await Deno.writeTextFile(`${dataDir}/history`, "not a folder\n");
  const clock = new ManualClock();
  const { log, lines } = capturingLogger({ level: "warn" });
  let polled: ((d: DeviceState) => void) | null = null;
  const history = new History({
    config: testConfig().history,
    dataDir,
    files: new RealJournalFiles(),
    clock,
    log,
    cache: {
      onDevicePolled(l) {
        polled = l;
        return () => (polled = null);
      },
      device: () => ({} as DeviceState),
      qualityNow: (_p, _d, _s, s) => s.quality,
      // No bound: no sample is read stale by its age (qualityNow gives the stored quality).
      staleAfterMs: () => Infinity,
      boundsVersion: 0,
      declaredType: () => null,
      declaredUnit: () => "",
    },
  });
  await history.start();
  try {
    for (const v of [1, 2]) {
      const signals = new Map<string, SignalState>([["x", {
        value: { type: "double", double: v },
        quality: "OK",
        timestampMs: clock.wall,
        receivedMono: clock.mono,
      }]]);
      polled!({
        providerId: "p",
        deviceId: "d",
        pollable: ["x"],
        signals,
        lastPollMs: clock.wall,
        lastPollMono: clock.mono,
        available: true,
      });
      clock.wall += 1000;
      clock.mono += 1000;
    }
    // The default range reaches before the ring's first poll: the disk tier is asked too.
    for (let i = 0; i < 2; i++) {
      const answer = await history.query({ providerId: "p", deviceId: "d", signalIds: ["x"] });
      assert.equal(answer.source, "memory");
      assert.deepEqual(answer.signals[0]!.points.map((p) => p.last), [1, 2], "the ring's samples");
      // The client is told the answer may lack the disk's points, not only the log.
      assert.equal(answer.incomplete, "disk_unreadable");
    }
    assert.equal(history.status().disk.readErrors, 2, "each question the tier failed counts");
    const said = lines.filter((l) => l.includes("history disk tier not read"));
    assert.equal(said.length, 1, `one WARN for two questions: ${lines.join("\n")}`);
    assert.match(said[0]!, /^WARN /);
  } finally {
    await history.stop();
  }
});

Deno.test("the points bound still refuses a question whose disk rows alone pass it", async () => {
  const { clock, history, pollSignals } = handFedHistory({ stepMs: 1000, memorySeconds: 10 });
  const ids = Array.from({ length: 100 }, (_, i) => `s${i}`);
  const t0 = clock.wall;
  await history.start();
  try {
    // 100 signals x 300 one-second buckets, all but the last 10 s on disk only.
    for (let s = 0; s < 300; s++) {
      pollSignals(ids, s);
      clock.wall += 1000;
      clock.mono += 1000;
    }
    await assert.rejects(
      history.query({
        providerId: "p",
        deviceId: "d",
        signalIds: [],
        sinceMs: t0,
        untilMs: t0 + 280_000, // before the ring: the disk rows alone
      }),
      new RegExp(`more than ${MAX_HISTORY_POINTS} points`),
    );
  } finally {
    await history.stop();
  }
});

Deno.test("an answer without the rows still queued for a slow disk says so (disk_pending); once written, it is whole", async () => {
  let stalled: (() => void) | null = null;
  const files = new class extends MemoryFiles {
    stall = false;
    override async openAppend(path: string) {
      const handle = await super.openAppend(path);
      return {
        ...handle,
        append: async (text: string) => {
          if (this.stall) await new Promise<void>((resolve) => (stalled = resolve));
          await handle.append(text);
        },
      };
    }
  }();
  const { clock, history, pollSignals } = handFedHistory({ stepMs: 1000, memorySeconds: 5 }, files);
  const t0 = clock.wall;
  await history.start();
  try {
    files.stall = true;
    for (let s = 0; s < 20; s++) {
      pollSignals(["x"], s);
      clock.wall += 1000;
      clock.mono += 1000;
    }
    const ask = () =>
      history.query({ providerId: "p", deviceId: "d", signalIds: ["x"], sinceMs: t0 });
    const pending = ask();
    await clock.advanceAsync(HISTORY_QUERY_DISK_WAIT_MS);
    const partial = await pending;
    assert.equal(partial.incomplete, "disk_pending");
    files.stall = false;
    (stalled as (() => void) | null)?.();
    await history.flushDisk();
    const whole = await ask();
    assert.equal(whole.incomplete, null);
    assert.ok(
      whole.signals[0]!.points.length > partial.signals[0]!.points.length,
      "the disk's rows are in the answer once written",
    );
  } finally {
    files.stall = false;
    (stalled as (() => void) | null)?.();
    await history.stop();
  }
});
