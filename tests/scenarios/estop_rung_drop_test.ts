/**
 * The e-stop's rung never drops unseen (docs/safety.md, "The ladder"): setpoints apply only while
 * they cover every actuating function, so a provider restarted or added with one they do not cover
 * takes every setpoint call away. In AUTO that forces FAULT; outside AUTO it is one WARN line; a
 * reload adding a provider together with its setpoints keeps AUTO. Real kernels with the plant
 * provider as child processes (`grow`'s first process declares only its READ function, a restart
 * adds two actuating ones).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { startRuntime, testHost, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, fanIntoFault, plantProvider } from "../safety/_fixture.ts";

/** The setpoints covering `id/plant0` (heater off, fan stopped). */
function plantSetpoints(id: string) {
  return [
    call(`${id}/plant0`, "set_heater", { enabled: false }),
    call(`${id}/plant0`, "set_fan", { duty: { double: 0 } }),
  ];
}

/** `plant` covered by the setpoints (rung 2), a hook into FAULT (AUTO's gate), and `more`. */
function config(more: Config["providers"]): Config {
  return testConfig({
    providers: [plantProvider("plant"), ...more],
    automation: {
      enabled: true,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0)] },
    },
    safety: { setpoints: plantSetpoints("plant") },
  });
}

const DROP = /the e-stop's safe-state ladder dropped from rung 'setpoints' to 'none'/;

async function withGrowing(
  run: (
    rt: Awaited<ReturnType<typeof startRuntime>>,
    restart: () => Promise<void>,
    lines: string[],
  ) => Promise<void>,
) {
  const dir = await Deno.makeTempDir({ prefix: "estop_rung_drop_" });
  const { log, lines } = capturingLogger({ level: "warn" });
  try {
    const rt = await startRuntime(
      config([plantProvider("grow", { growMarker: `${dir}/started`, restartBackoffMs: 50 })]),
      { host: testHost({ log }) },
    );
    try {
      assert.equal(rt.estop.plan().rung, "setpoints");
      const restart = async () => {
        const host = rt.registry.host("grow")!;
        const pid = host.session!.pid;
        Deno.kill(pid, "SIGKILL");
        await waitFor("grow restarted", () => host.available && host.session!.pid !== pid);
      };
      await run(rt, restart, lines);
    } finally {
      await rt.stop();
    }
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
}

Deno.test("Kernel forces FAULT when a provider restarted in AUTO brings actuating functions the setpoints do not cover", async () => {
  await withGrowing(async (rt, restart, lines) => {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    await restart();
    await waitFor("FAULT", () => rt.modes.current() === "FAULT");
    assert.equal(rt.estop.plan().rung, "none");
    const drop = lines.filter((l) => DROP.test(l));
    assert.equal(drop.length, 1, lines.join("\n"));
    assert.match(drop[0]!, /^WARN /);
    assert.match(
      drop[0]!,
      /\(inventory of grow changed\): safety\.safe_state\.setpoints do not cover 2 actuating function\(s\): "grow\/plant0" "set_heater", "grow\/plant0" "set_fan"; AUTO is not kept on a weaker e-stop: FAULT/,
    );
  });
});

Deno.test("Kernel says a rung dropped outside AUTO once, and keeps the mode", async () => {
  await withGrowing(async (rt, restart, lines) => {
    await rt.modes.request("MANUAL");
    await restart();
    await waitFor("rung none", () => rt.estop.plan().rung === "none");
    await waitFor("the line", () => lines.some((l) => DROP.test(l)));
    assert.equal(rt.modes.current(), "MANUAL");
    assert.equal(lines.filter((l) => DROP.test(l)).length, 1);
    assert.ok(!lines.some((l) => l.includes("AUTO is not kept")));
  });
});

Deno.test("Kernel.reload in AUTO adding an actuating provider forces FAULT without its setpoints and keeps AUTO with them", async () => {
  const { log, lines } = capturingLogger({ level: "warn" });
  const rt = await startRuntime(config([]), { host: testHost({ log }) });
  try {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    // With the setpoints for it: the safety section (adding calls) applies, the rung stands.
    const covered = config([plantProvider("more")]);
    const withSetpoints: Config = {
      ...covered,
      safety: {
        ...covered.safety,
        safeState: {
          ...covered.safety.safeState,
          setpoints: [...plantSetpoints("plant"), ...plantSetpoints("more")],
        },
      },
    };
    const kept = await rt.reload(withSetpoints);
    assert.deepEqual(kept.refused, []);
    assert.equal(rt.estop.plan().rung, "setpoints");
    assert.equal(rt.modes.current(), "AUTO");
    assert.ok(!lines.some((l) => DROP.test(l)), lines.join("\n"));
    // Without them (a third provider, the setpoints kept): the rung drops at the reload's end.
    const uncovered = config([plantProvider("more"), plantProvider("third")]);
    const dropped = await rt.reload({ ...uncovered, safety: withSetpoints.safety });
    assert.deepEqual(dropped.refused, []);
    await waitFor("FAULT", () => rt.modes.current() === "FAULT");
    assert.equal(rt.estop.plan().rung, "none");
    assert.ok(
      lines.some((l) =>
        DROP.test(l) && l.includes("(configuration reload)") &&
        l.includes(`"third/plant0" "set_heater", "third/plant0" "set_fan"`)
      ),
      lines.join("\n"),
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("ModeManager refuses AUTO at its commit when the rung dropped while MANUAL -> AUTO hooks ran", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop_rung_drop_" });
  const base = config([
    plantProvider("grow", { growMarker: `${dir}/started`, restartBackoffMs: 50 }),
  ]);
  // The arming hook's call answers after 1.5 s: the transition is under way meanwhile.
  const rt = await startRuntime({
    ...base,
    providers: [plantProvider("plant", { latencyMs: 1500 }), ...base.providers.slice(1)],
    automation: {
      ...base.automation,
      modeTransitionHooks: {
        ...base.automation.modeTransitionHooks,
        beforeTransition: [{
          from: "MANUAL",
          to: "AUTO",
          failOnError: true,
          path: "automation.mode_transition_hooks.before_transition[0]",
          calls: [call("plant/plant0", "set_fan", { duty: { double: 0 } })],
        }],
      },
    },
  });
  try {
    await rt.modes.request("MANUAL");
    const arming = rt.modes.request("AUTO").then(() => null, (err: Error) => err);
    const host = rt.registry.host("grow")!;
    const pid = host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("grow restarted", () => host.available && host.session!.pid !== pid);
    await waitFor("rung none", () => rt.estop.plan().rung === "none");
    const err = await arming;
    assert.match(
      err?.message ?? "no refusal",
      /^refusing AUTO: the e-stop's safe-state ladder dropped from rung 'setpoints' to 'none' \(inventory of grow changed\).* while MANUAL -> AUTO hooks ran; request AUTO again to enter it with the e-stop ladder now in force$/,
    );
    assert.equal(rt.modes.current(), "MANUAL");
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

/** A logger whose sink fails (a custom sink, not the process's) for the rung's line while `broken.on`. */
function failingLogger() {
  const broken = { on: false };
  const log = new LineLogger({
    level: "info",
    journald: false,
    now: () => Date.now(),
    write: (line) => {
      if (broken.on && DROP.test(line)) throw new Error("log sink failed");
    },
  });
  return { log, broken };
}

Deno.test("Kernel forces FAULT on a rung dropped by a restart in AUTO when the logger throws", async () => {
  const dir = await Deno.makeTempDir({ prefix: "estop_rung_drop_" });
  const { log, broken } = failingLogger();
  const rt = await startRuntime(
    config([plantProvider("grow", { growMarker: `${dir}/started`, restartBackoffMs: 50 })]),
    { host: testHost({ log }) },
  );
  try {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    broken.on = true;
    const host = rt.registry.host("grow")!;
    const pid = host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("grow restarted", () => host.available && host.session!.pid !== pid);
    await waitFor("rung none", () => rt.estop.plan().rung === "none");
    // The drop's WARN line is lost, never the FAULT it announces.
    await waitFor("FAULT", () => rt.modes.current() === "FAULT");
  } finally {
    broken.on = false;
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel.reload in AUTO dropping the rung resolves and forces FAULT when the logger throws", async () => {
  const { log, broken } = failingLogger();
  const rt = await startRuntime(config([]), { host: testHost({ log }) });
  try {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    broken.on = true;
    // Applied (the provider runs): the reload resolves though the line at its end throws.
    const report = await rt.reload(config([plantProvider("more")]));
    assert.deepEqual(report.providers.added, ["more"]);
    assert.equal(rt.estop.plan().rung, "none");
    await waitFor("FAULT", () => rt.modes.current() === "FAULT");
  } finally {
    broken.on = false;
    await rt.stop();
  }
});
