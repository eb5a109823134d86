/**
 * A configuration reload retries the providers whose restart circuit is open, even when the file
 * did not change (README, "Reloading the configuration"): the circuit is the runtime giving up, a
 * reload is the operator asking to try again. The provider is tried again in place (the same
 * host, its devices and claims kept) with its failure streak reset and listed in
 * `providers_retried`; an unchanged provider that runs is not touched; a retry that does not come
 * up is reported failed and stays under its supervisor; in AUTO the retry is not held back
 * (nothing that runs is stopped); while the e-stop is latched the retried provider is brought to
 * the safe state and read back before the reload ends, and the latch holds. The simulated
 * provider runs as a child process, killed to open its circuit; the reloads go through the
 * kernel's reloader (SIGHUP's path) with a file that is always the same.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { serveHttp } from "../../src/host/mod.ts";
import type { EstopStatus } from "../../src/safety/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { SIM_INERT_YAML, simProvider, testConfig } from "../helpers/sim_config.ts";
import { call, expectation, readSignal } from "../safety/_fixture.ts";
import { automationConfig, enterAuto, TreeDir, treeXml } from "../scenarios/automation_helpers.ts";

type ReloadEvent = Extract<RuntimeEvent, { kind: "config_reload" }>;

/**
 * A rig over `config` (real children) whose reloads read the configuration it started with again
 * (as the kernel has it: its data_dir is the test's own).
 */
async function reloadingRig(config: Config, o: { serve?: boolean } = {}): Promise<Rig> {
  let file: Config | null = null;
  const r = await rig({
    config,
    programs: false,
    host: {
      ...(o.serve ? { serve: serveHttp } : {}),
      loadConfig: () => Promise.resolve({ ok: true, config: file!, warnings: [] }),
    },
  });
  file = r.kernel.config;
  return r;
}

/** Reloads through the kernel's reloader and returns the reload's `config_reload` event. */
async function reload(r: Rig): Promise<ReloadEvent> {
  const before = r.events.length;
  await r.kernel.reloader!.request();
  const events = r.events.slice(before).filter((e): e is ReloadEvent => e.kind === "config_reload");
  assert.equal(events.length, 1, "one config_reload event");
  return events[0]!;
}

/** Kills provider `id`'s process and waits until its supervisor has seen the failure. */
async function crash(r: Rig, id: string): Promise<void> {
  const host = r.kernel.registry.host(id)!;
  const failures = host.counts().failures;
  r.kill(id);
  await waitFor(`${id}'s crash seen`, () => host.counts().failures > failures, 30000);
}

Deno.test("ConfigReloader of an unchanged file retries a provider whose circuit is open: up again in place, failure streak reset, listed in providers_retried", async () => {
  const config = testConfig({
    providers: [
      simProvider("sim0", { yaml: SIM_INERT_YAML, restart: { maxAttempts: 1, backoffMs: [100] } }),
      simProvider("sim1", { yaml: SIM_INERT_YAML }),
    ],
    pollingIntervalMs: 200,
  });
  await using r = await reloadingRig(config);
  const { registry } = r.kernel;
  const sim1Pid = registry.host("sim1")!.session!.pid;

  // One restart allowed: the first crash is restarted, the second opens the circuit.
  const old = registry.host("sim0")!;
  await crash(r, "sim0");
  await waitFor("sim0 restarted", () => old.available, 30000);
  await crash(r, "sim0");
  await waitFor("sim0's circuit open", () => old.lifecycle === "CIRCUIT_OPEN", 30000);
  assert.equal(old.supervision().attempt_count, 2);

  const ev = await reload(r);
  assert.equal(ev.result, "applied");
  assert.deepEqual(ev.providers_retried, ["sim0"]);
  assert.deepEqual(ev.providers_restarted, [], "its entry did not change");
  assert.deepEqual(ev.providers_unchanged, ["sim1"]);
  assert.deepEqual(ev.providers_failed, []);
  assert.match(ev.summary, /; providers retried \(circuit open\): sim0(;|$)/);
  const host = registry.host("sim0")!;
  assert.equal(host, old, "the same host, tried again in place");
  assert.equal(host.available, true);
  assert.equal(host.lifecycle, "RUNNING");
  assert.equal(host.supervision().attempt_count, 0, "the failure streak starts again");
  assert.equal(host.supervision().circuit_open, false);
  assert.equal(registry.host("sim1")!.session!.pid, sim1Pid, "sim1 untouched");
  assert.deepEqual(r.kernel.config.providers, config.providers, "the entries in effect");
  const said = r.lines.filter((l) => l.includes("a configuration reload tries it again"));
  assert.equal(said.length, 1, r.lines.join("\n"));
  assert.match(said[0]!, /^INFO /);
  assert.ok(said[0]!.includes("sim0"), said[0]);

  // The same file again, every circuit closed: nothing to retry, nothing touched.
  const pid = host.session!.pid;
  const again = await reload(r);
  assert.deepEqual(again.providers_retried, []);
  assert.deepEqual(again.providers_unchanged, ["sim0", "sim1"]);
  assert.equal(again.summary, "config reload: no change");
  assert.equal(registry.host("sim0"), host);
  assert.equal(host.session!.pid, pid, "the same process");
});

Deno.test("ConfigReloader retrying a provider whose circuit is open that does not come up reports it failed, its circuit open again; the next reload retries it", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-circuit-retry-" });
  try {
    const yaml = `${dir}/sim0.yaml`;
    await Deno.writeTextFile(yaml, await Deno.readTextFile(SIM_INERT_YAML));
    const config = testConfig({
      providers: [simProvider("sim0", { yaml, restart: false })],
      pollingIntervalMs: 200,
    });
    await using r = await reloadingRig(config);
    const { registry } = r.kernel;
    await crash(r, "sim0");
    assert.equal(registry.host("sim0")!.lifecycle, "CIRCUIT_OPEN");

    // The simulator's file is gone: the retry cannot come up.
    await Deno.remove(yaml);
    const failed = await reload(r);
    assert.deepEqual(failed.providers_retried, []);
    assert.equal(failed.providers_failed.length, 1, JSON.stringify(failed.providers_failed));
    assert.match(failed.providers_failed[0]!, /^sim0: /);
    const host = registry.host("sim0")!;
    assert.equal(host.available, false);
    assert.equal(host.lifecycle, "CIRCUIT_OPEN", "restart_policy disabled: given up again");
    assert.deepEqual(r.kernel.config.providers, config.providers, "its entry stays in effect");

    // Its file back: the next reload of the same configuration retries it again.
    await Deno.writeTextFile(yaml, await Deno.readTextFile(SIM_INERT_YAML));
    const back = await reload(r);
    assert.deepEqual(back.providers_failed, []);
    assert.deepEqual(back.providers_retried, ["sim0"]);
    assert.equal(registry.host("sim0"), host);
    assert.equal(host.available, true);
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ConfigReloader in AUTO retries a provider whose circuit is open: nothing that runs is stopped, so nothing is held back", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
    const config = automationConfig(tree, {
      config: {
        providers: [simProvider("sim0"), simProvider("sim1", { restart: false })],
      },
    });
    await using r = await reloadingRig(config);
    await enterAuto(r.kernel);
    await crash(r, "sim1");
    assert.equal(r.kernel.registry.host("sim1")!.lifecycle, "CIRCUIT_OPEN");
    assert.equal(r.kernel.modes.current(), "AUTO");

    const ev = await reload(r);
    assert.deepEqual(ev.providers_retried, ["sim1"]);
    assert.deepEqual(ev.refused, [], "nothing held back");
    assert.equal(r.kernel.registry.host("sim1")!.available, true);
    assert.equal(r.kernel.modes.current(), "AUTO", "the recipe runs on");
  } finally {
    await dir.dispose();
  }
});

Deno.test("ConfigReloader retrying a provider whose circuit opened while the e-stop is latched brings it to the safe state and reads it back; the latch holds", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-circuit-retry-latched-" });
  try {
    const yaml = `${dir}/sim0.yaml`;
    await Deno.writeTextFile(yaml, await Deno.readTextFile(SIM_INERT_YAML));
    const config = testConfig({
      providers: [
        simProvider("sim0", { yaml, restart: { maxAttempts: 2, backoffMs: [100, 100] } }),
        simProvider("sim1", { yaml: SIM_INERT_YAML }),
      ],
      pollingIntervalMs: 200,
      safety: {
        // The sim's tempctl starts at 60: 10 read back is the ladder's call on this process.
        hooks: [
          call(
            "sim0/tempctl0",
            "set_setpoint",
            { value: { double: 10 } },
            "safety.safe_state.hooks[0]",
          ),
        ],
        expect: [expectation("sim0/tempctl0/setpoint", { equals: 10 })],
        verifyTimeoutMs: 300,
      },
    });
    await using r = await reloadingRig(config, { serve: true });
    const { registry, estop } = r.kernel;
    const base = `http://127.0.0.1:${r.kernel.http!.port}`;
    const status = async (): Promise<{ mode: string; estop: EstopStatus }> => {
      const res = await fetch(`${base}/v0/runtime/status`);
      assert.equal(res.status, 200);
      return await res.json();
    };

    const latch = await fetch(`${base}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    assert.equal(latch.status, 200);
    await latch.body?.cancel();
    assert.equal((await status()).estop.verification?.outcome, "verified");

    // Its simulator's file gone, sim0 cannot start: the crash and both restarts fail, the
    // circuit opens with the e-stop latched.
    await Deno.remove(yaml);
    const host = registry.host("sim0")!;
    r.kill("sim0");
    await waitFor("sim0's circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 30000);
    assert.equal(host.supervision().attempt_count, 3);
    const down = await status();
    assert.equal(down.estop.latched, true);
    // A check stands as read at the stop; its device is shown down (docs/safety.md).
    assert.deepEqual(down.estop.verification?.checks.map((c) => c.device_available), [false]);

    // Startable again: a reload of the same file retries it, and the e-stop secures it.
    await Deno.writeTextFile(yaml, await Deno.readTextFile(SIM_INERT_YAML));
    const before = r.events.length;
    const ev = await reload(r);
    assert.equal(ev.result, "applied");
    assert.deepEqual(ev.providers_retried, ["sim0"]);
    assert.deepEqual(ev.providers_failed, []);
    assert.equal(
      ev.summary,
      "config reload: providers +0 -0 ~0 =1; providers retried (circuit open): sim0; " +
        "e-stop latched: 1 safe-state call(s) run",
    );
    assert.equal(registry.host("sim0"), host, "retried in place");
    assert.equal(host.available, true);
    assert.equal(
      await readSignal(r.kernel, "sim0", "tempctl0", "setpoint"),
      10,
      "the retried process is at the safe state",
    );
    const after = r.events.slice(before);
    assert.equal(after.filter((e) => e.kind === "estop_change").length, 0, "nothing un-latched");
    const verified = after.filter((e) => e.kind === "estop_verification");
    assert.equal(verified.length, 1, JSON.stringify(verified));
    assert.equal(verified[0]!.kind === "estop_verification" && verified[0]!.outcome, "verified");

    const shown = await status();
    assert.equal(shown.estop.latched, true);
    assert.equal(shown.mode, "FAULT");
    assert.equal(shown.estop.verification?.outcome, "verified");
    assert.deepEqual(
      shown.estop.verification?.checks.map((c) => [c.signal, c.outcome, c.device_available]),
      [["sim0/tempctl0/setpoint", "verified", true]],
    );
    assert.equal(estop.latched, true);
    const secured = (await r.kernel.audit.query({ limit: 1000, origin: "estop" })).entries
      .filter((e) => e.action === "estop");
    assert.deepEqual(secured.at(-1)?.args, {
      provider_ids: ["sim0"],
      reason: "available while latched",
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});
