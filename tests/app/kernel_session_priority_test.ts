/**
 * The kernel's wiring of SessionPriority (src/app/session_priority.ts): the session raised while
 * its provider starts, settled once it is up, and left as it is while the runtime stops (its
 * providers going is the runtime's end, not a provider down: no raise and no fork for it). A
 * configured provider with no host registered (a reload restarting it, or one it could not
 * register) is down too.
 */
import assert from "node:assert/strict";
import type { PriorityResult } from "../../src/common/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { refuseRegistration } from "../helpers/unregistered.ts";
import { failedStartText } from "../../src/providers/mod.ts";

Deno.test("Kernel raises its session while its provider starts, settles it once up, and asks nothing while it stops", async () => {
  const asked: number[] = [];
  const setSessionPriority = (nice: number): Promise<PriorityResult> => {
    asked.push(nice);
    return Promise.resolve({ outcome: "set" });
  };
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { setSessionPriority },
  });
  let stopped = false;
  try {
    await waitFor("the session settled", () => asked.at(-1) === 0);
    assert.deepEqual(asked, [-10, 0]);
    // The event a raise would answer: sim0 going down in the stop. A setting is asked
    // synchronously as a provider changes (the double answers at once), so one asked for it
    // stands in `asked` by the time the stop has ended.
    const host = rt.registry.host("sim0")!;
    let wentDown = false;
    host.onAvailability(() => {
      if (!host.available) wentDown = true;
    });
    await rt.stop();
    stopped = true;
    assert.ok(wentDown, "sim0 went down during the stop");
    assert.deepEqual(asked, [-10, 0], "no setting while the runtime stops");
  } finally {
    if (!stopped) await rt.stop();
  }
});

Deno.test("Kernel keeps its session raised while a reload restarts its provider, and while one it could not register is down", async () => {
  const asked: number[] = [];
  const setSessionPriority = (nice: number): Promise<PriorityResult> => {
    asked.push(nice);
    return Promise.resolve({ outcome: "set" });
  };
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { setSessionPriority },
  });
  try {
    await waitFor("the session settled", () => asked.at(-1) === 0);
    // sim0's entry changed: its process is stopped, then its successor starts (no host between).
    const changed = (timeoutMs: number) => ({
      ...rt.config,
      providers: rt.config.providers.map((p) => ({ ...p, timeoutMs })),
    });
    const first = await rt.reload(changed(rt.config.providers[0]!.timeoutMs + 1));
    assert.deepEqual(first.providers.restarted, ["sim0"]);
    // Each setting is asked synchronously as the provider changes (the double answers at once):
    // the reload has ended with sim0 up.
    assert.deepEqual(asked, [-10, 0, -10, 0], "raised for the restart, settled once it is up");

    // Its successor not registered (a host listener fails): configured, not running, down.
    rt.registry.eachHost((host) => {
      if (host.config.timeoutMs === 7777) throw new Error("listener broke");
    });
    const second = await rt.reload(changed(7777));
    assert.match(
      second.providers.failed.map(failedStartText).join(),
      /^sim0: Provider sim0 not registered/,
    );
    assert.deepEqual(asked, [-10, 0, -10, 0, -10], "raised while sim0 is not running");
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel raises its session as a reload adding a provider begins, while that reload still waits before stopping the one it restarts", async () => {
  const asked: number[] = [];
  const setSessionPriority = (nice: number): Promise<PriorityResult> => {
    asked.push(nice);
    return Promise.resolve({ outcome: "set" });
  };
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { setSessionPriority },
  });
  // The reload waits, before it stops sim0, for the stop actions in flight to it (the e-stop's
  // ladder calls, bounded): held here until released.
  const estop = rt.estop as unknown as { stopActionsSettled: (id: string) => Promise<null> };
  const settled = estop.stopActionsSettled;
  let release = () => {};
  estop.stopActionsSettled = () => new Promise<null>((r) => (release = () => r(null)));
  try {
    await waitFor("the session settled", () => asked.at(-1) === 0);
    // sim0's entry changed (it is stopped, then started again) and sim1 added: sim1 is started
    // only once sim0 has stopped.
    const reload = rt.reload({
      ...rt.config,
      providers: [
        ...rt.config.providers.map((p) => ({ ...p, timeoutMs: p.timeoutMs + 1 })),
        simProvider("sim1"),
      ],
    });
    await waitFor("the reload starting sim1, sim0 held", () => rt.registry.starting("sim1"));
    assert.ok(rt.registry.host("sim0")?.available, "sim0 still up, not yet stopped");
    assert.equal(rt.registry.host("sim1"), undefined, "sim1 not registered yet");
    assert.deepEqual(asked, [-10, 0, -10], "raised: sim1 is configured and not running");
    release();
    const report = await reload;
    assert.deepEqual(report.providers.added, ["sim1"]);
    await waitFor("the session settled again", () => asked.at(-1) === 0);
  } finally {
    estop.stopActionsSettled = settled;
    release();
    await rt.stop();
  }
});

Deno.test("Kernel settles its session once a reload drops the provider it could not register, and raises it again as the next reload adds it back", async () => {
  const asked: number[] = [];
  const setSessionPriority = (nice: number): Promise<PriorityResult> => {
    asked.push(nice);
    return Promise.resolve({ outcome: "set" });
  };
  const rt = await startRuntime(testConfig({ providers: [simProvider("sim0")] }), {
    host: { setSessionPriority },
  });
  try {
    await waitFor("the session settled", () => asked.at(-1) === 0);
    const base = rt.config;
    // sim1 added, its host not registered (a host listener fails for it): configured, down.
    const allow = refuseRegistration(rt.registry, "sim1");
    const added = await rt.reload({ ...base, providers: [...base.providers, simProvider("sim1")] });
    assert.match(
      added.providers.failed.map(failedStartText).join(),
      /^sim1: Provider sim1 not registered/,
    );
    assert.deepEqual(asked, [-10, 0, -10], "raised while sim1 is not running");
    // The file drops it: no host to take out, the onUnconfigured notice alone settles it.
    const dropped = await rt.reload(base);
    assert.deepEqual(dropped.providers.failed, []);
    assert.deepEqual(asked, [-10, 0, -10, 0], "settled: every configured provider is up");
    // Added back (registered this time): raised as the reload begins, settled once it is up.
    allow();
    const again = await rt.reload({ ...base, providers: [...base.providers, simProvider("sim1")] });
    assert.deepEqual(again.providers.added, ["sim1"]);
    assert.deepEqual(asked, [-10, 0, -10, 0, -10, 0], "raised for sim1's start, settled once up");
  } finally {
    await rt.stop();
  }
});

Deno.test("Kernel settles its session once its provider is up also when the line of the first setting's result throws (a custom logger)", async () => {
  const asked: number[] = [];
  const answers: ((r: PriorityResult) => void)[] = [];
  const setSessionPriority = (nice: number): Promise<PriorityResult> => {
    asked.push(nice);
    return new Promise((resolve) => answers.push(resolve));
  };
  await using r = await rig({
    providers: [simProvider("sim0")],
    host: { setSessionPriority },
    // The sink fails on the first setting's line.
    onLine: (line) => {
      if (line.includes("cpu priority:")) throw new Error("log sink failed");
    },
  });
  // sim0 came up while the raise was still being set: the settling waits for its answer.
  assert.equal(r.kernel.registry.host("sim0")!.available, true);
  assert.deepEqual(asked, [-10]);
  answers.shift()!({ outcome: "set" });
  // Before: the line's throw skipped the setting asked meanwhile (the session stayed raised, the
  // rejection unhandled).
  await waitFor("the session settled", () => asked.at(-1) === 0);
  answers.shift()!({ outcome: "set" });
  assert.deepEqual(asked, [-10, 0]);
});
