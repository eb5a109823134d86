/**
 * Kernel.reload racing a mode change: the AUTO rule of a reload (docs/safety.md, "Configuration
 * reloads never weaken a running machine") holds for a section applied after AUTO was entered
 * during the same reload, not only when AUTO was running when the reload started. A parameter set
 * over HTTP while MANUAL -> AUTO runs its before-hooks refuses that AUTO as a reload would.
 */
import assert from "node:assert/strict";
import { serveHttp } from "../../src/host/mod.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import type { Kernel, KernelHost } from "../../src/app/kernel.ts";
import type { Config, HookConfig } from "../../src/config/mod.ts";
import { call, hook, plantProvider, readSignal } from "../safety/_fixture.ts";
import {
  automationConfig,
  autoRefusedBy,
  TreeDir,
  treeXml,
  tv,
} from "../scenarios/automation_helpers.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import { failedStartText } from "../../src/providers/mod.ts";

/** A tree that keeps running (reads and waits): AUTO stays up for the whole test. */
const IDLE_TREE = treeXml(`<Sleep msec="60000" />`);

/**
 * A runtime armed (MANUAL) on the config `configure` makes of the tree dir and its idle tree
 * (default automationConfig(tree)) over `host` (HTTP served with `serve`), given to `body`; stopped
 * and the dir removed after.
 */
async function withArmedRuntime(
  body: (rt: Kernel, tree: string) => Promise<void>,
  configure: (tree: string, dir: TreeDir) => Config | Promise<Config> = (tree) =>
    automationConfig(tree),
  host: Partial<KernelHost> = {},
): Promise<void> {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", IDLE_TREE);
    const rt = await startRuntime(await configure(tree, dir), { arm: true, host });
    try {
      await body(rt, tree);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
}

Deno.test("Kernel.reload: AUTO entered while the reload starts a new provider; the later hooks section is still refused from leaving AUTO -> FAULT uncovered", async () => {
  await withArmedRuntime(async (rt) => {
    const base = rt.config;
    assert.equal(rt.modes.autoGateProblem(), null);
    // Adds a provider (its start takes a process spawn and handshake) and drops every hook.
    const next = withoutHooks({ ...base, providers: [...base.providers, simProvider("sim1")] });
    let reloadDone = false;
    const reloading = rt.reload(next).finally(() => (reloadDone = true));
    // The operator enters AUTO while the reload is starting sim1 (an addition: not refused).
    const entered = await rt.modes.request("AUTO").catch((err: Error) => err.message);
    assert.equal(reloadDone, false, "the mode request settled while the reload was running");
    const report = await reloading;
    assert.deepEqual(report.providers.added, ["sim1"]);
    if (rt.modes.current() === "AUTO") {
      // The machine runs in AUTO: a reload may not have left it in a state AUTO refuses.
      assert.equal(
        rt.modes.autoGateProblem(),
        null,
        `AUTO (entered: ${entered}) runs without a hook covering AUTO -> FAULT; reload: ${
          JSON.stringify({ applied: report.applied, refused: report.refused })
        }`,
      );
      assert.deepEqual(report.refused.map((r) => r.section), [
        "automation.mode_transition_hooks",
      ]);
    }
  });
});

/** The sim's relay channel `ch` on or off, as a declared (hook) call. */
const relayCall = (ch: number, on: boolean) =>
  call("sim0/relayio0", `set_relay_ch${ch}`, { enabled: on });

/** A MANUAL -> AUTO before-hook switching relay 1 on (requestAutoSlowly holds it in flight). */
const RELAY_BEFORE_AUTO = hook("MANUAL", "AUTO", [relayCall(1, true)]);

/** `base` with these hooks after its own before-hooks (the stop on AUTO -> FAULT). */
function withHooks(base: Config, before: HookConfig[], after: HookConfig[]): Config {
  return {
    ...base,
    automation: {
      ...base.automation,
      modeTransitionHooks: {
        beforeTransition: [...base.automation.modeTransitionHooks.beforeTransition, ...before],
        afterTransition: after,
      },
    },
  };
}

/** `base` with no mode-transition hooks at all (not even the stop on AUTO -> FAULT). */
function withoutHooks(base: Config): Config {
  return {
    ...base,
    automation: {
      ...base.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    },
  };
}

/**
 * Starts MANUAL -> AUTO with its before-hook's relay call in flight for `ms`; `outcome`: what it
 * came to, `entered <mode>` or `refused: <message>` (wrapped: awaiting this must not await it).
 */
async function requestAutoSlowly(rt: Kernel, ms = 400): Promise<{ outcome: Promise<string> }> {
  await slowRelays(rt, ms);
  const outcome = rt.modes.request("AUTO").then(
    (m) => `entered ${m}`,
    (err: Error) => `refused: ${err.message}`,
  );
  return { outcome };
}

/** Slows every call to sim0/relayio0 inside the provider (a hook call in flight for `ms`). */
async function slowRelays(rt: Kernel, ms: number): Promise<void> {
  await rt.router.call({
    providerId: "sim0",
    deviceId: "chaos_control",
    functionName: "inject_call_latency",
    args: { device_id: tv.s("relayio0"), latency_ms: tv.i(ms) },
    origin: "automated", // passes the AUTO gate too
  });
}

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that drops the AUTO -> FAULT hook: AUTO is refused, not entered unguarded", async () => {
  await withArmedRuntime(async (rt) => {
    const toAuto = (await requestAutoSlowly(rt)).outcome;
    // The reload lands while the before-hook's relay call is in flight (mode still MANUAL).
    const report = await rt.reload(withoutHooks(rt.config));
    assert.deepEqual(report.applied, ["automation.mode_transition_hooks"]);
    const outcome = await toAuto;
    assert.equal(
      rt.modes.current() === "AUTO" ? rt.modes.autoGateProblem() : null,
      null,
      `AUTO runs without a hook covering AUTO -> FAULT (${outcome})`,
    );
    assert.match(outcome, /^refused: refusing AUTO: \d+ actuating function\(s\)/);
    assert.equal(rt.modes.current(), "MANUAL");
  }, (tree) => withHooks(automationConfig(tree), [RELAY_BEFORE_AUTO], []));
});

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that moves an after-hook into before_transition: the transition still runs it once", async () => {
  const first = hook("MANUAL", "AUTO", [relayCall(1, true)]);
  const second = hook("MANUAL", "AUTO", [relayCall(2, true)], false);
  await withArmedRuntime(async (rt, tree) => {
    await slowRelays(rt, 400);
    const toAuto = rt.modes.request("AUTO");
    // While `first` is in flight, `second` moves from after_transition to before_transition:
    // the next MANUAL -> AUTO runs both before AUTO; this one has passed its before phase.
    const report = await rt.reload({
      ...rt.config,
      automation: withHooks(automationConfig(tree), [first, second], []).automation,
    });
    assert.deepEqual(report.applied, ["automation.mode_transition_hooks"]);
    assert.equal(await toAuto, "AUTO");
    await slowRelays(rt, 0);
    assert.equal(
      await readSignal(rt, "sim0", "relayio0", "relay_ch2_state"),
      true,
      "the after-hook the transition started with never ran",
    );
  }, (tree) => withHooks(automationConfig(tree), [first], [second]));
});

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that removes an interlock: AUTO never runs without a protection its gate judged", async () => {
  const protections = alarmsConfig(`
interlocks:
  - id: hot
    block: [sim0/motorctl0/set_motor_duty]
    while: sim0/tempctl0/tc1_temp > 400
    message: Motor held while hot
`);
  await withArmedRuntime(async (rt) => {
    const toAuto = (await requestAutoSlowly(rt)).outcome;
    // The reload lands while the before-hook's relay call is in flight (mode still MANUAL).
    const report = await rt.reload({ ...rt.config, interlocks: [] });
    const outcome = await toAuto;
    const interlocks = rt.alarms.interlocks().map((i) => i.id);
    assert.ok(
      rt.modes.current() !== "AUTO" || interlocks.includes("hot"),
      `AUTO (${outcome}) runs without the interlock its gate judged; reload: ${
        JSON.stringify({ applied: report.applied, refused: report.refused })
      }`,
    );
    // Outside AUTO the weakening applies (recorded); the AUTO entry judged without it is refused.
    assert.deepEqual(report.applied, ["alarms"]);
    assert.match(
      outcome,
      /^refused: refusing AUTO: a configuration reload weakened protections \(interlock hot removed\)/,
    );
    assert.equal(rt.modes.current(), "MANUAL");
    assert.deepEqual(await autoRefusedBy(rt), ["reload"]);
  }, (tree) =>
    withHooks(
      automationConfig(tree, { config: { interlocks: protections.interlocks } }),
      [RELAY_BEFORE_AUTO],
      [],
    ));
});

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that swaps the behavior tree: AUTO never runs a tree the operator did not arm", async () => {
  let other = "";
  await withArmedRuntime(async (rt, tree) => {
    const toAuto = (await requestAutoSlowly(rt)).outcome;
    // The reload lands while the before-hook's relay call is in flight (mode still MANUAL).
    const report = await rt.reload({
      ...rt.config,
      automation: { ...rt.config.automation, behaviorTree: other },
    });
    const outcome = await toAuto;
    assert.ok(
      rt.modes.current() !== "AUTO" || rt.config.automation.behaviorTree === tree,
      `AUTO (${outcome}) runs a tree swapped in while it was being entered; reload: ${
        JSON.stringify({ applied: report.applied, refused: report.refused })
      }`,
    );
    assert.deepEqual(report.applied, ["automation.behavior_tree"]);
    assert.match(
      outcome,
      /^refused: refusing AUTO: a configuration reload replaced the behavior tree/,
    );
    assert.deepEqual(await autoRefusedBy(rt), ["reload"]);
  }, async (tree, dir) => {
    other = await dir.write("other.xml", treeXml(`<Sleep msec="30000" />`));
    return withHooks(automationConfig(tree), [RELAY_BEFORE_AUTO], []);
  });
});

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that changes only the tick rate: AUTO is refused, not armed at a rate the operator did not arm", async () => {
  await withArmedRuntime(async (rt) => {
    const rate = rt.config.automation.tickRateHz;
    const toAuto = (await requestAutoSlowly(rt)).outcome;
    // The reload lands while the before-hook's relay call is in flight (mode still MANUAL).
    const report = await rt.reload({
      ...rt.config,
      automation: { ...rt.config.automation, tickRateHz: rate * 2 },
    });
    const outcome = await toAuto;
    assert.deepEqual(report.applied, ["automation.behavior_tree"]);
    assert.ok(
      rt.modes.current() !== "AUTO",
      `AUTO (${outcome}) runs at ${rt.config.automation.tickRateHz} Hz, retimed from ${rate} ` +
        "Hz while it was being entered (a change AUTO refuses)",
    );
    assert.match(
      outcome,
      /^refused: refusing AUTO: a configuration reload retimed the behavior tree/,
    );
    assert.deepEqual(await autoRefusedBy(rt), ["reload"]);
  }, (tree) => withHooks(automationConfig(tree), [RELAY_BEFORE_AUTO], []));
});

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that restarts a provider: AUTO is refused, not armed on a provider restarted under its hooks", async () => {
  await withArmedRuntime(async (rt) => {
    // Long enough for sim1's restart to end while the before-hook's call is in flight.
    let committed = false;
    const toAuto = (await requestAutoSlowly(rt, 3000)).outcome.finally(() => (committed = true));
    // sim1's entry changes (restarted: its devices start over); AUTO would hold that change.
    const report = await rt.reload({
      ...rt.config,
      providers: [rt.config.providers[0]!, simProvider("sim1", { timeoutMs: 4000 })],
    });
    assert.deepEqual(report.providers.restarted, ["sim1"]);
    assert.equal(committed, false, "the transition ended before the reload did");
    const outcome = await toAuto;
    assert.ok(
      rt.modes.current() !== "AUTO",
      `AUTO (${outcome}) was armed on provider sim1 restarted by a reload while its ` +
        "before-hooks ran (a change AUTO holds back)",
    );
    assert.match(
      outcome,
      /^refused: refusing AUTO: a configuration reload stopped or restarted provider\(s\) sim1/,
    );
    assert.deepEqual(await autoRefusedBy(rt), ["reload"]);
  }, (tree) =>
    withHooks(
      automationConfig(tree, { config: { providers: [simProvider("sim0"), simProvider("sim1")] } }),
      [RELAY_BEFORE_AUTO],
      [],
    ));
});

Deno.test("Kernel.reload during MANUAL -> AUTO before-hooks that changes a parameter's value: AUTO is refused at its commit, not armed with a recipe the operator did not arm", async () => {
  await withArmedRuntime(async (rt) => {
    const toAuto = (await requestAutoSlowly(rt)).outcome;
    // The reload lands while the before-hook's relay call is in flight (mode still MANUAL): the
    // bounds narrowed below the value in force (the default 40) reset it to the new default.
    const report = await rt.reload({
      ...rt.config,
      automation: {
        ...rt.config.automation,
        parameters: rt.config.automation.parameters.map((p) =>
          p.name === "target_temp" ? { ...p, max: 30, default: 25 } : p
        ),
      },
    });
    assert.deepEqual(report.applied, ["automation.parameters"]);
    assert.equal(rt.parameters!.value("target_temp"), 25);
    const outcome = await toAuto;
    assert.ok(
      rt.modes.current() !== "AUTO",
      `AUTO (${outcome}) armed with target_temp 25, reset by a reload while its before-hooks ran; ` +
        "it was requested with 40",
    );
    assert.match(
      outcome,
      /^refused: refusing AUTO: a configuration reload changed the recipe \("target_temp" \(its value 40 would go to the default 25\)\) while MANUAL -> AUTO hooks ran; request AUTO again/,
    );
    assert.deepEqual(await autoRefusedBy(rt), ["reload"]);
    // Requested again, judged with the value now in force: armed.
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
  }, (tree) => withHooks(automationConfig(tree), [RELAY_BEFORE_AUTO], []));
});

Deno.test("POST /v0/parameters during MANUAL -> AUTO before-hooks that changes a value: AUTO is refused at its commit, as a reload changing the recipe is", async () => {
  await withArmedRuntime(
    async (rt) => {
      const setTemp = async (value: number) => {
        const res = await apiFetch(`http://127.0.0.1:${rt.http!.port}/v0/parameters`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ name: "target_temp", value }),
        });
        await res.body?.cancel();
        return res.status;
      };
      // A set that leaves the value as it is (the default 40) changes nothing AUTO was judged with.
      const same = (await requestAutoSlowly(rt)).outcome;
      assert.equal(await setTemp(40), 200);
      assert.equal(await same, "entered AUTO");
      await rt.modes.request("MANUAL");
      let committed = false;
      const toAuto = (await requestAutoSlowly(rt)).outcome.finally(() => (committed = true));
      // The set lands while the before-hook's relay call is in flight (mode still MANUAL): it
      // applies, as in any mode.
      assert.equal(await setTemp(35), 200);
      assert.equal(committed, false, "the transition ended before the set was made");
      assert.equal(rt.parameters!.value("target_temp"), 35);
      const outcome = await toAuto;
      assert.ok(
        rt.modes.current() !== "AUTO",
        `AUTO (${outcome}) armed with target_temp 35, set while its before-hooks ran; it was ` +
          "requested with 40",
      );
      assert.match(
        outcome,
        /^refused: refusing AUTO: a parameter set changed the recipe \("target_temp" 40 -> 35\) while MANUAL -> AUTO hooks ran; request AUTO again/,
      );
      assert.deepEqual(await autoRefusedBy(rt), ["parameter"]);
      // Requested again, judged with the value now in force: armed.
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
    },
    (tree) => withHooks(automationConfig(tree), [RELAY_BEFORE_AUTO], []),
    { serve: serveHttp },
  );
});

/** Nothing actuates at first (no provider), so AUTO needs no hook into FAULT: none is set. */
const nothingActuates = (tree: string) =>
  withoutHooks(automationConfig(tree, { config: { providers: [] } }));

Deno.test("Kernel.reload in AUTO adding an actuating provider together with the AUTO -> FAULT hook it needs: AUTO stays up", async () => {
  await withArmedRuntime(async (rt, tree) => {
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    // One file: the actuating provider and the hook that stops it on a fault.
    const report = await rt.reload({
      ...rt.config,
      providers: [simProvider("sim0")],
      automation: {
        ...rt.config.automation,
        modeTransitionHooks: automationConfig(tree).automation.modeTransitionHooks,
      },
    });
    assert.deepEqual(report.providers.added, ["sim0"]);
    assert.deepEqual(report.refused, []);
    assert.equal(rt.modes.autoGateProblem(), null);
    assert.equal(
      rt.modes.current(),
      "AUTO",
      "a reload whose file keeps AUTO's gate faulted the machine half-way through",
    );
  }, nothingActuates);
});

Deno.test("Kernel.reload in AUTO adding an actuating provider without an AUTO -> FAULT hook: AUTO is faulted once the reload has applied", async () => {
  await withArmedRuntime(async (rt) => {
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    const report = await rt.reload({ ...rt.config, providers: [simProvider("sim0")] });
    assert.deepEqual(report.providers.added, ["sim0"]);
    assert.match(
      rt.modes.autoGateProblem() ?? "",
      /no mode_transition_hook covers AUTO -> FAULT/,
    );
    assert.equal(rt.modes.current(), "FAULT");
  }, nothingActuates);
});

Deno.test("Kernel.reload in AUTO awaiting a slow provider start: another provider's restart that adds an actuating function without a hook faults AUTO at once, not when the reload ends", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", IDLE_TREE);
    const marker = `${dir.path}/started`;
    // plant's first process declares only its READ function (nothing actuates: AUTO needs no
    // hook into FAULT); every later one set_fan too.
    const base = automationConfig(tree, {
      config: {
        providers: [plantProvider("plant", { growMarker: marker, restartBackoffMs: 50 })],
      },
    });
    const config = {
      ...base,
      automation: {
        ...base.automation,
        modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
      },
    };
    const rt = await startRuntime(config, { arm: true });
    try {
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
      // A provider that never says hello: the reload awaits its start up to its hello timeout.
      const silent = {
        ...plantProvider("silent"),
        command: "sleep",
        args: ["60"],
        helloTimeoutMs: 8000,
      };
      let reloadDone = false;
      const reloading = rt.reload({ ...rt.config, providers: [...rt.config.providers, silent] })
        .finally(() => (reloadDone = true));
      const host = rt.registry.host("plant")!;
      const pid = host.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor(
        "plant restarted with set_fan",
        () => host.available && host.session!.pid !== pid,
        6000,
      );
      await waitFor(
        "FAULT or the reload's end",
        () => rt.modes.current() === "FAULT" || reloadDone,
      );
      assert.equal(
        reloadDone,
        false,
        "AUTO ran with an actuating function and no hook into FAULT until the reload ended",
      );
      assert.equal(rt.modes.current(), "FAULT");
      const report = await reloading;
      assert.match(report.providers.failed.map(failedStartText).join("; "), /silent/);
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});
