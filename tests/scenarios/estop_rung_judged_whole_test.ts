/**
 * The e-stop's rung is judged against the rung last judged on every provider (docs/safety.md,
 * "The ladder"): a partial view -- start-up before every provider has listed, or a judgement
 * during a reload that leaves out the providers it starts -- is no rung that was ever in force,
 * so a later judgement on the whole inventory must not call the difference a drop. Nor is a drop
 * judged once stop() has begun (no FAULT, no hook call then, as at a reload's end). Real kernels
 * with the plant provider and the programmable provider as child processes.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { spawnProcess } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { startRuntime, startServing, testHost, waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { type Inventory, programmableProvider } from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, fanIntoFault, plantProvider } from "../safety/_fixture.ts";

/** The setpoints covering `id/plant0` (heater off, fan stopped). */
function plantSetpoints(id: string) {
  return [
    call(`${id}/plant0`, "set_heater", { enabled: false }),
    call(`${id}/plant0`, "set_fan", { duty: { double: 0 } }),
  ];
}

/** `plant` (and `covered`) under the setpoints, a hook into FAULT (AUTO's gate), and `more`. */
function config(more: Config["providers"], covered: string[] = []): Config {
  return testConfig({
    providers: [plantProvider("plant"), ...more],
    automation: {
      enabled: true,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0)] },
    },
    safety: { setpoints: ["plant", ...covered].flatMap(plantSetpoints) },
  });
}

/** A programmable provider's inventory: one device, `act` actuating when asked, Hello delayed. */
async function programmable(dir: string, name: string, helloDelayMs: number, act: boolean) {
  const inventory: Inventory = {
    hello: { delayMs: helloDelayMs },
    devices: {
      dev0: {
        signals: [],
        ...(act
          ? { functions: [{ function_id: 7, name: "act", policy: { category: 3 }, args: [] }] }
          : {}),
      },
    },
  };
  const file = `${dir}/${name}.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  return programmableProvider(name, file, { helloTimeoutMs: 30000, readyTimeoutMs: 30000 });
}

const DROP = /the e-stop's safe-state ladder dropped/;

Deno.test("Kernel says no rung dropped at start-up when a provider listing later brings functions the setpoints never covered", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop_rung_whole_" });
  const { log, lines } = capturingLogger({ level: "warn" });
  try {
    // `late` lists seconds after `plant`: the plan start-up logs is rung none, and no rung
    // stronger than it was ever in force.
    const late = await programmable(dir, "late", 3000, true);
    const rt = await startRuntime(config([late]), { host: testHost({ log }) });
    try {
      assert.equal(rt.estop.plan().rung, "none");
      assert.ok(!lines.some((l) => DROP.test(l)), lines.join("\n"));
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel keeps AUTO when a reload's judgement without the providers it starts saw a rung that was never in force", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop_rung_whole_" });
  const { log, lines } = capturingLogger({ level: "warn" });
  try {
    // `x` is not covered: the rung is none from the start, and AUTO is entered on it (allowed).
    // `grow`'s restart adds functions the setpoints cover.
    const grow = plantProvider("grow", { growMarker: `${dir}/started`, restartBackoffMs: 50 });
    const rt = await startRuntime(config([grow, plantProvider("x")], ["grow"]), {
      host: testHost({ log }),
    });
    try {
      assert.equal(rt.estop.plan().rung, "none");
      await rt.modes.request("MANUAL");
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
      // A reload changing `x` (held back in AUTO: it runs as before, uncovered) and adding `slow`
      // (READ only), whose Hello answers after 8 s: the reload runs meanwhile.
      const slow = await programmable(dir, "slow", 8000, false);
      const next = config([grow, plantProvider("x", { timeoutMs: 6000 }), slow], ["grow"]);
      let done = false;
      const reloading = rt.reload(next).finally(() => (done = true));
      const host = rt.registry.host("grow")!;
      const pid = host.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor("grow restarted", () => host.available && host.session!.pid !== pid);
      assert.ok(!done, "the reload ended before grow's restart: the window was missed");
      const report = await reloading;
      assert.deepEqual(report.providers.held, ["x"]);
      assert.deepEqual(report.providers.added, ["slow"]);
      // The rung was none before the reload, and is none after it: nothing dropped.
      assert.equal(rt.estop.plan().rung, "none");
      assert.ok(!lines.some((l) => DROP.test(l)), lines.join("\n"));
      assert.equal(rt.modes.current(), "AUTO");
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel forces no FAULT for a rung that drops once stop() has begun", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop_rung_whole_" });
  const { log, lines } = capturingLogger({ level: "warn" });
  try {
    // `plant` answers its actuating calls after 4 s: an operator's call (OVERRIDE lets it through
    // in AUTO) is still being answered when stop() begins, so the HTTP drain holds the stop
    // before the providers are stopped while `grow` (its restart attempt spawned before the stop
    // began) comes back with functions the setpoints do not cover.
    const base = config([
      plantProvider("grow", { growMarker: `${dir}/started`, restartBackoffMs: 50 }),
    ]);
    // Processes spawned so far: grow's restart attempt is in the phase ATTEMPTING while its spawn
    // waits its turn in the registry's spawn queue, and a stop begun then ends the attempt before
    // it spawns (seen on a loaded CI machine: grow never came back, the window was missed).
    let spawns = 0;
    const rt = await startServing({
      ...base,
      providers: [plantProvider("plant", { latencyMs: 4000 }), ...base.providers.slice(1)],
      automation: { ...base.automation, manualGatingPolicy: "OVERRIDE" },
    }, testHost({ log, spawn: (o) => (spawns++, spawnProcess(o)) }));
    let stopped: Promise<void> | null = null;
    try {
      await rt.modes.request("MANUAL");
      assert.equal(await rt.modes.request("AUTO"), "AUTO");
      const slow = apiFetch(`http://127.0.0.1:${rt.http!.port}/v0/call`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          provider_id: "plant",
          device_id: "plant0",
          function_id: 1,
          args: { enabled: { type: "bool", bool: false } },
        }),
      }).then((r) => r.body?.cancel(), () => {});
      await waitFor("the slow call in flight", () => rt.api.inFlight > 0);
      const host = rt.registry.host("grow")!;
      const pid = host.session!.pid;
      const spawnsBefore = spawns;
      Deno.kill(pid, "SIGKILL");
      // Nothing is restarted once the stop has begun (ProviderRegistry.endRestarts), but a
      // restart attempt already spawned comes up: the stop begins while grow's is starting (its
      // process spawned, the only one spawned since the kill).
      await waitFor(
        "grow's restart attempt spawned",
        () => host.state.phase === "ATTEMPTING" && spawns > spawnsBefore,
        10_000,
        0,
      );
      stopped = rt.stop();
      await waitFor("grow restarted", () => host.available && host.session!.pid !== pid);
      await waitFor("rung none", () => rt.estop.plan().rung === "none");
      assert.ok(
        rt.api.inFlight > 0,
        "the drain ended before grow's restart: the window was missed",
      );
      // Its providers are ending: no FAULT (and no hook call into it) starts now, as none does at
      // the end of a reload the stop interrupts, nor for an alarm or a device lost meanwhile.
      assert.equal(rt.modes.current(), "AUTO", lines.join("\n"));
      await slow;
    } finally {
      await (stopped ?? rt.stop());
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
