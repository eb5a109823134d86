/**
 * A device's read that fails (its provider answers an error status) while another device's read,
 * sent before it in the same pass, hangs: the outcomes of a pass are applied in request order
 * (docs/architecture.md), so the failure waits behind the hung read -- in the priming pass of
 * start() until that read times out. As an answer held so is dated by its arrival
 * (held_answer_age_test.ts), so is the failure: its UNAVAILABLE marks (state_update,
 * quality_change) and device_availability are dated when it arrived, the device's failing spell
 * (device_outage.ts) and an alarm's bad-quality delay run from then, telemetry dates a
 * quality-only row of it as the cache's quality_change, the history records its poll then (at the
 * open bucket's start when a bucket was written since) and the incident of the device's loss is
 * dated from then -- not by the late apply.
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
import { DeviceOutages } from "../../src/state/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import {
  History,
  type IncidentBegun,
  type IncidentJoined,
  IncidentRecorder,
  QUALITY_BY_CODE,
} from "../../src/history/mod.ts";
import { TelemetryWriter } from "../../src/telemetry/mod.ts";
import { ScriptedDb, SETTINGS } from "../telemetry/_scripted_db.ts";

const INTERVAL_MS = 100;
/**
 * The provider's timeout_ms: how long the hung read holds the failure behind it, and every call's
 * bound (as held_answer_age_test.ts: long enough for a loaded CI machine's calls).
 */
const TIMEOUT_MS = 3000;

/**
 * p0 with devices a (requested first) and b, not polled yet by a loop; each answered once, OK.
 * `restart`: p0 restarted at once when its process dies (none by default).
 */
async function startHeldRig(restart = false): Promise<ProgrammableFixture> {
  const fx = await startProgrammable({
    devices: {
      // Requested first: its hung read holds every outcome after it in the pass.
      a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
      // z: declared, answered without a value (FAULT; telemetry writes its quality from the polls).
      b: {
        signals: [{ id: "y", type: T.DOUBLE }, { id: "z", type: T.DOUBLE }],
        values: [dbl("y", 2), { id: "z", quality: Q.FAULT }],
      },
    },
  }, {
    intervalMs: INTERVAL_MS,
    timeoutMs: TIMEOUT_MS,
    ...(restart ? { restart: { backoffMs: [0, 0, 0] } } : {}),
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

/** When b's failed read arrived: the wall clock then, and a monotonic time not before it. */
interface Arrival {
  readonly wallMs: number;
  /** The wall clock when it was applied (wallMs + the step `holdFailureOfB` moved it by). */
  readonly appliedWallMs: number;
  readonly monoAfter: number;
  readonly started: Promise<void>;
}

/**
 * Starts the cache's polling with a's reads hanging and b's failing (UNAVAILABLE 14): the priming
 * pass holds b's failure (sent after a's read, answered at once) behind a's read. Waits until b's
 * read was answered, moves the wall clock on by a minute, and waits until a's read timed out: b's
 * held failure is applied right after a's, in request order. Gives start()'s promise (the caller
 * waits for it before closing).
 */
async function holdFailureOfB(fx: ProgrammableFixture, stepMs = 60_000): Promise<Arrival> {
  await fx.program("a", { read: { hang: true } });
  await fx.program("b", { read: { error: { code: 14, message: "bus fault" } } });
  // Before the provider answers this count, on the same pipe: b's read is answered.
  const reads = (await fx.stats("b")).reads;
  const sentMono = fx.clock.monoMs();
  const started = fx.cache.start();
  await waitFor("b read again", async () => (await fx.stats("b")).reads > reads);
  const wallMs = fx.clock.wallMs;
  const monoAfter = fx.clock.monoMs();
  // The wall clock moves on while a's read hangs and b's failure waits behind it.
  fx.clock.wallMs += stepMs;
  // (Its failure's own marks: b may be UNAVAILABLE already, with its provider's outage.)
  await waitFor("b's held failure applied", () => {
    const b = fx.cache.device("p0", "b");
    return b?.available === false && (b.lastFailMono ?? 0) >= sentMono;
  });
  return { wallMs, appliedWallMs: wallMs + stepMs, monoAfter, started };
}

Deno.test("StateCache dates a failed read held behind a hung read of another device by its arrival: its UNAVAILABLE marks and device_availability", async () => {
  const fx = await startHeldRig();
  let started: Promise<void> | undefined;
  try {
    const arrival = await holdFailureOfB(fx);
    started = arrival.started;
    const ofB = fx.events.filter((e) =>
      "device_id" in e && e.device_id === "b" &&
      (e.kind === "device_availability" || e.kind === "quality_change" ||
        e.kind === "state_update")
    );
    const lost = ofB.find((e) => e.kind === "device_availability" && !e.available);
    assert.equal(lost?.timestamp_ms, arrival.wallMs, "b's loss is dated when its failure arrived");
    const change = ofB.find((e) =>
      e.kind === "quality_change" && e.signal_id === "y" && e.new_quality === "UNAVAILABLE"
    );
    assert.equal(change?.timestamp_ms, arrival.wallMs, "y's quality_change: by the arrival");
    const update = ofB.find((e) =>
      e.kind === "state_update" && e.signal_id === "y" && e.quality === "UNAVAILABLE"
    );
    assert.equal(update?.timestamp_ms, arrival.wallMs, "y's state_update: by the arrival");
    const dev = fx.cache.device("p0", "b")!;
    assert.equal(dev.lastFailMs, arrival.wallMs);
    assert.ok(dev.lastFailMono! <= arrival.monoAfter, "its failure's monotonic arrival is kept");
    // The kept value keeps its own dates (when it was read), not the failure's.
    const y = dev.signals.get("y")!;
    assert.ok(y.timestampMs < arrival.wallMs + 60_000 && y.receivedMono < arrival.monoAfter);
    await started;
  } finally {
    await started?.catch(() => {});
    await fx.close();
  }
});

Deno.test("A failed read held behind a hung read of another device starts the device's failing spell and an alarm's bad-quality delay at its arrival", async () => {
  const fx = await startHeldRig();
  const outages = new DeviceOutages({
    registry: fx.registry,
    cache: fx.cache,
    clock: fx.clock,
    downAfterMs: 60_000,
  });
  let started: Promise<void> | undefined;
  try {
    const input = new SignalInput("p0/b/y", "p0", "b", "y");
    assert.equal(input.classify({ cache: fx.cache }, fx.clock.monoMs()), InputProblem.GOOD);
    /** The input as classified when b's failure is applied (as the alarm engine does then). */
    let atApply: { problem: number; badSince: number | null; mono: number } | null = null;
    fx.cache.onDevicePolled((dev) => {
      if (dev.deviceId !== "b" || dev.available || atApply !== null) return;
      const mono = fx.clock.monoMs();
      const problem = input.classify({ cache: fx.cache }, mono);
      atApply = { problem, badSince: input.badSinceMono, mono };
    });
    const arrival = await holdFailureOfB(fx);
    started = arrival.started;
    const seen = atApply as { problem: number; badSince: number | null; mono: number } | null;
    assert.equal(seen?.problem, InputProblem.QUALITY, "y is UNAVAILABLE once the failure is in");
    assert.ok(
      seen!.badSince !== null && seen!.badSince <= arrival.monoAfter,
      `the alarm's delay runs from the failure's arrival, not its apply (bad since ${
        seen!.badSince
      }, arrived by ${arrival.monoAfter}, applied at ${seen!.mono})`,
    );
    const condition = outages.condition("p0", "b");
    assert.equal(condition.kind, "failing");
    assert.ok(
      condition.sinceMono !== null && condition.sinceMono <= arrival.monoAfter,
      `b fails since its failure arrived (since ${condition.sinceMono}, arrived by ${arrival.monoAfter})`,
    );
    await started;
  } finally {
    outages.stop();
    await started?.catch(() => {});
    await fx.close();
  }
});

Deno.test("TelemetryWriter dates the quality-only row of a signal without a value, made UNAVAILABLE by a failed read held behind a hung read, as the cache's quality_change of it: by the failure's arrival", async () => {
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
    await waitFor("z's row at its first quality", () => rowsOfZ("FAULT").length > 0);
    const arrival = await holdFailureOfB(fx);
    started = arrival.started;
    const change = fx.events.find((e) =>
      e.kind === "quality_change" && e.device_id === "b" && e.signal_id === "z" &&
      e.new_quality === "UNAVAILABLE"
    );
    assert.equal(change?.timestamp_ms, arrival.wallMs, "the cache dates z's change by arrival");
    const rows = await waitFor("z's UNAVAILABLE row", () => {
      const r = rowsOfZ("UNAVAILABLE");
      return r.length > 0 ? r : null;
    });
    assert.deepEqual(rows, [arrival.wallMs], "the row is dated as the quality_change");
  } finally {
    await started?.catch(() => {});
    await writer.stop(1000);
    await fx.close();
  }
});

/** A History of `fx`'s cache: no disk tier unless `diskMaxBytes` says, `stepMs` buckets. */
function historyOf(fx: ProgrammableFixture, stepMs: number, diskMaxBytes = 0): History {
  return new History({
    config: { ...DEFAULT_HISTORY, stepMs, diskMaxBytes, memorySeconds: 3600 },
    dataDir: "/data",
    files: new MemoryFiles(),
    clock: fx.clock,
    log: testLogger(),
    cache: fx.cache,
  });
}

/** The times of the polls the history holds of b's y at UNAVAILABLE (full rate). */
async function unavailableTimesOfY(history: History, arrival: Arrival): Promise<number[]> {
  const answer = await history.query({
    providerId: "p0",
    deviceId: "b",
    signalIds: ["y"],
    sinceMs: arrival.wallMs - 60_000,
    untilMs: arrival.appliedWallMs,
  });
  return answer.signals[0]!.points.filter((p) => QUALITY_BY_CODE[p.quality] === "UNAVAILABLE")
    .map((p) => p.t_ms);
}

Deno.test("History records a failed read held behind a hung read of another device at its arrival, as the cache dates its quality_change", async () => {
  const fx = await startHeldRig();
  // One bucket holds the arrival and the apply (an hour, from a multiple of it): none is written
  // while the failure is held.
  const history = historyOf(fx, 3_600_000);
  let started: Promise<void> | undefined;
  try {
    await history.start();
    const arrival = await holdFailureOfB(fx);
    started = arrival.started;
    const change = fx.events.find((e) =>
      e.kind === "quality_change" && e.device_id === "b" && e.signal_id === "y" &&
      e.new_quality === "UNAVAILABLE"
    );
    assert.equal(change?.timestamp_ms, arrival.wallMs, "the cache dates y's change by arrival");
    const times = await unavailableTimesOfY(history, arrival);
    assert.ok(times.length > 0, "the failed read's poll is in the history");
    assert.equal(
      times[0],
      arrival.wallMs,
      `the history dates the held failure as its quality_change, not at its apply ${arrival.appliedWallMs}`,
    );
    await started;
  } finally {
    await started?.catch(() => {});
    await history.stop();
    await fx.close();
  }
});

Deno.test("History records a failed read held across the end of a bucket at the start of the open bucket: not in a bucket already written, not at its apply", async () => {
  const fx = await startHeldRig();
  const STEP_MS = 10_000;
  const history = historyOf(fx, STEP_MS, DEFAULT_HISTORY.diskMaxBytes);
  let started: Promise<void> | undefined;
  try {
    await history.start();
    // a's timeout, applied first (request order) at the wall clock then, crosses into the bucket
    // of the apply: b's bucket of its arrival is written by then.
    const arrival = await holdFailureOfB(fx, 65_000);
    started = arrival.started;
    const open = arrival.appliedWallMs - (arrival.appliedWallMs % STEP_MS);
    assert.ok(arrival.wallMs < open && open < arrival.appliedWallMs);
    const times = await unavailableTimesOfY(history, arrival);
    assert.equal(times[0], open, "dated at the open bucket's start, the nearest to its arrival");
    await started;
    await history.flushDisk();
    assert.equal(history.status().disk.rowsUnreadable, 0, "the disk's rows ascend still");
  } finally {
    await started?.catch(() => {});
    await history.stop();
    await fx.close();
  }
});

/**
 * The runtime's device outages (down after `downAfterMs`) and incident recorder (1 s before,
 * `afterS` after) over `fx`'s cache and `history`, on its clock; the caller starts and stops them.
 */
function incidentsOf(
  fx: ProgrammableFixture,
  history: History,
  downAfterMs: number,
  afterS: number,
): { outages: DeviceOutages; incidents: IncidentRecorder } {
  const outages = new DeviceOutages({
    registry: fx.registry,
    cache: fx.cache,
    clock: fx.clock,
    downAfterMs,
  });
  const incidents = new IncidentRecorder({
    config: {
      ...DEFAULT_HISTORY,
      memorySeconds: 3600,
      incidentBeforeS: 1,
      incidentAfterS: afterS,
    },
    history,
    files: new MemoryFiles(),
    dir: "/data/history/incidents",
    clock: fx.clock,
    log: testLogger(),
    outages,
  });
  return { outages, incidents };
}

Deno.test("IncidentRecorder dates the loss of a device whose failed read was held behind a hung read of another device from that read's arrival, as its device_availability", async () => {
  const fx = await startHeldRig();
  const history = historyOf(fx, 3_600_000);
  // Longer than the hold: b is failing when its failure is applied, down 2 s after it arrived.
  const { outages, incidents } = incidentsOf(fx, history, TIMEOUT_MS + 2000, 1);
  const begun: IncidentBegun[] = [];
  incidents.onIncident((h) => begun.push(h));
  let started: Promise<void> | undefined;
  try {
    await history.start();
    await incidents.start(new EventBus());
    const arrival = await holdFailureOfB(fx);
    started = arrival.started;
    const lost = fx.events.find((e) =>
      e.kind === "device_availability" && e.device_id === "b" && !e.available
    );
    assert.equal(lost?.timestamp_ms, arrival.wallMs, "b's loss is told dated by its arrival");
    const loss = await waitFor(
      "b's loss incident",
      () => begun.find((h) => h.trigger === "device_loss" && h.cause.includes("p0/b")),
    );
    assert.equal(
      loss.at_epoch_ms,
      arrival.wallMs,
      `the incident is dated from the held failure's arrival, not its apply ${arrival.appliedWallMs}`,
    );
    await started;
  } finally {
    await started?.catch(() => {});
    outages.stop();
    await incidents.stop();
    await history.stop();
    await fx.close();
  }
});

Deno.test("IncidentRecorder dates the loss of a device failing as its provider comes back, whose first failed read was held behind a hung read of another device past the down bound, from that read's arrival", async () => {
  const fx = await startHeldRig(true);
  const history = historyOf(fx, 3_600_000);
  // Subscribed to the polls before the history, as in the runtime (Kernel): the loss is told
  // before the ring records the read that brings it.
  // Down bound shorter than the hold: b, failing from no known moment as p0 comes back, is down
  // at once when its first failed read since is applied. The crash's incident still waits for its
  // window (600 s after) when b is lost again.
  const { outages, incidents } = incidentsOf(fx, history, 1000, 600);
  const joined: IncidentJoined[] = [];
  incidents.onIncidentJoined((j) => joined.push(j));
  let started: Promise<void> | undefined;
  try {
    await history.start();
    await incidents.start(new EventBus());
    // p0 crashes and is restarted: b is down with it (the outage's incident), then failing as p0
    // comes back, not read since (the "failing as it comes back" path of the incident recorder).
    const pid = fx.kill();
    await waitFor("p0 back", () => fx.host.available && fx.host.session?.pid !== pid);
    await waitFor("b failing as p0 comes back", () => {
      const c = outages.condition("p0", "b");
      return c.kind === "failing" && c.sinceMono === null;
    });
    const arrival = await holdFailureOfB(fx);
    started = arrival.started;
    assert.equal(outages.condition("p0", "b").kind, "down", "b is down once its failure is in");
    const again = await waitFor(
      "b's loss again, joining the outage's incident",
      () => joined.find((j) => j.trigger === "device_loss" && j.cause.includes("p0/b")),
    );
    assert.equal(
      again.at_epoch_ms,
      arrival.wallMs,
      `b's loss is dated from its first failed read's arrival, not by its apply ${arrival.appliedWallMs}`,
    );
    await started;
  } finally {
    await started?.catch(() => {});
    outages.stop();
    await incidents.stop();
    await history.stop();
    await fx.close();
  }
});

Deno.test("An answer held behind a hung read is not applied once its provider went down meanwhile: the device stays UNAVAILABLE, not told available again by the dead process's word", async () => {
  // The provider's stdout outlives it (a helper it started holds it): its exit is seen at once,
  // its hung read's failure only at timeout_ms -- after its down marks.
  const pidFile = await Deno.makeTempFile({ prefix: "held-helper-", suffix: ".pid" });
  const fx = await startProgrammable({
    devices: {
      a: { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] },
      b: { signals: [{ id: "y", type: T.DOUBLE }], values: [dbl("y", 2)] },
    },
  }, {
    intervalMs: INTERVAL_MS,
    timeoutMs: TIMEOUT_MS,
    sh: `sleep 60 & echo $! > '${pidFile}'; PROVIDER; exit 3`,
  });
  let started: Promise<void> | undefined;
  try {
    await fx.cache.pollDevice("p0", "a");
    await fx.cache.pollDevice("p0", "b");
    await fx.program("a", { read: { hang: true } });
    // From now on b answers 3: its answer in the priming pass waits behind a's hung read.
    await fx.program("b", { read: { values: [dbl("y", 3)] } });
    const reads = (await fx.stats("b")).reads;
    started = fx.cache.start();
    await waitFor("b read again", async () => (await fx.stats("b")).reads > reads);
    // The provider exits (function 3); restarts are off: it stays down.
    await fx.host.request("call", { device_id: "b", function_id: 3 });
    await waitFor("p0 down", () => !fx.host.available);
    assert.equal(fx.cache.device("p0", "b")?.available, false, "b is marked down with p0");
    const downAt = fx.events.length;
    // a's read times out (its deadline: the session's stdout is still open); the priming pass
    // ends with it.
    await started;
    const later = fx.events.slice(downAt).filter((e) => "device_id" in e && e.device_id === "b");
    assert.deepEqual(
      later.map((e) => e.kind),
      [],
      "nothing more is told of b: its held answer is the dead process's word",
    );
    assert.equal(fx.cache.device("p0", "b")?.available, false);
    assert.equal(fx.cache.signal("p0", "b", "y")?.quality, "UNAVAILABLE");
    assert.deepEqual(fx.cache.signal("p0", "b", "y")?.value, { type: "double", double: 2 });
  } finally {
    await started?.catch(() => {});
    const helper = Number((await Deno.readTextFile(pidFile).catch(() => "")).trim());
    if (helper > 0) {
      try {
        Deno.kill(helper, "SIGKILL");
      } catch { /* gone already */ }
    }
    await fx.close();
    await Deno.remove(pidFile).catch(() => {});
  }
});

Deno.test("An answer held behind a hung read is applied before a newer answer of the same device: a post-call poll meanwhile waits for the pass (one pass at a time per provider), so the newer value is the one kept", async () => {
  const fx = await startHeldRig();
  let started: Promise<void> | undefined;
  try {
    await fx.program("a", { read: { hang: true } });
    await fx.program("b", { read: { values: [dbl("y", 3), { id: "z", quality: Q.FAULT }] } });
    const reads = (await fx.stats("b")).reads;
    started = fx.cache.start();
    await waitFor("b read again", async () => (await fx.stats("b")).reads > reads);
    // b's answer (3) waits behind a's read; a newer one (4) is asked for meanwhile.
    await fx.program("b", { read: { values: [dbl("y", 4), { id: "z", quality: Q.FAULT }] } });
    const polled = fx.cache.pollDevice("p0", "b");
    await polled;
    const values = fx.events.filter((e) =>
      e.kind === "state_update" && e.device_id === "b" && e.signal_id === "y"
    ).map((e) => e.kind === "state_update" && e.value.type === "double" ? e.value.double : null);
    assert.deepEqual(values.slice(-2), [3, 4], "the held answer first, then the newer one");
    assert.deepEqual(fx.cache.signal("p0", "b", "y")?.value, { type: "double", double: 4 });
    await started;
    assert.deepEqual(fx.cache.signal("p0", "b", "y")?.value, { type: "double", double: 4 });
  } finally {
    await started?.catch(() => {});
    await fx.close();
  }
});
