/**
 * A clear during a securing run (a provider that came back while latched, its safe-state calls
 * being made) ends that run: the call on the wire answers (it cannot be recalled), the rest of the
 * provider's safe-state calls are not made after the operator took the machine back, one line
 * says so; and a press again meanwhile gets its own stop, its ladder calls right behind the call on
 * the wire (docs/safety.md, "A provider that comes back while latched").
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { PLANT_MAIN, plantProgram, TEST_PROGRAMS } from "../helpers/programs.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { call, plantProvider } from "./_fixture.ts";

/** The latency that marks plant's actuating calls: they answer when the test lets them go. */
const HELD_MS = 59_000;

/**
 * `plant` (restarted once after a kill), whose ladder sets its heater off then its fan to 0, its
 * actuating calls answering only once `held` resolves; and the calls made on it by the e-stop
 * (audited, origin `estop`), oldest first.
 */
async function clearRig(): Promise<{
  r: Rig;
  held: PromiseWithResolvers<void>;
  estopCalls: () => Promise<string[]>;
}> {
  const held = Promise.withResolvers<void>();
  const r = await rig({
    programs: {
      ...TEST_PROGRAMS,
      [PLANT_MAIN]: (host) =>
        plantProgram({ ...host, sleep: (ms) => ms === HELD_MS ? held.promise : host.sleep(ms) }),
    },
    providers: [
      plantProvider("plant", { latencyMs: HELD_MS, timeoutMs: 120_000, restartBackoffMs: 50 }),
    ],
    safety: {
      verifyTimeoutMs: 300,
      hooks: [
        call("plant/plant0", "set_heater", { enabled: false }),
        call("plant/plant0", "set_fan", { duty: { double: 0 } }),
      ],
      zeroIsSafe: false,
    },
    pollingIntervalMs: 100,
  });
  const estopCalls = async () => {
    const page = await r.kernel.audit.query({ limit: 100, origin: "estop" });
    return page.entries
      .filter((e) => e.action === "call" && e.device_handle === "plant/plant0")
      .map((e) => `${e.function} ${e.outcome}`);
  };
  return { r, held, estopCalls };
}

/**
 * Kills plant, latches while it is down (its ladder calls fail unsent), and waits until it is back
 * and its securing run's first call (the heater) is on the wire, held; answers that run (wrapped:
 * awaiting the helper does not await it).
 */
async function latchAndHoldSecuring(
  r: Rig,
): Promise<{ run: ReturnType<Rig["kernel"]["estop"]["securing"]> }> {
  const rt = r.kernel;
  const plant = rt.registry.host("plant")!;
  const pid0 = r.kill("plant");
  await waitFor("plant down", () => !plant.available);
  await rt.estop.trigger("first latch");
  await waitFor("plant back", () => plant.available && plant.session!.pid !== pid0, 20_000);
  await waitFor(
    "plant's securing run's first call on the wire",
    () => r.provider<FakeProvider>("plant").count("call") === 1,
    20_000,
  );
  return { run: rt.estop.securing(rt.registry.host("plant")!) };
}

/** The functions plant's current process was called with, oldest first. */
function plantGot(r: Rig): string[] {
  return r.provider<FakeProvider>("plant").received("call").map((c) => c.function_name ?? "");
}

Deno.test("Estop clear during a securing run: the rest of its safe-state calls are not made", async () => {
  const { r: started, held, estopCalls } = await clearRig();
  await using r = started;
  try {
    const rt = r.kernel;
    const { run } = await latchAndHoldSecuring(r);
    assert.ok(run !== null, "plant's securing run is under way");
    rt.estop.clear();
    held.resolve();
    // The call on the wire answers; the fan's is not made after the operator took the machine back.
    assert.deepEqual(await run, [
      { device_handle: "plant/plant0", function: "set_heater", success: true },
    ]);
    assert.deepEqual(await estopCalls(), [
      "set_heater refused",
      "set_fan refused",
      "set_heater accepted",
    ]);
    assert.deepEqual(plantGot(r), ["set_heater"]);
    const ended = r.lines.filter((l) => l.includes("securing run ended"));
    assert.equal(ended.length, 1, r.lines.join("\n"));
    assert.match(
      ended[0]!,
      /^WARN .*provider plant's securing run ended after 1 of 2 safe-state call\(s\): the latch was released; the other 1 are not made$/,
    );
  } finally {
    held.resolve();
  }
});

Deno.test("Estop press again during a clear-interrupted securing run: the new latch gets its whole ladder", async () => {
  const { r: started, held } = await clearRig();
  await using r = started;
  try {
    const rt = r.kernel;
    const { run } = await latchAndHoldSecuring(r);
    assert.ok(run !== null, "plant's securing run is under way");
    rt.estop.clear();
    const second = rt.estop.trigger("second latch");
    held.resolve();
    assert.deepEqual(await run, [
      { device_handle: "plant/plant0", function: "set_heater", success: true },
    ]);
    const answer = await second;
    // The new stop's ladder: both calls, made right behind the call that was on the wire; the
    // interrupted run's fan call is not made in between.
    assert.deepEqual(
      answer.actions.map((a) => `${a.function} ${a.success}`),
      ["set_heater true", "set_fan true"],
    );
    assert.deepEqual(plantGot(r), ["set_heater", "set_heater", "set_fan"]);
    assert.equal(rt.estop.status().latched, true);
    assert.ok(
      r.lines.some((l) =>
        /^WARN .*provider plant's securing run ended after 1 of 2 .*pressed again/.test(l)
      ),
      r.lines.join("\n"),
    );
  } finally {
    held.resolve();
  }
});
