/**
 * A device its provider leaves out at a restart (its host check unmet for it: unplugged) and lists
 * again at the next, seen through GET /v0/events: its signals' quality goes UNAVAILABLE when the
 * provider crashes and OK again once it answers, and a stream client told the first by a
 * `quality_change` is told the second by one too -- as it is of a device listed throughout, whose
 * signals the cache kept across the restarts (docs/http-api.md, "Events": `quality_change` whenever
 * the quality changes). So is a device of a provider a reload restarts (its entry changed) or
 * removes and configures again, from down (its circuit open) as from up; and one told `OK` before
 * the reload whose successor's first answer is FAULT or STALE is told that change from `OK`. A
 * device already down when a reload takes its provider out is told its removal too
 * (`reason: "removed"`): it is gone for good, not lost; so is one a restart left out (told lost at
 * the crash). One told `OK` whose successor answers it without that signal is told `UNAVAILABLE`
 * when the successor crashes; one told its removal is told nothing more (no `quality_change` at
 * its successor's crash) until its successor answers it. The programmable provider as a real
 * child process (its inventory read from a file at each start), real HTTP and SSE on loopback.
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { dbl, type Inventory, Q, T } from "../helpers/programmable_provider.ts";
import { EventStream, type ReceivedEvent } from "./alarms_helpers.ts";
import { withHostUnmetRig } from "./_host_unmet_rig.ts";
import type { Kernel } from "../../src/app/kernel.ts";

const PROBE = { signals: [{ id: "x", type: T.DOUBLE }], values: [dbl("x", 1)] };
const KEPT = { signals: [{ id: "y", type: T.DOUBLE }], values: [dbl("y", 2)] };
/** Both devices listed. */
const BOTH: Inventory = { devices: { probe: PROBE, kept: KEPT } };
/** `probe` left out (its bus node gone), `kept` still listed. */
const PROBE_UNPLUGGED: Inventory = { devices: { kept: KEPT } };

/** The quality changes of `device` in `frames`, as `old>new`. */
function qualityChanges(frames: readonly ReceivedEvent[], device: string): string[] {
  return frames
    .filter((f) => f.event === "quality_change" && f.data.device_id === device)
    .map((f) => `${f.data.old_quality}>${f.data.new_quality}`);
}

/** The device_availability frames of `device` in `frames`, as `available[:reason]`. */
function availabilityOf(frames: readonly ReceivedEvent[], device: string): string[] {
  return frames
    .filter((f) => f.event === "device_availability" && f.data.device_id === device)
    .map((f) => `${f.data.available}${f.data.reason ? `:${f.data.reason}` : ""}`);
}

Deno.test("a device listed again after a restart that left it out gets the quality_change back to OK a device listed throughout gets", async () => {
  await withHostUnmetRig("sse-relisted-", BOTH, {}, async ({ rt, api, restartAs }) => {
    const pol = rt.registry.host("pol")!;
    await waitFor(
      "both devices answered",
      () =>
        rt.cache.device("pol", "probe")?.available === true &&
        rt.cache.device("pol", "kept")?.available === true,
    );
    const stream = await EventStream.open(api.base);
    try {
      // Crashed, back without probe; crashed again, back with it.
      await restartAs(
        pol,
        PROBE_UNPLUGGED,
        "pol back without probe",
        (h) => h.devices.length === 1,
      );
      await waitFor(
        "kept answering again",
        () => rt.cache.device("pol", "kept")?.available === true,
      );
      await restartAs(pol, BOTH, "pol back with probe", (h) => h.devices.length === 2);
      await waitFor(
        "both answering again",
        () =>
          rt.cache.device("pol", "probe")?.available === true &&
          rt.cache.device("pol", "kept")?.available === true,
      );
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      assert.deepEqual(
        qualityChanges(stream.frames, "kept"),
        ["OK>UNAVAILABLE", "UNAVAILABLE>OK", "OK>UNAVAILABLE", "UNAVAILABLE>OK"],
        "the device listed throughout",
      );
      assert.deepEqual(
        qualityChanges(stream.frames, "probe"),
        ["OK>UNAVAILABLE", "UNAVAILABLE>OK"],
        "the device left out once: told UNAVAILABLE at the crash, OK once back",
      );
      const state = await api.get("/v0/state/pol/probe");
      assert.equal(state.json.values[0].quality, "OK");
    } finally {
      await stream.close();
    }
  });
});

Deno.test("a provider a reload restarts or removes and configures again: its devices' quality_change says their return from the crash before, not their going while up", async () => {
  await withHostUnmetRig("sse-reload-quality-", BOTH, {}, async ({ rt, api, file }) => {
    const entry = rt.config.providers.find((p) => p.id === "pol")!;
    const file2 = file.replace(/\.json$/, "-2.json");
    await Deno.writeTextFile(file2, JSON.stringify(BOTH));
    /** pol's entry changed (another inventory file): a reload restarts it. */
    const changed = { ...entry, args: [...entry.args.slice(0, -1), file2] };
    const pol = () => rt.registry.host("pol");
    const answering = (what: string) =>
      waitFor(
        what,
        () =>
          pol()?.available === true &&
          rt.cache.device("pol", "probe")?.available === true &&
          rt.cache.device("pol", "kept")?.available === true,
        30_000,
      );
    const reload = async (
      providers: typeof rt.config.providers,
      kind: "added" | "restarted" | "removed",
    ) => {
      const report = await rt.reload({ ...rt.config, providers });
      assert.deepEqual(report.providers[kind], ["pol"], kind);
    };
    /** pol's process crashes and every restart fails (its inventory unreadable): down for good. */
    const crashForGood = async (inventoryFile: string) => {
      await Deno.writeTextFile(inventoryFile, "not json");
      Deno.kill(pol()!.session!.pid, "SIGKILL");
      await waitFor("pol's circuit open", () => pol()!.lifecycle === "CIRCUIT_OPEN", 30_000);
    };
    await answering("pol answering");
    const stream = await EventStream.open(api.base);
    try {
      // Up: restarted by a reload; removed by one, configured again by the next.
      await reload([changed], "restarted");
      await answering("pol restarted while up answering");
      await reload([], "removed");
      await reload([entry], "added");
      await answering("pol configured again answering");
      // Down: restarted by a reload (the changed entry's file readable).
      await crashForGood(file);
      await reload([changed], "restarted");
      await answering("pol restarted while down answering");
      // Down: removed by a reload, configured again by the next.
      await crashForGood(file2);
      await reload([], "removed");
      await Deno.writeTextFile(file, JSON.stringify(BOTH));
      await reload([entry], "added");
      await answering("pol configured again after its removal while down answering");
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      for (const device of ["probe", "kept"]) {
        assert.deepEqual(
          availabilityOf(stream.frames, device),
          // Up: removed, back (twice); down: lost, removed, back (twice).
          [
            "false:removed",
            "true",
            "false:removed",
            "true",
            "false",
            "false:removed",
            "true",
            "false",
            "false:removed",
            "true",
          ],
          `${device}'s availability`,
        );
        assert.deepEqual(
          qualityChanges(stream.frames, device),
          ["OK>UNAVAILABLE", "UNAVAILABLE>OK", "OK>UNAVAILABLE", "UNAVAILABLE>OK"],
          `${device}: told UNAVAILABLE at each crash, OK once its successor answers`,
        );
      }
    } finally {
      await stream.close();
    }
  });
});

/** Both devices listed, answering FAULT (probe) and STALE (kept). */
const BOTH_BAD: Inventory = {
  devices: {
    probe: { ...PROBE, values: [dbl("x", 1, { quality: Q.FAULT })] },
    kept: { ...KEPT, values: [dbl("y", 2, { quality: Q.STALE })] },
  },
};

Deno.test("a provider a reload restarts or removes and configures again while up: a first answer FAULT or STALE is told as the quality_change from OK it is", async () => {
  await withHostUnmetRig("sse-reload-bad-", BOTH, {}, async ({ rt, api, file }) => {
    const entry = rt.config.providers.find((p) => p.id === "pol")!;
    const file2 = file.replace(/\.json$/, "-2.json");
    await Deno.writeTextFile(file2, JSON.stringify(BOTH_BAD));
    /** pol's entry changed (another inventory file, answering FAULT and STALE): restarted. */
    const changed = { ...entry, args: [...entry.args.slice(0, -1), file2] };
    const answering = (what: string) =>
      waitFor(
        what,
        () =>
          rt.registry.host("pol")?.available === true &&
          rt.cache.device("pol", "probe")?.available === true &&
          rt.cache.device("pol", "kept")?.available === true,
        30_000,
      );
    const reload = async (
      providers: typeof rt.config.providers,
      kind: "added" | "restarted" | "removed",
    ) => {
      const report = await rt.reload({ ...rt.config, providers });
      assert.deepEqual(report.providers[kind], ["pol"], kind);
    };
    await answering("pol answering");
    const stream = await EventStream.open(api.base);
    try {
      // Up and OK: restarted answering FAULT and STALE; restarted answering OK again.
      await reload([changed], "restarted");
      await answering("pol restarted answering FAULT and STALE");
      await reload([entry], "restarted");
      await answering("pol restarted answering OK");
      // Up and OK: removed; configured again answering FAULT and STALE.
      await reload([], "removed");
      await Deno.writeTextFile(file, JSON.stringify(BOTH_BAD));
      await reload([entry], "added");
      await answering("pol configured again answering FAULT and STALE");
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      assert.deepEqual(
        qualityChanges(stream.frames, "probe"),
        ["OK>FAULT", "FAULT>OK", "OK>FAULT"],
        "probe: told OK, then FAULT by each successor answering FAULT",
      );
      assert.deepEqual(
        qualityChanges(stream.frames, "kept"),
        ["OK>STALE", "STALE>OK", "OK>STALE"],
        "kept: told OK, then STALE by each successor answering STALE",
      );
      // The killed process's OK value was never served as its successor's.
      const state = await api.get("/v0/state/pol/probe");
      assert.equal(state.json.values[0].quality, "FAULT");
    } finally {
      await stream.close();
    }
  });
});

Deno.test("a device a restart left out (told lost at the crash) whose provider a reload then removes is told its removal, as the device listed is", async () => {
  await withHostUnmetRig("sse-departed-removed-", BOTH, {}, async ({ rt, api, restartAs }) => {
    const pol = rt.registry.host("pol")!;
    await waitFor(
      "both devices answered",
      () =>
        rt.cache.device("pol", "probe")?.available === true &&
        rt.cache.device("pol", "kept")?.available === true,
    );
    const stream = await EventStream.open(api.base);
    try {
      // Crashed (both told lost), back without probe; kept answers again.
      await restartAs(
        pol,
        PROBE_UNPLUGGED,
        "pol back without probe",
        (h) => h.devices.length === 1,
      );
      await waitFor(
        "kept answering again",
        () => rt.cache.device("pol", "kept")?.available === true,
      );
      const report = await rt.reload({ ...rt.config, providers: [] });
      assert.deepEqual(report.providers.removed, ["pol"]);
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      assert.deepEqual(availabilityOf(stream.frames, "kept"), ["false", "true", "false:removed"]);
      assert.deepEqual(
        availabilityOf(stream.frames, "probe"),
        ["false", "false:removed"],
        "probe: told lost at the crash, then gone for good with its provider",
      );
    } finally {
      await stream.close();
    }
  });
});

/** probe with a long stale bound (10 min): an OK sample, or its told-OK mark, stays OK throughout. */
const PROBE_LONG = {
  signals: [{ id: "x", type: T.DOUBLE, staleMs: 600_000 }],
  values: [dbl("x", 1)],
};

/**
 * pol's entry changed to read `first` (another inventory file), for a reload to restart it; and
 * `kill`, which writes `next` to that file when given, kills pol's process and waits for its
 * supervisor's next one (and for `ready`, when given).
 */
async function changedEntry(rt: Kernel, file: string, first: Inventory) {
  const entry = rt.config.providers.find((p) => p.id === "pol")!;
  const file2 = file.replace(/\.json$/, "-2.json");
  await Deno.writeTextFile(file2, JSON.stringify(first));
  const pol = () => rt.registry.host("pol")!;
  return {
    changed: { ...entry, args: [...entry.args.slice(0, -1), file2] },
    async kill(what: string, next?: Inventory, ready: () => boolean = () => true) {
      if (next) await Deno.writeTextFile(file2, JSON.stringify(next));
      const pid = pol().session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor(
        what,
        () => pol().available && pol().session!.pid !== pid && ready(),
        30_000,
      );
    },
  };
}

/** probe listed, its reads answered without its signal: no sample of it. */
const SILENT_PROBE: Inventory = { devices: { probe: { signals: PROBE_LONG.signals }, kept: KEPT } };

/**
 * Once probe answers, a reload restarts pol onto SILENT_PROBE (changedEntry) while an event stream
 * is open; waits (30 s) for `answered` -- the successor's answer of probe, as the case sees it --
 * and asserts no sample of probe; then runs `body` with the stream (closed after it) and
 * changedEntry's `kill`.
 */
async function reloadOntoSilent(
  rt: Kernel,
  api: { readonly base: string },
  file: string,
  answered: () => boolean,
  body: (
    stream: EventStream,
    kill: Awaited<ReturnType<typeof changedEntry>>["kill"],
  ) => Promise<void>,
): Promise<void> {
  const { changed, kill } = await changedEntry(rt, file, SILENT_PROBE);
  await waitFor(
    "probe answering",
    () => rt.cache.device("pol", "probe")?.available === true,
    30_000,
  );
  const stream = await EventStream.open(api.base);
  try {
    const report = await rt.reload({ ...rt.config, providers: [changed] });
    assert.deepEqual(report.providers.restarted, ["pol"]);
    await waitFor("the successor answered a read of probe", answered, 30_000);
    assert.equal(rt.cache.device("pol", "probe")!.signals.size, 0);
    await body(stream, kill);
  } finally {
    await stream.close();
  }
}

Deno.test("a device that drops out under the successor of a reload's restart, then is left out at a rediscovery: told UNAVAILABLE at the crash, its first answer after is the quality_change from it", async () => {
  const start: Inventory = { devices: { probe: PROBE_LONG, kept: KEPT } };
  await withHostUnmetRig("sse-reload-dropout-", start, {}, async ({ rt, api, file }) => {
    // The successor lists probe, but probe has dropped out: its reads are answered without its
    // signal (none of its polled signals answered: failing), so it never gives a sample.
    const pol = () => rt.registry.host("pol")!;
    await reloadOntoSilent(
      rt,
      api,
      file,
      () => rt.cache.device("pol", "probe")?.lastPollMs !== 0,
      async (stream, kill) => {
        // It crashes; its restart leaves probe out; the next lists it, answering FAULT.
        await kill(
          "pol back without probe",
          { devices: { kept: KEPT } },
          () => pol().devices.length === 1,
        );
        const bad: Inventory = {
          devices: {
            probe: { ...PROBE_LONG, values: [dbl("x", 1, { quality: Q.FAULT })] },
            kept: KEPT,
          },
        };
        await kill("pol back with probe", bad, () => pol().devices.length === 2);
        await waitFor(
          "probe answering FAULT",
          () => rt.cache.device("pol", "probe")?.signals.get("x")?.quality === "FAULT",
          30_000,
        );
        // A later event: the stream, in bus order, has delivered everything published before it.
        assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
        await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

        // Answered by the successor (told available again), its told-OK mark is told UNAVAILABLE
        // at the crash, as a sample is; that crosses the rediscovery that leaves it out.
        assert.deepEqual(
          qualityChanges(stream.frames, "probe"),
          ["OK>UNAVAILABLE", "UNAVAILABLE>FAULT"],
          "probe: told OK before the reload, UNAVAILABLE at its successor's crash, FAULT since",
        );
      },
    );
  });
});

Deno.test("a device told OK before a reload's restart whose successor answers it without its signal is told the quality_change OK>UNAVAILABLE when the successor crashes", async () => {
  const start: Inventory = { devices: { probe: PROBE_LONG, kept: KEPT } };
  await withHostUnmetRig("sse-told-ok-crash-", start, {}, async ({ rt, api, file }) => {
    // The successor lists probe, but answers its reads without its signal: it holds its told-OK
    // mark (a long stale bound: the mark does not go STALE meanwhile).
    await reloadOntoSilent(
      rt,
      api,
      file,
      () => rt.cache.device("pol", "probe")?.available === true,
      async (stream, kill) => {
        await kill("the successor's next process up");
        await waitFor(
          "probe answered again",
          () => rt.cache.device("pol", "probe")?.available === true,
          30_000,
        );
        // A later event: the stream, in bus order, has delivered everything published before it.
        assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
        await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

        assert.deepEqual(
          availabilityOf(stream.frames, "probe"),
          ["false:removed", "true", "false", "true"],
        );
        assert.deepEqual(
          qualityChanges(stream.frames, "probe"),
          ["OK>UNAVAILABLE"],
          "probe: told OK before the reload, told UNAVAILABLE at its successor's crash",
        );
        // No value of the killed process: UNAVAILABLE without one.
        const state = await api.get("/v0/state/pol/probe");
        assert.deepEqual(
          state.json.values.map((v: { value: unknown; quality: string }) => [v.value, v.quality]),
          [[{ type: "unknown" }, "UNAVAILABLE"]],
        );
      },
    );
  });
});

Deno.test("a device told its removal by a reload's restart is told nothing more until its successor answers it: no quality_change at the successor's crash before then", async () => {
  const faulty = { ...PROBE, values: [dbl("x", 1, { quality: Q.FAULT })] };
  const start: Inventory = { devices: { probe: faulty, kept: KEPT } };
  await withHostUnmetRig("sse-removed-quiet-", start, {}, async ({ rt, api, file }) => {
    // The successor lists probe, but its reads of probe are not answered (10 min): no answer of
    // it before the crash. kept listed first: its answer is taken without waiting for probe's.
    const hung: Inventory = {
      devices: { kept: KEPT, probe: { ...PROBE, readDelayMs: 600_000 } },
    };
    const { changed, kill } = await changedEntry(rt, file, hung);
    const keptAnswered = (what: string) =>
      waitFor(what, () => rt.cache.device("pol", "kept")?.available === true, 30_000);
    await waitFor(
      "probe answering FAULT",
      () => rt.cache.device("pol", "probe")?.signals.get("x")?.quality === "FAULT",
      30_000,
    );
    const stream = await EventStream.open(api.base);
    try {
      const report = await rt.reload({ ...rt.config, providers: [changed] });
      assert.deepEqual(report.providers.restarted, ["pol"]);
      await keptAnswered("kept answered by the successor");
      await kill("the successor's next process up");
      await keptAnswered("kept answered again");
      // What the cache holds of probe after the crash (asserted below).
      const held = rt.cache.device("pol", "probe")!.signals.get("x")?.quality;
      // The next process answers probe OK: back, told as the change from the FAULT told before.
      await kill("a process answering probe up", { devices: { kept: KEPT, probe: PROBE } });
      await waitFor(
        "probe answering OK",
        () => rt.cache.device("pol", "probe")?.signals.get("x")?.quality === "OK",
        30_000,
      );
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      assert.deepEqual(availabilityOf(stream.frames, "probe"), ["false:removed", "true"]);
      assert.deepEqual(
        qualityChanges(stream.frames, "probe"),
        ["FAULT>OK"],
        "probe: nothing said between its removal and its return, then the change from FAULT",
      );
      assert.equal(held, "FAULT", "the cache held what the client was last told of probe");
    } finally {
      await stream.close();
    }
  });
});

/** The quality changes of `device`'s `signal` in `frames`, as `old>new`. */
function signalQualityChanges(
  frames: readonly ReceivedEvent[],
  device: string,
  signal: string,
): string[] {
  return qualityChanges(frames.filter((f) => f.data.signal_id === signal), device);
}

Deno.test("a signal a restart left out of a device still listed, declared again at the next: its first answer is the quality_change back to OK its sibling declared throughout gets", async () => {
  /** probe with x and y. */
  const withY: Inventory = {
    devices: {
      probe: {
        signals: [{ id: "x", type: T.DOUBLE }, { id: "y", type: T.DOUBLE }],
        values: [dbl("x", 1), dbl("y", 3)],
      },
    },
  };
  /** probe listed without y (its sensor unplugged). */
  const withoutY: Inventory = { devices: { probe: PROBE } };
  await withHostUnmetRig("sse-signal-relisted-", withY, {}, async ({ rt, api, restartAs }) => {
    const pol = rt.registry.host("pol")!;
    const y = () => rt.cache.signal("pol", "probe", "y");
    await waitFor("y answered", () => y()?.quality === "OK");
    const stream = await EventStream.open(api.base);
    try {
      await restartAs(pol, withoutY, "pol back without y", () => y() === undefined);
      await waitFor(
        "x answering again",
        () => rt.cache.signal("pol", "probe", "x")?.quality === "OK",
      );
      const without = (await api.get("/v0/state/pol/probe")).json;
      assert.deepEqual(without.values.map((v: { signal_id: string }) => v.signal_id), ["x"]);
      await restartAs(pol, withY, "pol back with y", () => y() !== undefined);
      await waitFor("y answering again", () => y()?.quality === "OK");
      // A later event: the stream, in bus order, has delivered everything published before it.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor("the mode change streamed", () => stream.of("mode_change").length === 1);

      assert.deepEqual(
        signalQualityChanges(stream.frames, "probe", "x"),
        ["OK>UNAVAILABLE", "UNAVAILABLE>OK", "OK>UNAVAILABLE", "UNAVAILABLE>OK"],
        "x, declared throughout",
      );
      assert.deepEqual(
        signalQualityChanges(stream.frames, "probe", "y"),
        ["OK>UNAVAILABLE", "UNAVAILABLE>OK"],
        "y, left out once: told UNAVAILABLE at the crash, OK once back",
      );
    } finally {
      await stream.close();
    }
  });
});
