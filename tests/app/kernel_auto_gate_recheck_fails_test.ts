/**
 * AUTO's gate judged again (a provider's inventory grew: its restart, or a reload that started
 * it) is not awaited: when it forces FAULT and the wait for the FAULT hooks cannot begin (the
 * clock's setTimer throws), the rejection is one ERROR line, never an unhandled rejection that
 * ends the runtime. FAULT is committed all the same. Real: the kernel over the plant provider.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import { FAULT_HOOKS_ANSWER_WAIT_MS } from "../../src/control/mod.ts";
import { systemClock } from "../../src/host/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { plantProvider } from "../safety/_fixture.ts";

/**
 * The system clock, but its first FAULT-hooks wait timer set once the mode is FAULT throws
 * (counted): the wait forceFault begins after committing FAULT.
 */
function faultWaitFails(): { clock: Clock; thrown: () => number; watch: (rt: Kernel) => void } {
  let rt: Kernel | null = null;
  let thrown = 0;
  const clock: Clock = {
    nowMs: () => systemClock.nowMs(),
    monoMs: () => systemClock.monoMs(),
    clearTimer: (id) => systemClock.clearTimer(id),
    setTimer: (fn, ms) => {
      if (
        thrown === 0 && ms === FAULT_HOOKS_ANSWER_WAIT_MS && rt?.modes.current() === "FAULT"
      ) {
        thrown++;
        throw new Error("setTimer failed");
      }
      return systemClock.setTimer(fn, ms);
    },
  };
  return { clock, thrown: () => thrown, watch: (k) => (rt = k) };
}

const RECHECK_FAILED =
  /ERROR .*re-checking AUTO's gate \(a hook into FAULT\) failed: setTimer failed/;

/**
 * Starts `config` on the clock of faultWaitFails, in AUTO, runs `grow` (what makes a provider's
 * inventory grow, so AUTO's gate is judged again), then checks that the re-check's failure was
 * logged once, one ERROR line, FAULT committed all the same; stops the runtime whatever happens.
 */
async function recheckFailsOnce(
  config: Config,
  grow: (rt: Kernel) => Promise<void> | void,
): Promise<void> {
  const { log, lines } = capturingLogger({ level: "error" });
  const { clock, thrown, watch } = faultWaitFails();
  const rt = await startRuntime(config, { host: { clock, log } });
  watch(rt);
  try {
    await rt.modes.request("MANUAL");
    assert.equal(await rt.modes.request("AUTO"), "AUTO");
    await grow(rt);
    await waitFor("the re-check's ERROR line", () => lines.some((l) => RECHECK_FAILED.test(l)));
    assert.equal(rt.modes.current(), "FAULT");
    assert.equal(thrown(), 1);
    assert.equal(lines.filter((l) => RECHECK_FAILED.test(l)).length, 1);
  } finally {
    await rt.stop();
  }
}

Deno.test("Kernel logs an AUTO gate re-check after a provider restart whose FAULT wait cannot begin, once, without an unhandled rejection", async () => {
  const dir = await Deno.makeTempDir({ prefix: "auto_gate_recheck_" });
  try {
    await recheckFailsOnce(
      testConfig({
        // The first process declares only its READ function; the restarted one adds two ACTUATE.
        providers: [plantProvider("plant", { growMarker: `${dir}/started`, restartBackoffMs: 50 })],
        automation: { enabled: true },
      }),
      (rt) => Deno.kill(rt.registry.host("plant")!.session!.pid, "SIGKILL"),
    );
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel logs the AUTO gate re-check at a reload's end whose FAULT wait cannot begin, once, without an unhandled rejection", async () => {
  // Nothing actuates: AUTO needs no AUTO -> FAULT hook.
  await recheckFailsOnce(
    testConfig({ providers: [], automation: { enabled: true } }),
    async (rt) => {
      // Added in AUTO (additions apply), with actuating functions no hook covers.
      const report = await rt.reload({ ...rt.config, providers: [plantProvider("plant")] });
      assert.deepEqual(report.providers.added, ["plant"]);
    },
  );
});
