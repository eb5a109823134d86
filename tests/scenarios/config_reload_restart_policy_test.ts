/**
 * A reload that changes only a provider's `restart_policy` (README, "Reloading the
 * configuration"), end to end: the `runtime` command as a real child process with the simulated
 * provider as its child, its configuration file rewritten and SIGHUP sent. The provider's process
 * and the state it holds survive the reload, and the new policy governs its next crash.
 */
import assert from "node:assert/strict";
import {
  childPids,
  type RuntimeChild,
  startRuntimeChildOnFreePort,
} from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { Api, EventStream } from "./alarms_helpers.ts";
import { waitFor } from "../helpers/kernel.ts";

/** How long a test waits for a reload (or anything it causes) to show. */
const WAIT_MS = 60000;

/** A temp folder with the simulator's file and the runtime's configuration. */
class Rig {
  /** The API's port: a free one {@link start} picked and wrote to the configuration. */
  port = 0;

  constructor(readonly dir: string) {}

  static async create(): Promise<Rig> {
    const dir = await Deno.makeTempDir({ prefix: "runtime-reload-policy-" });
    await Deno.writeTextFile(`${dir}/sim-p0.yaml`, await Deno.readTextFile(SIM_INERT_YAML));
    return new Rig(dir);
  }

  get configPath(): string {
    return `${this.dir}/runtime.yaml`;
  }

  /** Writes the configuration: one provider `p0` with this restart_policy (a flow mapping). */
  async write(restartPolicy: string): Promise<void> {
    await Deno.writeTextFile(
      this.configPath,
      `runtime: {data_dir: ${this.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http: {port: ${this.port}}\npolling: {interval_ms: 200}\nproviders:\n` +
        `  - {id: p0, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, ` +
        `--allow-env, ${SIM_MAIN}, --config, ${this.dir}/sim-p0.yaml], ` +
        `restart_policy: ${restartPolicy}}\n`,
    );
  }

  /** The pid of the simulator process running this rig's file (undefined: none runs). */
  pid(rt: RuntimeChild): number | undefined {
    for (const pid of childPids(rt.pid)) {
      try {
        if (Deno.readTextFileSync(`/proc/${pid}/cmdline`).includes(`${this.dir}/sim-p0.yaml`)) {
          return pid;
        }
      } catch {
        continue;
      }
    }
    return undefined;
  }

  /** Starts the runtime on a free port ({@link port}), with {@link write}`(restartPolicy)`. */
  start(restartPolicy: string): Promise<RuntimeChild> {
    return startRuntimeChildOnFreePort(async (port) => {
      this.port = port;
      await this.write(restartPolicy);
      return { config: this.configPath, port };
    });
  }

  dispose(): Promise<void> {
    return Deno.remove(this.dir, { recursive: true });
  }
}

/** The `config reload:` summary lines logged so far. */
function summaries(rt: RuntimeChild): string[] {
  return rt.stderr().split("\n").filter((l) => / config reload: (providers|no change)/.test(l));
}

/** Sends SIGHUP and waits for the reload's summary line (the `n`th one); returns it. */
async function reload(rt: RuntimeChild, n: number): Promise<string> {
  rt.signal("SIGHUP");
  return await waitFor(`reload summary #${n}`, () => summaries(rt)[n - 1], WAIT_MS);
}

/** p0's entry of GET /v0/providers/health. */
async function health(api: Api): Promise<
  {
    state: string;
    lifecycle_state: string;
    supervision: { enabled: boolean; attempt_count: number; max_attempts: number };
  }
> {
  const r = await api.get("/v0/providers/health");
  assert.equal(r.status, 200);
  return r.json.providers.find((p: { provider_id: string }) => p.provider_id === "p0");
}

/** Switches relayio0's channel 1 on (state the provider process holds) and waits to see it. */
async function relayOn(api: Api): Promise<void> {
  const on = await api.post("/v0/call", {
    provider_id: "p0",
    device_id: "relayio0",
    function_id: 1,
    args: { enabled: { type: "bool", bool: true } },
  });
  assert.equal(on.status, 200, JSON.stringify(on.json));
  await waitFor("relay on", () => relayState(api).then((v) => v === true), WAIT_MS);
}

async function relayState(api: Api): Promise<boolean | undefined> {
  const s = await api.get("/v0/state/p0/relayio0");
  return s.json.values?.find((x: { signal_id: string }) => x.signal_id === "relay_ch1_state")
    ?.value?.bool;
}

async function withRig(
  policy: string,
  fn: (rig: Rig, rt: RuntimeChild, api: Api) => Promise<void>,
): Promise<void> {
  const rig = await Rig.create();
  const rt = await rig.start(policy);
  try {
    await fn(rig, rt, new Api(rt.base));
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
}

const ENABLED_3 =
  "{enabled: true, max_attempts: 3, backoff_ms: [100, 100, 100], timeout_ms: 30000, success_reset_ms: 60000}";

Deno.test("SIGHUP changing only restart_policy (enabled -> false) keeps the provider's process and state; its next crash leaves it down", async () => {
  await withRig(ENABLED_3, async (rig, rt, api) => {
    const pid = rig.pid(rt);
    assert.ok(pid !== undefined, "p0 runs");
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    await relayOn(api);
    const events = await EventStream.open(rt.base);
    try {
      await rig.write("{enabled: false}");
      const summary = await reload(rt, 1);
      assert.match(
        summary,
        /^INFO .*config reload: providers \+0 -0 ~0 =0; providers updated in place: p0 \(restart_policy\)$/,
      );
      assert.equal(rig.pid(rt), pid, "the same process runs on");
      assert.equal(await relayState(api), true, "the state the process holds is kept");
      const h = await health(api);
      assert.equal(h.state, "AVAILABLE");
      assert.equal(h.supervision.enabled, false, "the new policy is in effect");
      const reloaded = await waitFor("config_reload event", () => {
        const e = events.of("config_reload");
        return e.length > 0 ? e : undefined;
      }, WAIT_MS);
      assert.equal(reloaded.length, 1);
      assert.equal(reloaded[0]!.data.result, "applied");
      assert.deepEqual(reloaded[0]!.data.providers_updated, ["p0: restart_policy"]);
      assert.deepEqual(reloaded[0]!.data.providers_restarted, []);
      assert.deepEqual(reloaded[0]!.data.providers_unchanged, []);
      assert.deepEqual(
        events.frames.filter((f) =>
          f.event === "provider_health_change" && f.data.provider_id === "p0"
        ),
        [],
        "no availability change",
      );
    } finally {
      await events.close();
    }
    // The next crash: the old policy would restart it after 100 ms; the new one keeps it down.
    Deno.kill(pid, "SIGKILL");
    const down = await waitFor("p0 down", async () => {
      const h = await health(api);
      return h.state === "UNAVAILABLE" ? h : undefined;
    }, WAIT_MS);
    assert.equal(down.lifecycle_state, "CIRCUIT_OPEN", "restart_policy disabled: it stays down");
    assert.equal(rig.pid(rt), undefined, "no process of p0 was started again");
    // The line is written as the circuit opens; it reaches the pipe a moment after health says so.
    await waitFor(
      "the circuit's WARN line",
      () => /restart_policy disabled: provider stays down \(circuit open\)/.test(rt.stderr()),
      WAIT_MS,
    );
  });
});

Deno.test("SIGHUP lowering restart_policy.max_attempts to 1 keeps the process; the second crash in a streak opens the circuit", async () => {
  await withRig(ENABLED_3, async (rig, rt, api) => {
    const pid = rig.pid(rt)!;
    await rig.write(
      "{enabled: true, max_attempts: 1, backoff_ms: [100], timeout_ms: 30000, success_reset_ms: 60000}",
    );
    assert.match(await reload(rt, 1), /providers updated in place: p0 \(restart_policy\)$/);
    assert.equal(rig.pid(rt), pid, "the same process runs on");
    assert.equal((await health(api)).supervision.max_attempts, 1);
    // First crash: restart attempt 1 of 1, which succeeds.
    Deno.kill(pid, "SIGKILL");
    const again = await waitFor("p0's restarted process", () => {
      const p = rig.pid(rt);
      return p !== undefined && p !== pid ? p : undefined;
    }, WAIT_MS);
    const up = await waitFor("p0 up again", async () => {
      const h = await health(api);
      return h.state === "AVAILABLE" ? h : undefined;
    }, WAIT_MS);
    assert.equal(up.supervision.attempt_count, 1, "the streak goes on (success_reset_ms 60 s)");
    // Second crash within the streak: max_attempts 1 is spent (the old 3 would restart it).
    Deno.kill(again, "SIGKILL");
    const open = await waitFor("p0's circuit open", async () => {
      const h = await health(api);
      return h.lifecycle_state === "CIRCUIT_OPEN" ? h : undefined;
    }, WAIT_MS);
    assert.equal(open.supervision.attempt_count, 2);
    assert.equal(rig.pid(rt), undefined, "not started again");
  });
});
