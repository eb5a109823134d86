/**
 * Configuration reload on SIGHUP (issue 16 part 3), end to end: the `runtime` command as a real
 * child process with simulated providers as its children, its configuration file rewritten and
 * SIGHUP sent. Provider processes are told apart by the simulator file each one is given.
 */
import assert from "node:assert/strict";
import { freePort, type RuntimeChild, startRuntimeChild } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { Api, EventStream } from "./alarms_helpers.ts";

/** How long a test waits for a reload (or anything it causes) to show. */
const WAIT_MS = 60000;

/** A temp folder with one simulator file per provider id (so its process can be found). */
class Rig {
  constructor(readonly dir: string, readonly port: number) {}

  static async create(ids: readonly string[]): Promise<Rig> {
    const dir = await Deno.makeTempDir({ prefix: "runtime-reload-" });
    const sim = await Deno.readTextFile(SIM_INERT_YAML);
    for (const id of ids) await Deno.writeTextFile(`${dir}/sim-${id}.yaml`, sim);
    return new Rig(dir, freePort());
  }

  get configPath(): string {
    return `${this.dir}/runtime.yaml`;
  }

  /** A provider entry (YAML flow mapping) running the simulator with this id's file. */
  provider(id: string, extra = ""): string {
    return `  - {id: ${id}, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, ` +
      `--allow-env, ${SIM_MAIN}, --config, ${this.dir}/sim-${id}.yaml]${
        extra ? `, ${extra}` : ""
      }}`;
  }

  /** Writes the configuration file: the runtime section, then `body` (providers etc.). */
  async write(body: string): Promise<void> {
    await Deno.writeTextFile(
      this.configPath,
      `runtime: {data_dir: ${this.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http: {port: ${this.port}}\n${body}`,
    );
  }

  start(): Promise<RuntimeChild> {
    return startRuntimeChild({ config: this.configPath, port: this.port });
  }

  dispose(): Promise<void> {
    return Deno.remove(this.dir, { recursive: true });
  }
}

/** Provider id -> pid of the runtime's child processes running a simulator file of this rig. */
function providerPids(rt: RuntimeChild, rig: Rig): Map<string, number> {
  const out = new Map<string, number>();
  for (const task of Deno.readDirSync(`/proc/${rt.pid}/task`)) {
    let children = "";
    try {
      children = Deno.readTextFileSync(`/proc/${rt.pid}/task/${task.name}/children`);
    } catch {
      continue; // the thread ended meanwhile
    }
    for (const pid of children.trim().split(/\s+/).filter((p) => p !== "").map(Number)) {
      let cmdline = "";
      try {
        cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
      } catch {
        continue;
      }
      const m = new RegExp(`${rig.dir}/sim-([a-z0-9]+)\\.yaml`).exec(cmdline);
      if (m) out.set(m[1], pid);
    }
  }
  return out;
}

/** Polls `check` until it returns a value other than undefined/false, or fails after WAIT_MS. */
async function waitFor<T>(what: string, check: () => Promise<T> | T): Promise<NonNullable<T>> {
  const deadline = Date.now() + WAIT_MS;
  for (;;) {
    const v = await check();
    if (v !== undefined && v !== null && v !== false) return v as NonNullable<T>;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** The `config reload:` summary lines logged so far. */
function summaries(rt: RuntimeChild): string[] {
  return rt.stderr().split("\n").filter((l) => / config reload: (providers|no change)/.test(l));
}

/** Sends SIGHUP and waits for the reload's summary line (the `n`th one); returns it. */
async function reload(rt: RuntimeChild, n: number): Promise<string> {
  rt.signal("SIGHUP");
  return await waitFor(`reload summary #${n}`, () => summaries(rt)[n - 1]);
}

async function metric(api: Api, sample: string): Promise<number | undefined> {
  const text = await (await fetch(`${api.base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

Deno.test("SIGHUP adds, restarts and removes providers and leaves an unchanged one untouched (same process, state, no availability event)", async () => {
  const rig = await Rig.create(["keep", "change", "gone", "added"]);
  await rig.write(
    `polling: {interval_ms: 100}\nproviders:\n${rig.provider("keep")}\n${rig.provider("change")}\n${
      rig.provider("gone")
    }\n`,
  );
  const rt = await rig.start();
  const api = new Api(rt.base);
  let events: EventStream | null = null;
  try {
    const before = providerPids(rt, rig);
    assert.deepEqual([...before.keys()].sort(), ["change", "gone", "keep"]);
    // State of the unchanged provider: a relay switched on before the reload.
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const on = await api.post("/v0/call", {
      provider_id: "keep",
      device_id: "relayio0",
      function_id: 1,
      args: { enabled: { type: "bool", bool: true } },
    });
    assert.equal(on.status, 200, JSON.stringify(on.json));
    await waitFor("relay on", async () => {
      const s = await api.get("/v0/state/keep/relayio0");
      return s.json.values?.find((x: { signal_id: string }) => x.signal_id === "relay_ch1_state")
        ?.value?.bool === true;
    });
    events = await EventStream.open(rt.base);

    await rig.write(
      `polling: {interval_ms: 200}\nproviders:\n${rig.provider("added")}\n${
        rig.provider("keep")
      }\n${rig.provider("change", "timeout_ms: 6000")}\n`,
    );
    const summary = await reload(rt, 1);
    assert.match(summary, /^INFO .*config reload: providers \+1 -1 ~1 =1; polling 100->200 ms/);

    const status = await waitFor("providers available", async () => {
      const s = await api.get("/v0/runtime/status");
      const all = s.json.providers as { provider_id: string; state: string }[];
      return all.length === 3 && all.every((p) => p.state === "AVAILABLE") ? s.json : undefined;
    });
    assert.deepEqual(
      status.providers.map((p: { provider_id: string }) => p.provider_id),
      ["added", "keep", "change"],
    );
    assert.equal(status.polling_interval_ms, 200);
    const after = await waitFor("gone's process to end", () => {
      const pids = providerPids(rt, rig);
      return pids.has("gone") ? undefined : pids;
    });
    assert.deepEqual([...after.keys()].sort(), ["added", "change", "keep"]);
    assert.equal(after.get("keep"), before.get("keep"), "the unchanged provider kept its process");
    assert.notEqual(after.get("change"), before.get("change"), "the changed one was restarted");
    const relay = await api.get("/v0/state/keep/relayio0");
    assert.equal(
      relay.json.values.find((x: { signal_id: string }) => x.signal_id === "relay_ch1_state")
        .value.bool,
      true,
      "the unchanged provider's device state survived",
    );
    const reloadEvents = await waitFor("config_reload event", () => {
      const e = events!.of("config_reload");
      return e.length > 0 ? e : undefined;
    });
    assert.equal(reloadEvents.length, 1);
    assert.equal(reloadEvents[0].data.result, "applied");
    assert.deepEqual(reloadEvents[0].data.providers_added, ["added"]);
    assert.deepEqual(reloadEvents[0].data.providers_removed, ["gone"]);
    assert.deepEqual(reloadEvents[0].data.providers_restarted, ["change"]);
    assert.deepEqual(reloadEvents[0].data.providers_unchanged, ["keep"]);
    const blips = events.frames.filter((f) =>
      (f.event === "provider_health_change" || f.event === "device_availability") &&
      f.data.provider_id === "keep"
    );
    assert.deepEqual(blips, [], "no availability change for the unchanged provider");
    assert.ok(
      events.frames.some((f) =>
        f.event === "provider_health_change" && f.data.provider_id === "gone" &&
        f.data.state === "UNAVAILABLE"
      ),
      "the removed provider went UNAVAILABLE on the stream",
    );
    assert.equal(await metric(api, 'runtime_config_reloads_total{result="success"}'), 1);
    assert.equal(await metric(api, 'runtime_config_reloads_total{result="failure"}'), 0);
    assert.ok((await metric(api, "runtime_config_last_reload_success_timestamp_seconds"))! > 0);
  } finally {
    await events?.close();
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP with an invalid file keeps the old configuration, logs every diagnostic with line:column and counts the failure", async () => {
  const rig = await Rig.create(["p0"]);
  await rig.write(`polling: {interval_ms: 100}\nproviders:\n${rig.provider("p0")}\n`);
  const rt = await rig.start();
  const api = new Api(rt.base);
  try {
    const pid = providerPids(rt, rig).get("p0");
    // Two errors: line 3 (polling below its minimum) and line 4 (an unknown log level).
    await rig.write(
      `polling: {interval_ms: 5}\nlogging: {level: loud}\nproviders:\n${rig.provider("p0")}\n`,
    );
    rt.signal("SIGHUP");
    const failed = await waitFor(
      "reload failure",
      () => rt.stderr().split("\n").find((l) => l.includes("config reload failed")),
    );
    assert.match(failed, /^ERROR .*config reload failed: 2 error\(s\) in the file/);
    const diagnostics = rt.stderr().split("\n").filter((l) =>
      /^ERROR .*config reload: .*runtime\.yaml:\d+:\d+: error: /.test(l)
    );
    assert.equal(diagnostics.length, 2, rt.stderr());
    assert.match(diagnostics[0], /runtime\.yaml:3:\d+: error: polling\.interval_ms/);
    assert.match(diagnostics[1], /runtime\.yaml:4:\d+: error: logging\.level/);
    assert.equal(await metric(api, 'runtime_config_reloads_total{result="failure"}'), 1);
    assert.equal(await metric(api, 'runtime_config_reloads_total{result="success"}'), 0);
    assert.equal(await metric(api, "runtime_config_last_reload_success_timestamp_seconds"), 0);
    const status = await api.get("/v0/runtime/status");
    assert.equal(status.json.polling_interval_ms, 100, "the old configuration still runs");
    assert.equal(providerPids(rt, rig).get("p0"), pid, "the provider was not touched");
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});
