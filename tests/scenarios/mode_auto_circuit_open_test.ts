/**
 * `POST /v0/mode` AUTO while the restart circuit of a provider the behavior tree names is open
 * (docs/safety.md section 5: a provider whose circuit is open is down; entering AUTO is refused
 * while a device the tree names literally is down): refused with 409 naming the device and why,
 * the mode left as it was. A reload of the same file retries the provider (README, "Reloading the
 * configuration"); once it is up again AUTO is accepted, and entering it releases the device's
 * latch. A provider whose restarts are used up (RESTARTING, then its circuit open with no
 * availability change between) is named down for its open circuit, dated from its crash still.
 * Real HTTP on loopback, the simulated providers as child processes, the reload through the
 * kernel's reloader (SIGHUP's path).
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import { serveHttp } from "../../src/host/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import { type Rig, rig } from "../helpers/rig.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { automationConfig, TreeDir, treeXml } from "./automation_helpers.ts";

/** Reads sim1's motor duty, then waits: the tree names sim1/motorctl0 literally. */
const READ_SIM1 = treeXml(
  `<Sequence name="watch">
      <ReadSignal name="read" device_handle="sim1/motorctl0" signal_id="motor1_duty"
                  value="{duty_now}" />
      <Sleep msec="60000" />
    </Sequence>`,
);

async function reloadingRig(config: Config): Promise<Rig> {
  let file: Config | null = null;
  const r = await rig({
    config,
    programs: false,
    host: {
      serve: serveHttp,
      loadConfig: () => Promise.resolve({ ok: true, config: file!, warnings: [] }),
    },
  });
  file = r.kernel.config;
  return r;
}

/** The answer of POST /v0/mode: its HTTP status and its envelope's status. */
interface ModeAnswer {
  status: number;
  json: { status: { code: string; message: string } };
}

async function postMode(base: string, mode: string): Promise<ModeAnswer> {
  const res = await fetch(`${base}/v0/mode`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ mode }),
  });
  return { status: res.status, json: await res.json() };
}

Deno.test("POST /v0/mode AUTO is refused while the circuit of a provider the tree names is open, and accepted once a reload brought it back", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("watch.xml", READ_SIM1);
    const config = automationConfig(tree, {
      config: { providers: [simProvider("sim0"), simProvider("sim1", { restart: false })] },
    });
    await using r = await reloadingRig(config);
    const base = `http://127.0.0.1:${r.kernel.http!.port}`;
    assert.equal((await postMode(base, "MANUAL")).status, 200);

    const host = r.kernel.registry.host("sim1")!;
    const failures = host.counts().failures;
    r.kill("sim1");
    await waitFor("sim1's crash seen", () => host.counts().failures > failures, 30000);
    await waitFor("sim1's circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 30000);

    const refused = await postMode(base, "AUTO");
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.equal(refused.json.status.code, "FAILED_PRECONDITION");
    assert.match(
      refused.json.status.message,
      /refusing AUTO: .*sim1\/motorctl0 .*provider sim1 is unavailable \(CIRCUIT_OPEN\)/,
    );
    assert.equal(r.kernel.modes.current(), "MANUAL", "the mode stays");

    await r.kernel.reloader!.request();
    assert.equal(host.available, true, "the reload retried sim1");
    await waitFor("motorctl0 polled", () => r.kernel.cache.device("sim1", "motorctl0")?.available);
    const accepted = await postMode(base, "AUTO");
    assert.equal(accepted.status, 200, JSON.stringify(accepted.json));
    assert.equal(r.kernel.modes.current(), "AUTO");
    assert.deepEqual(r.kernel.automation!.status().device_loss_latched, []);
  } finally {
    await dir.dispose();
  }
});

/** `blocked_devices` of GET /v0/automation/status. */
async function blocked(
  base: string,
): Promise<{ device_handle: string; reason: string; since_epoch_ms: number }[]> {
  const res = await fetch(`${base}/v0/automation/status`);
  assert.equal(res.status, 200);
  return (await res.json()).blocked_devices;
}

Deno.test("A provider whose restarts are used up: POST /v0/mode AUTO and the automation status name its open circuit, not a restart that will not come", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write("watch.xml", READ_SIM1);
    const yaml = await dir.write("sim1.yaml", await Deno.readTextFile(SIM_INERT_YAML));
    const config = automationConfig(tree, {
      config: {
        providers: [
          simProvider("sim0"),
          simProvider("sim1", { yaml, restart: { maxAttempts: 1, backoffMs: [1000] } }),
        ],
      },
    });
    await using r = await reloadingRig(config);
    const base = `http://127.0.0.1:${r.kernel.http!.port}`;
    assert.equal((await postMode(base, "MANUAL")).status, 200);

    // Its simulator's file gone, sim1 cannot start: the crash is RESTARTING (unavailable), then
    // its one restart fails and the circuit opens -- no availability change between the two.
    await Deno.remove(yaml);
    const host = r.kernel.registry.host("sim1")!;
    r.kill("sim1");
    await waitFor("sim1 restarting", () => host.lifecycle === "RESTARTING", 30000);
    const [restarting] = await blocked(base);
    assert.equal(restarting?.reason, "provider sim1 is unavailable (RESTARTING)");
    await waitFor("sim1's circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 30000);
    assert.equal(host.supervision().attempt_count, 2, "one failed restart");

    const down = "provider sim1 is unavailable (CIRCUIT_OPEN)";
    const refused = await postMode(base, "AUTO");
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.match(
      refused.json.status.message,
      /^refusing AUTO: the behavior tree names sim1\/motorctl0 \(provider sim1 is unavailable \(CIRCUIT_OPEN\)\)/,
    );
    // The reason follows; the date stays the outage's first moment.
    assert.deepEqual(
      (await blocked(base)).map((b) => [b.device_handle, b.reason, b.since_epoch_ms]),
      [["sim1/motorctl0", down, restarting!.since_epoch_ms]],
    );
  } finally {
    await dir.dispose();
  }
});
