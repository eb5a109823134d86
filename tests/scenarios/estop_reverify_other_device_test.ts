/**
 * An e-stop read-back that verified a device does not stand once later read-backs of it are
 * answered for another device: a provider that comes back while latched mixing its devices up
 * (its ReadSignals of `a` answered with device_id `b` and b's values) is read back again, and the
 * check of `a` turns `unreachable` (naming both devices) -- neither the earlier `verified` nor b's
 * safe-looking values verify it (docs/safety.md, "Verified safe state"). The misbehaving provider
 * (tests/providers/_misbehaving_provider.ts) as a real child process under the whole runtime; it
 * reads its plan file at each start, so the restarted process misbehaves.
 */
import assert from "node:assert/strict";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import type { MisbehaviourPlan } from "../providers/misbehaving_provider.ts";
import { call, expectation } from "../safety/_fixture.ts";

const MAIN = new URL("../providers/_misbehaving_provider.ts", import.meta.url).pathname;

function misbehaving(id: string, planFile: string): ProviderConfig {
  return {
    id,
    command: Deno.execPath(),
    args: ["run", "--quiet", "--allow-read", MAIN, planFile],
    timeoutMs: 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: true,
      maxAttempts: 1,
      backoffMs: [50],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

/** The first process: both devices answer for themselves, `a`'s relay off (safe). */
const HONEST: MisbehaviourPlan = { devices: { a: { relay: false }, b: { relay: false } } };
/** The restarted process: `a`'s relay on (unsafe), its reads answered by `b` (relay off). */
const MIXED_UP: MisbehaviourPlan = {
  devices: { a: { relay: true }, b: { relay: false } },
  answerReadAs: { a: "b" },
};

Deno.test("Estop re-verification of a provider back while latched that answers a's reads as b turns a's verified check unreachable", async () => {
  const planFile = await Deno.makeTempFile({ prefix: "estop-other-device-", suffix: ".json" });
  await Deno.writeTextFile(planFile, JSON.stringify(HONEST));
  const rt = await startRuntime(testConfig({
    providers: [misbehaving("p0", planFile)],
    safety: {
      hooks: [call("p0/a", "stop")],
      expect: [expectation("p0/a/relay", { equals: false })],
      verifyTimeoutMs: 300,
    },
  }));
  try {
    const stop = await rt.estop.trigger("honest provider");
    assert.equal(stop.verification.outcome, "verified");
    assert.equal(rt.estop.status().verification?.outcome, "verified");

    await Deno.writeTextFile(planFile, JSON.stringify(MIXED_UP));
    const p0 = rt.registry.host("p0")!;
    const pid = p0.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("p0 restarted", () => p0.available && p0.session!.pid !== pid, 20_000);
    const check = await waitFor("a read back again", () => {
      const c = rt.estop.status().verification?.checks[0];
      return c && c.outcome !== "verified" ? c : undefined;
    }, 20_000);
    assert.equal(check.outcome, "unreachable");
    assert.equal(check.observed, null);
    assert.match(check.reason ?? "", /"a"/);
    assert.match(check.reason ?? "", /"b"/);
    assert.equal(rt.estop.status().verification?.outcome, "unreachable");
    assert.equal(rt.estop.status().latched, true);
  } finally {
    await rt.stop();
    await Deno.remove(planFile).catch(() => {});
  }
});
