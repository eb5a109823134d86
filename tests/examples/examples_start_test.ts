/**
 * Every configuration under examples/, and the one the systemd README installs on a Pi, STARTED
 * (not only checked) as a real `runtime` process until its providers are AVAILABLE, then stopped
 * with SIGTERM (exit 0): examples/minimal.yaml once passed --check-config but never started, and
 * the Pi configuration could never enter AUTO.
 *
 * Each configuration runs from a temp folder, so run journals (data_dir) never land in the
 * checkout. What the folder holds besides the configuration, and why:
 * - a mirror of the checkout made of symlinks (withCheckoutMirror), with the configuration at
 *   `examples/config.yaml`, so its relative paths resolve exactly as they do in the checkout;
 * - the API port: `--port` with a free port instead of http.port (8080 may be taken);
 * - examples/full.yaml's second provider, `./bin/bench-io-provider --bus /dev/ttyUSB0`, is a
 *   stand-in script there (no such hardware here) that runs the simulated provider with
 *   sim-inert.yaml and ignores its arguments; everything else in full.yaml is used as written
 *   (telemetry and TLS are off in it, so nothing else needs a substitute);
 * - the systemd README's configuration (step 4): its provider `/opt/runtime/bin/sim-provider`
 *   (the compiled simulated provider, which `deno compile` cannot build here without network) is
 *   replaced by a script running the same provider from source, and `data_dir:
 *   /var/lib/runtime/runs` by the temp folder's; `sim.yaml` and `behaviors/demo.xml` are next to
 *   it as step 4 installs them.
 */
import assert from "node:assert/strict";
import {
  type RuntimeChild,
  startRuntimeInMirror,
  withCheckoutMirror as inTempFolder,
} from "../helpers/runtime_process.ts";
import { waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { systemdReadmeConfig } from "./_shipped.ts";

const REPO = new URL("../../", import.meta.url).pathname;
const EXAMPLES = `${REPO}examples`;
const SIM_MAIN = `${EXAMPLES}/providers/sim/main.ts`;
const J = { "content-type": "application/json" };

/** A shell script that runs the simulated provider from source with `yaml`, ignoring its args. */
function simStandIn(yaml: string): string {
  return `#!/bin/sh\nexec ${JSON.stringify(Deno.execPath())} run --quiet --allow-read --allow-env ${
    JSON.stringify(SIM_MAIN)
  } --config ${JSON.stringify(yaml)}\n`;
}

async function post(rt: RuntimeChild, path: string, body: unknown) {
  const r = await apiFetch(`${rt.base}${path}`, {
    method: "POST",
    headers: J,
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

async function get(rt: RuntimeChild, path: string) {
  const r = await apiFetch(`${rt.base}${path}`);
  return { status: r.status, body: await r.json() };
}

/** Starts `dir/config.yaml` on a free port, runs `fn`, stops it and expects exit code 0. */
async function withRuntime(dir: string, fn: (rt: RuntimeChild) => Promise<void>): Promise<void> {
  const rt = await startRuntimeInMirror(dir);
  try {
    await fn(rt);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
  }
}

/** The provider ids and their states from GET /v0/runtime/status. */
async function providerStates(rt: RuntimeChild): Promise<Record<string, string>> {
  const s = await get(rt, "/v0/runtime/status");
  return Object.fromEntries(
    (s.body.providers as { provider_id: string; state: string }[]).map((p) => [
      p.provider_id,
      p.state,
    ]),
  );
}

/** MANUAL then AUTO; resolves with the AUTO answer. */
async function enterAuto(rt: RuntimeChild) {
  assert.equal((await post(rt, "/v0/mode", { mode: "MANUAL" })).status, 200);
  return await post(rt, "/v0/mode", { mode: "AUTO" });
}

const WARNED_AUTO = /WARN .*automation is enabled but POST \/v0\/mode AUTO will answer 409/;

/**
 * POST /v0/estop: the example's safe state is commanded (a rung, not `none`; every call succeeded)
 * and read back as `verified` (minimal.yaml's e-stop once did nothing).
 */
async function assertEstopVerified(rt: RuntimeChild): Promise<void> {
  const r = await post(rt, "/v0/estop", { reason: "example check" });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.notEqual(r.body.software_safe_state, "none");
  assert.ok(r.body.actions.length > 0);
  assert.deepEqual(r.body.actions.filter((a: { success: boolean }) => !a.success), []);
  assert.equal(r.body.verification.outcome, "verified", JSON.stringify(r.body.verification));
}

Deno.test("examples/minimal.yaml starts: its simulated provider is AVAILABLE", async () => {
  await inTempFolder(await Deno.readTextFile(`${EXAMPLES}/minimal.yaml`), async (dir) => {
    await withRuntime(dir, async (rt) => {
      assert.deepEqual(await providerStates(rt), { sim0: "AVAILABLE" });
      const devices = await get(rt, "/v0/devices");
      assert.equal(devices.body.devices.length, 5);
      await assertEstopVerified(rt);
    });
  });
});

Deno.test("examples/demo.yaml starts, and AUTO is allowed", async () => {
  await inTempFolder(await Deno.readTextFile(`${EXAMPLES}/demo.yaml`), async (dir) => {
    await withRuntime(dir, async (rt) => {
      assert.deepEqual(await providerStates(rt), { sim0: "AVAILABLE" });
      const auto = await enterAuto(rt);
      assert.equal(auto.status, 200, JSON.stringify(auto.body));
      assert.equal(auto.body.mode, "AUTO");
      assert.doesNotMatch(rt.stderr(), WARNED_AUTO);
      await assertEstopVerified(rt);
    });
  });
});

Deno.test("examples/alarms.yaml starts with every alarm normal and no interlock blocking, and AUTO is allowed", async () => {
  await inTempFolder(await Deno.readTextFile(`${EXAMPLES}/alarms.yaml`), async (dir) => {
    await withRuntime(dir, async (rt) => {
      assert.deepEqual(await providerStates(rt), { sim0: "AVAILABLE" });
      const alarms = await get(rt, "/v0/alarms");
      assert.deepEqual(alarms.body.alarms.map((a: { state: string }) => a.state), [
        "normal",
        "normal",
        "normal",
      ]);
      const interlocks = await get(rt, "/v0/interlocks");
      assert.deepEqual(interlocks.body.interlocks.map((i: { blocking: boolean }) => i.blocking), [
        false,
      ]);
      assert.deepEqual(interlocks.body.interlocks[0].unresolved_block, []);
      const auto = await enterAuto(rt);
      assert.equal(auto.status, 200, JSON.stringify(auto.body));
      assert.doesNotMatch(rt.stderr(), WARNED_AUTO);
      assert.doesNotMatch(rt.stderr(), /ERROR/);
      await assertEstopVerified(rt);
    });
  });
});

Deno.test("examples/full.yaml starts with a stand-in for its bench-io provider, and AUTO is allowed", async () => {
  const extra = { "bin/bench-io-provider": simStandIn(`${EXAMPLES}/providers/sim/sim-inert.yaml`) };
  await inTempFolder(await Deno.readTextFile(`${EXAMPLES}/full.yaml`), async (dir) => {
    await withRuntime(dir, async (rt) => {
      assert.deepEqual(await providerStates(rt), { sim0: "AVAILABLE", "bench-io": "AVAILABLE" });
      const auto = await enterAuto(rt);
      assert.equal(auto.status, 200, JSON.stringify(auto.body));
      assert.doesNotMatch(rt.stderr(), WARNED_AUTO);
      const params = await get(rt, "/v0/parameters");
      assert.deepEqual(
        params.body.parameters.map((p: { name: string }) => p.name),
        ["target_temp", "motor_duty", "cycles", "dry_run", "recipe"],
      );
      await assertEstopVerified(rt);
    });
    // data_dir (anolis-data, relative to the configuration) was created in the temp folder.
    assert.ok((await Deno.stat(`${dir}/anolis-data`)).isDirectory);
  }, extra);
});

/** The README's configuration with the substitutions described at the top of this file. */
function forThisMachine(config: string, dir: string): string {
  assert.ok(config.includes("command: /opt/runtime/bin/sim-provider"));
  assert.ok(config.includes("data_dir: /var/lib/runtime/runs"));
  return config
    .replace("command: /opt/runtime/bin/sim-provider", `command: ${dir}/bin/sim-provider`)
    .replace("data_dir: /var/lib/runtime/runs", `data_dir: ${dir}/runs`);
}

Deno.test("The systemd README's Raspberry Pi configuration starts, and AUTO is allowed", async () => {
  const readme = await systemdReadmeConfig();
  const dir = await Deno.makeTempDir({ prefix: "runtime-pi-" });
  try {
    await Deno.mkdir(`${dir}/bin`);
    // Step 4 installs sim.yaml next to the configuration; the stand-in reads it from there.
    await Deno.copyFile(`${EXAMPLES}/providers/sim/sim.yaml`, `${dir}/sim.yaml`);
    await Deno.writeTextFile(`${dir}/bin/sim-provider`, simStandIn(`${dir}/sim.yaml`), {
      mode: 0o755,
    });
    await Deno.symlink(`${EXAMPLES}/behaviors`, `${dir}/behaviors`);
    await Deno.writeTextFile(`${dir}/config.yaml`, forThisMachine(readme, dir));
    await withRuntime(dir, async (rt) => {
      assert.deepEqual(await providerStates(rt), { sim0: "AVAILABLE" });
      const auto = await enterAuto(rt);
      assert.equal(auto.status, 200, JSON.stringify(auto.body));
      assert.doesNotMatch(rt.stderr(), WARNED_AUTO);
      await assertEstopVerified(rt);
    });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("A configuration whose AUTO would be refused is warned about at start-up, naming the missing hook", async () => {
  // The demo without its AUTO -> FAULT hook (what the systemd README's configuration once was).
  const demo = await Deno.readTextFile(`${EXAMPLES}/demo.yaml`);
  const start = demo.indexOf("  mode_transition_hooks:");
  const end = demo.indexOf("\n# The demo machine's safe state");
  assert.ok(start > 0 && end > start);
  await inTempFolder(demo.slice(0, start) + demo.slice(end), async (dir) => {
    await withRuntime(dir, async (rt) => {
      // The runtime's stderr reaches this process through a pipe read as it comes: under load
      // the line may follow readiness by a moment.
      await waitFor("the start-up warning about AUTO", () => WARNED_AUTO.test(rt.stderr()));
      const warning = rt.stderr().split("\n").filter((l) => WARNED_AUTO.test(l));
      assert.equal(warning.length, 1, rt.stderr());
      assert.match(warning[0]!, /no mode_transition_hook covers AUTO -> FAULT/);
      const auto = await enterAuto(rt);
      assert.equal(auto.status, 409);
      assert.ok(
        warning[0]!.endsWith(auto.body.status.message),
        "the warning says what AUTO answers",
      );
    });
  });
});
