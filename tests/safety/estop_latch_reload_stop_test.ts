/**
 * A configuration reload that stops a provider (removes it, or restarts it: its entry changed),
 * and the runtime's own stop (Kernel.stop, SIGTERM), wait for the e-stop's ladder calls to it from
 * the latch itself (docs/safety.md, step 2): the
 * latch engages synchronously and the ladder queues its calls a turn later, so a reload whose wait
 * began in between -- in the trigger's own turn -- saw no ladder call yet, stopped the provider,
 * and the ladder's call failed (`UNAVAILABLE: provider session ended: closed by the runtime`).
 * A second stop signal while the runtime's stop waits ends that wait at once (shutDown's hurry,
 * StopDeadline.hurried).
 * Also a second trigger while the first ladder runs, a provider down at the latch (its call fails
 * unsent; nothing is waited for), and a provider that comes back while latched (its securing run
 * is decided in the step it becomes AVAILABLE and queues its calls a turn later). The runtime's stop
 * also waits for the stop actions to a provider a reload still running (another of its starts
 * pending) has added: its entry is not in effect yet, but the zero rung and its securing run call it.
 * In-process: the kernel on a manual clock, the plant provider (one request at a time) whose
 * actuating calls take LATENCY_MS.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { EstopResult } from "../../src/safety/mod.ts";
import type { ProviderSummary } from "../../src/state/mod.ts";
import { ManualClock, runToSettle, runUntil } from "../helpers/clock.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { call, plantProvider } from "./_fixture.ts";
import { shutDown } from "../../src/app/process.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { plantProgram, TEST_PROGRAMS } from "../helpers/programs.ts";

/** plant's timeout_ms. */
const TIMEOUT_MS = 5000;
/** How long each actuating call to plant takes (well within TIMEOUT_MS). */
const LATENCY_MS = 500;

/** plant, its ladder one call (set_fan to 0); `restart`: its supervisor restarts it once. */
function plantRig(clock: ManualClock, restart = false): Promise<Rig> {
  return rig({
    clock,
    providers: [
      plantProvider("plant", {
        latencyMs: LATENCY_MS,
        timeoutMs: TIMEOUT_MS,
        ...(restart ? { restartBackoffMs: 100 } : {}),
      }),
    ],
    pollingIntervalMs: 60_000,
    safety: { hooks: [call("plant/plant0", "set_fan", { duty: { double: 0 } })] },
    arm: true,
  });
}

/** The configuration without plant (and without the ladder call that names it). */
function withoutPlant(c: Config): Config {
  return {
    ...c,
    providers: [],
    safety: { ...c.safety, safeState: { ...c.safety.safeState, hooks: [] } },
  };
}

/** The configuration with plant's entry changed (a restart). */
function plantChanged(c: Config): Config {
  return {
    ...c,
    providers: c.providers.map((p) => ({ ...p, timeoutMs: TIMEOUT_MS + 1000 })),
  };
}

const RELOADS = [
  { how: "removes", next: withoutPlant, listed: "removed" },
  { how: "restarts", next: plantChanged, listed: "restarted" },
] as const;

const MADE = [{ device_handle: "plant/plant0", function: "set_fan", success: true }];

/** The reload's lines about plant: one, it waited for the ladder's calls then stopped it. */
function assertWaitedForLadder(lines: readonly string[]): void {
  const about = lines.filter((l) => l.includes("reload: ") && l.includes(" to plant"));
  assert.equal(about.length, 1, about.join("\n"));
  assert.match(
    about[0]!,
    /^INFO .*reload: waited \d+ ms for the e-stop's safe-state calls to plant, then stopped it$/,
  );
}

for (const { how, next, listed } of RELOADS) {
  for (const turns of [0, 1, 3]) {
    Deno.test(`Estop latch: a reload that ${how} the provider ${turns} turn(s) after the trigger waits for the ladder's call`, async () => {
      const clock = new ManualClock();
      await using r = await plantRig(clock);
      const rt = r.kernel;
      const stop = rt.estop.trigger("latch x reload");
      for (let i = 0; i < turns; i++) await Promise.resolve();
      const report = rt.reload(next(rt.config));
      const result = await runToSettle(clock, stop, "the e-stop");
      assert.deepEqual(result.actions, MADE);
      assert.deepEqual((await runToSettle(clock, report, "the reload")).providers[listed], [
        "plant",
      ]);
      assertWaitedForLadder(r.lines);
    });
  }

  Deno.test(`Estop latch: a second trigger while the first ladder runs, then a reload that ${how} the provider: both ladders' calls are made first`, async () => {
    const clock = new ManualClock();
    await using r = await plantRig(clock);
    const rt = r.kernel;
    const fake = r.provider<FakeProvider>("plant");
    const first = rt.estop.trigger("first");
    await runUntil(clock, "the first ladder's call at plant", () => fake.count("call") === 1);
    const second = rt.estop.trigger("second");
    const report = rt.reload(next(rt.config));
    const results: EstopResult[] = [
      await runToSettle(clock, first, "the first e-stop"),
      await runToSettle(clock, second, "the second e-stop"),
    ];
    assert.deepEqual(results.map((s) => s.actions), [MADE, MADE]);
    assert.equal(fake.count("call"), 2, "each ladder's call was made at plant's first process");
    assert.deepEqual((await runToSettle(clock, report, "the reload")).providers[listed], [
      "plant",
    ]);
    assertWaitedForLadder(r.lines);
  });
}

Deno.test("Estop latch: a provider down at the latch is not waited for: a reload restarts it at once and the e-stop secures it when it is up", async () => {
  const clock = new ManualClock();
  await using r = await plantRig(clock);
  const rt = r.kernel;
  r.kill("plant");
  await runUntil(clock, "plant down", () => rt.inventory.provider("plant")?.available === false);
  const stop = rt.estop.trigger("latch x down");
  const report = rt.reload(plantChanged(rt.config));
  const result = await runToSettle(clock, stop, "the e-stop");
  assert.equal(result.actions.length, 1);
  assert.match(result.actions[0]!.error ?? "", /^UNAVAILABLE: Provider unavailable: plant$/);
  const done = await runToSettle(clock, report, "the reload");
  assert.deepEqual(done.providers.restarted, ["plant"]);
  // Its new process was brought to the safe state by the e-stop (the reload counts its call).
  assert.equal(done.estopActions, 1);
  assert.deepEqual(done.estopFailures, []);
  const waited = r.lines.filter((l) => l.includes("reload: ") && l.includes(" to plant"));
  assert.deepEqual(waited, [], "nothing to wait for: its call failed unsent");
});

for (const { how, next, listed } of RELOADS) {
  Deno.test(`Estop securing run: a reload that ${how} a provider in the step it comes back while latched waits for its securing call`, async () => {
    const clock = new ManualClock();
    await using r = await plantRig(clock, true);
    const rt = r.kernel;
    await runToSettle(clock, rt.estop.trigger("latched"), "the e-stop");
    // Its supervisor restarts it; in the step it becomes AVAILABLE (the e-stop has decided to
    // secure it, its listener comes first), a reload stops it.
    let back: ProviderSummary | null = null;
    let report: ReturnType<typeof rt.reload> | null = null;
    rt.inventory.onAvailability((p, up) => {
      if (!up || p.id !== "plant" || report !== null) return;
      back = p;
      report = rt.reload(next(rt.config));
    });
    r.kill("plant");
    await runUntil(clock, "plant back", () => report !== null);
    const secured = rt.estop.securing(back!);
    assert.notEqual(secured, null, "the e-stop secures plant as it comes back");
    assert.deepEqual(await runToSettle(clock, secured!, "its securing run"), MADE);
    assert.deepEqual((await runToSettle(clock, report!, "the reload")).providers[listed], [
      "plant",
    ]);
    assertWaitedForLadder(r.lines);
  });
}

/** plant, its ladder two calls (set_fan to 0, then the heater off), each taking `latencyMs`. */
function twoCallRig(clock: ManualClock, latencyMs = LATENCY_MS): Promise<Rig> {
  return rig({
    clock,
    providers: [plantProvider("plant", { latencyMs, timeoutMs: TIMEOUT_MS })],
    pollingIntervalMs: 60_000,
    safety: {
      hooks: [
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
        call("plant/plant0", "set_heater", { enabled: false }),
      ],
    },
    arm: true,
  });
}

/** The lines of the runtime's stop about the stop actions to plant, without level and time. */
function stopLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes("stop: ") && l.includes(" to plant"))
    .map((l) => l.replace(/^(\S+)\s+\S+ /, "$1 "));
}

Deno.test("Kernel.stop in the trigger's own turn waits for the e-stop's ladder calls before it stops the provider", async () => {
  const clock = new ManualClock();
  await using r = await twoCallRig(clock);
  const rt = r.kernel;
  const fake = r.provider<FakeProvider>("plant");
  const stop = rt.estop.trigger("latch x shutdown");
  const stopped = rt.stop(); // SIGTERM as the e-stop latches
  const result = await runToSettle(clock, stop, "the e-stop");
  await runToSettle(clock, stopped, "the runtime's stop");
  assert.equal(fake.count("call"), 2, "plant got both ladder calls before it was stopped");
  assert.deepEqual(result.actions, [
    ...MADE,
    { device_handle: "plant/plant0", function: "set_heater", success: true },
  ]);
  const about = stopLines(r.lines);
  assert.equal(about.length, 1, about.join("\n"));
  assert.match(
    about[0]!,
    /^INFO stop: waited \d+ ms for the e-stop's safe-state calls to plant, then stopped the providers$/,
  );
});

Deno.test("Kernel.stop waits for the e-stop's ladder calls at most runtime.shutdown_timeout_ms without a process deadline, then stops the provider and says so", async () => {
  const clock = new ManualClock();
  // Each call takes longer than the wait's bound (shutdown_timeout_ms, 2000 ms here), within its
  // own timeout_ms.
  await using r = await twoCallRig(clock, 3000);
  const rt = r.kernel;
  assert.equal(rt.config.runtime.shutdownTimeoutMs, 2000);
  const fake = r.provider<FakeProvider>("plant");
  const stop = rt.estop.trigger("latch x shutdown, slow provider");
  const stopped = rt.stop();
  const result = await runToSettle(clock, stop, "the e-stop");
  await runToSettle(clock, stopped, "the runtime's stop");
  assert.equal(fake.count("call"), 1, "plant was stopped under its first ladder call");
  assert.equal(result.actions.length, 2);
  assert.ok(result.actions.every((a) => !a.success), "both cut off by the provider's stop");
  assert.deepEqual(stopLines(r.lines), [
    "WARN stop: the e-stop's safe-state calls to plant had not finished within 2000 ms; " +
    "the providers are stopped all the same" +
    ", the e-stop's read-back of the safe state not waited for (a check it has not read then " +
    "says unreachable)",
  ]);
  // Said in that one line: no second line for the read-back the wait left no time for.
  assert.ok(!r.lines.some((l) => l.includes("stop: the e-stop's read-back")), r.lines.join("\n"));
});

Deno.test("shutDown: a second stop signal while Kernel.stop waits for the e-stop's ladder calls ends that wait at once and the providers are stopped", async () => {
  const clock = new ManualClock();
  // Each call takes 3000 ms (within its timeout_ms): the two end well past the hurried deadline
  // (HURRIED_SHUTDOWN_MS) but within the wait's bound from the whole budget (7500 ms, the API on).
  await using r = await twoCallRig(clock, 3000);
  const rt = r.kernel;
  const fake = r.provider<FakeProvider>("plant");
  const { log } = capturingLogger({ level: "info", now: () => clock.nowMs() });
  let repeat: (signal: Deno.Signal) => void = () => {};
  const stop = rt.estop.trigger("latch x shutdown, hurried");
  // killProviders does nothing here (shutdown_deadline_test.ts's rig): the provider's calls are
  // not ended by the hurry's SIGKILL, only the wait's own end lets the kernel stop it.
  const exit = shutDown(
    (d) => rt.stop(d), // SIGTERM as the e-stop latches
    { onRepeat: (l) => (repeat = l) },
    rt.config,
    log,
    { clock, killProviders: () => Promise.resolve() },
  );
  await runUntil(clock, "the first ladder call at plant", () => fake.count("call") === 1);
  repeat("SIGTERM"); // while the wait for the ladder's calls is under way
  await runToSettle(clock, exit, "the hurried shutdown");
  const result = await runToSettle(clock, stop, "the e-stop");
  await runToSettle(clock, rt.stop(), "the runtime's stop");
  assert.equal(fake.count("call"), 1, "plant was stopped under its first ladder call");
  assert.ok(result.actions.every((a) => !a.success), "both cut off by the provider's stop");
  assert.deepEqual(stopLines(r.lines), [
    "WARN stop: the e-stop's safe-state calls to plant had not finished when a second stop " +
    "signal hurried the stop (after 0 ms); the providers are stopped all the same" +
    ", the e-stop's read-back of the safe state not waited for (a check it has not read then " +
    "says unreachable)",
  ]);
  // Said in that one line: no second line for the read-back the wait left no time for.
  assert.ok(!r.lines.some((l) => l.includes("stop: the e-stop's read-back")), r.lines.join("\n"));
});

/** The command of a plant whose Hello never answers: its start hangs (a reload waits for it). */
const HELLO_HANGS = "plant-hello-hangs";

/** plant2's calls: its ladder's (the zero rung), or its securing run's (it came up latched). */
const ADDED_PLANT_CALLS = [
  { device_handle: "plant2/plant0", function: "set_heater", success: true },
  { device_handle: "plant2/plant0", function: "set_fan", success: true },
];

for (const latchedFirst of [false, true]) {
  const what = latchedFirst
    ? "its securing run's calls (it came up latched)"
    : "the ladder's calls";
  Deno.test(`Kernel.stop during a reload that added a provider (another of its starts pending) waits for ${what} to it`, async () => {
    const clock = new ManualClock();
    // The zero rung: a stop zeroes every actuating function of every provider listed, the one the
    // reload added too. Its read-back expects nothing (its wait is short: verify_timeout_ms 100).
    await using r = await rig({
      clock,
      providers: [plantProvider("plant")],
      pollingIntervalMs: 60_000,
      safety: { zeroIsSafe: true, verifyTimeoutMs: 100 },
      arm: true,
      programs: {
        ...TEST_PROGRAMS,
        [HELLO_HANGS]: (host) => {
          const fake = plantProgram(host);
          fake.answer("hello", { hang: true });
          return fake;
        },
      },
    });
    const rt = r.kernel;
    if (latchedFirst) await runToSettle(clock, rt.estop.trigger("latched"), "the e-stop");
    // plant2's two calls take 1600 ms together: past the read-back's wait (100 + 1000 ms),
    // within the stop actions' (runtime.shutdown_timeout_ms, 2000 ms here).
    const next: Config = {
      ...rt.config,
      providers: [
        ...rt.config.providers,
        plantProvider("plant2", { latencyMs: 800 }),
        { ...plantProvider("late"), command: HELLO_HANGS, args: [] },
      ],
    };
    const report = rt.reload(next);
    const plant2 = await runUntil(clock, "plant2 up", () => {
      const host = rt.inventory.provider("plant2");
      return host?.available === true ? host : null;
    });
    assert.ok(!rt.config.providers.some((p) => p.id === "plant2"), "the reload still runs");
    const made = latchedFirst
      ? rt.estop.securing(plant2)!
      : rt.estop.trigger("latch x shutdown during a reload")
        .then((s) => s.actions.filter((a) => a.device_handle === "plant2/plant0"));
    const stopped = rt.stop();
    const actions = await runToSettle(clock, made, "plant2's stop actions");
    await runToSettle(clock, stopped, "the runtime's stop");
    await runToSettle(clock, report, "the reload");
    assert.deepEqual(actions, ADDED_PLANT_CALLS);
    const waited = r.lines.filter((l) => l.includes("stop: ") && l.includes("safe-state calls"));
    assert.equal(waited.length, 1, waited.join("\n"));
    assert.match(
      waited[0]!,
      /INFO .*stop: waited \d+ ms for the e-stop's safe-state calls to (plant, )?plant2, then stopped the providers$/,
    );
  });
}
