/**
 * A provider that hangs on one device's read but answers its other devices at once: the answers of
 * a pass are applied in request order (docs/architecture.md), so an answer that came in behind the
 * hung read waits there -- in the priming pass of start() until that read times out (a poll
 * loop's cycle ends without it at the next grid instant: hung_sibling_poll_test.ts). Its samples
 * are dated by their arrival
 * (`receivedMono`, "the monotonic time it arrived"; the wall clock then), not by that late apply:
 * a value `timeout_ms` old is never served, nor judged by alarms and interlocks, as a fresh one.
 * The history records it as GET /v0/state reads it when recorded: STALE, not its stored OK;
 * telemetry dates a quality-only row of it as the cache's quality_change: by its arrival.
 * The programmable provider as a real child process (it answers requests concurrently).
 */
import assert from "node:assert/strict";
import {
  dbl,
  type ProgrammableFixture,
  Q,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { MemoryFiles } from "../helpers/memory_files.ts";
import { DEFAULT_HISTORY } from "../helpers/sim_config.ts";
import { InputProblem, SignalInput } from "../../src/alarms/mod.ts";
import { History, QUALITY_BY_CODE } from "../../src/history/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { TelemetryWriter } from "../../src/telemetry/mod.ts";
import { ScriptedDb, SETTINGS } from "../telemetry/_scripted_db.ts";

const INTERVAL_MS = 100;
/**
 * The provider's timeout_ms: how long the hung read holds the answer behind it, and every call's
 * bound (1500 ms let a program or stats call time out on a loaded CI machine).
 */
const TIMEOUT_MS = 3000;
/** health.staleness.stale_after_ms: far below TIMEOUT_MS. */
const STALE_MS = 400;

/** p0 with devices a (requested first) and b, not polled yet by a loop; each answered once. */
async function startHeldRig(): Promise<ProgrammableFixture> {
  const fx = await startProgrammable({
    devices: {
      // Requested first: its hung read holds every answer after it in the pass.
      a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
      // z: declared, answered without a value (UNAVAILABLE; telemetry writes its quality from the
      // polls).
      b: {
        signals: [{ id: "y", type: T.DOUBLE }, { id: "z", type: T.DOUBLE }],
        values: [dbl("y", 2), { id: "z", quality: Q.UNKNOWN }],
      },
    },
  }, {
    intervalMs: INTERVAL_MS,
    timeoutMs: TIMEOUT_MS,
    staleness: { warnAfterMs: STALE_MS / 2, staleAfterMs: STALE_MS },
  });
  try {
    // Both answered once (a post-call poll each: no pass holds one behind the other).
    await fx.cache.pollDevice("p0", "a");
    await fx.cache.pollDevice("p0", "b");
    assert.equal(fx.cache.signal("p0", "b", "y")?.quality, "OK");
  } catch (err) {
    await fx.close();
    throw err;
  }
  return fx;
}

/**
 * Starts the cache's polling with a's reads hanging: its priming pass holds b's answer (sent after
 * a's, answered at once) behind a's read. Waits until b's answer arrived, moves the wall clock on by
 * a minute, and waits until a's read timed out: b's held answer is applied right after a's
 * failure, in request order. Gives start()'s promise (the caller waits for it before closing).
 */
async function holdAnswerOfB(fx: ProgrammableFixture): Promise<{ started: Promise<void> }> {
  await fx.program("a", { read: { hang: true } });
  // Before the provider answers this count, on the same pipe: b's read is answered.
  const reads = (await fx.stats("b")).reads;
  const started = fx.cache.start();
  await waitFor("b read again", async () => (await fx.stats("b")).reads > reads);
  // The wall clock moves on while a's read hangs and b's answer waits behind it.
  fx.clock.wallMs += 60_000;
  await waitFor("a's hung read timed out", () => fx.cache.device("p0", "a")?.available === false);
  return { started };
}

Deno.test("StateCache dates an answer held behind a hung read of another device by its arrival: its age and wall time are the answer's, so it is STALE when applied", async () => {
  const fx = await startHeldRig();
  let started: Promise<void> | undefined;
  try {
    const input = new SignalInput("p0/b/y", "p0", "b", "y");
    /** b's sample as each apply left it: its age then, its quality as read, its wall time. */
    const applied: {
      aDown: boolean;
      ageMs: number;
      quality: string;
      atMs: number;
      input: number;
    }[] = [];
    fx.cache.onDevicePolled((dev) => {
      if (dev.deviceId !== "b") return;
      const s = dev.signals.get("y")!;
      const mono = fx.clock.monoMs();
      applied.push({
        aDown: fx.cache.device("p0", "a")?.available === false,
        ageMs: mono - s.receivedMono,
        quality: fx.cache.qualityNow("p0", "b", "y", s),
        atMs: s.timestampMs,
        input: input.classify({ cache: fx.cache }, mono),
      });
    });
    const wallBefore = fx.clock.wallMs;
    started = (await holdAnswerOfB(fx)).started;
    const held = applied.find((e) => e.aDown)!;
    assert.ok(
      held.ageMs >= TIMEOUT_MS / 2,
      `the held answer is aged from its arrival, not its apply (age ${held.ageMs} ms)`,
    );
    assert.equal(held.quality, "STALE", "GET /v0/state reads it STALE: older than its bound");
    assert.equal(held.input, InputProblem.AGE, "alarms and interlocks judge it stale");
    assert.equal(held.atMs, wallBefore, "dated by the wall clock when it arrived");
    // b itself is not failing: its answers carry its signal OK, only late.
    assert.equal(fx.cache.device("p0", "b")?.available, true);
    await started;
  } finally {
    await started?.catch(() => {});
    await fx.close();
  }
});

Deno.test("History records an answer held behind a hung read of another device as GET /v0/state reads it when recorded: STALE, not its stored OK", async () => {
  const fx = await startHeldRig();
  const history = new History({
    config: { ...DEFAULT_HISTORY, diskMaxBytes: 0, memorySeconds: 3600 },
    dataDir: "/data",
    files: new MemoryFiles(),
    clock: fx.clock,
    log: testLogger(),
    cache: fx.cache,
  });
  let started: Promise<void> | undefined;
  try {
    await history.start();
    /** GET /v0/state's reading of b's sample at each poll of b the history recorded (before it). */
    const read: { atMs: number; quality: string; held: boolean }[] = [];
    fx.cache.onDevicePolled((dev) => {
      if (dev.deviceId !== "b") return;
      read.push({
        atMs: fx.clock.wallMs,
        quality: fx.cache.qualityNow("p0", "b", "y", dev.signals.get("y")!),
        held: fx.cache.device("p0", "a")?.available === false,
      });
    });
    started = (await holdAnswerOfB(fx)).started;
    const held = read.find((e) => e.held)!;
    assert.equal(held.quality, "STALE", "GET /v0/state reads the held answer STALE");
    const answer = await history.query({
      providerId: "p0",
      deviceId: "b",
      signalIds: ["y"],
      sinceMs: held.atMs,
      untilMs: held.atMs,
    });
    // Every later poll of b is held as well (a's reads still hang), at the same wall time.
    const recorded = answer.signals[0]!.points.map((p) => QUALITY_BY_CODE[p.quality]);
    assert.ok(recorded.length > 0, "the held answer's poll is in the history");
    assert.equal(
      recorded[0],
      held.quality,
      `the history records the held answer as GET /v0/state read it then (${recorded.join(" ")})`,
    );
  } finally {
    await started?.catch(() => {});
    await history.stop();
    await fx.close();
  }
});

Deno.test("TelemetryWriter dates the quality-only row of a signal without a value in an answer held behind a hung read as the cache's quality_change of it: by the answer's arrival", async () => {
  const fx = await startHeldRig();
  const db = new ScriptedDb();
  const writer = new TelemetryWriter({
    enabled: true,
    runtimeName: "lab1",
    healthIntervalMs: 0,
    clock: fx.clock,
    logger: testLogger(),
    influx: SETTINGS,
    transport: db,
    polls: fx.cache,
    tuning: { tickMs: 10 },
  });
  /** The timestamps of the rows written of b's z at `quality`. */
  const rowsOfZ = (quality: string) =>
    db.requests.flat().filter((l) => /,signal_id=z[ ,]/.test(l) && l.includes(`"${quality}"`))
      .map((l) => Number(l.slice(l.lastIndexOf(" ") + 1)));
  let started: Promise<void> | undefined;
  try {
    writer.start(new EventBus());
    await fx.cache.pollDevice("p0", "b");
    await waitFor("z's row at its first quality", () => rowsOfZ("UNAVAILABLE").length > 0);
    await fx.program("a", { read: { hang: true } });
    // From now on every answer of b carries z FAULT; the priming pass of start() holds the first
    // behind a's hung read.
    await fx.program("b", { read: { values: [dbl("y", 2), { id: "z", quality: Q.FAULT }] } });
    const reads = (await fx.stats("b")).reads;
    started = fx.cache.start();
    await waitFor("b read with z FAULT", async () => (await fx.stats("b")).reads > reads);
    const arrivedAt = fx.clock.wallMs;
    // The wall clock moves on while b's answer waits behind a's read.
    fx.clock.wallMs += 60_000;
    const change = await waitFor(
      "z's quality_change",
      () =>
        fx.events.find((e) =>
          e.kind === "quality_change" && e.device_id === "b" && e.signal_id === "z" &&
          e.new_quality === "FAULT"
        ),
    );
    assert.equal(change.timestamp_ms, arrivedAt, "the cache dates z's change by its arrival");
    const rows = await waitFor("z's FAULT row", () => {
      const r = rowsOfZ("FAULT");
      return r.length > 0 ? r : null;
    });
    assert.deepEqual(rows, [change.timestamp_ms], "the row is dated as the quality_change");
  } finally {
    await started?.catch(() => {});
    await writer.stop(1000);
    await fx.close();
  }
});
