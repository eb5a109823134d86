/**
 * Configuration reload on SIGHUP (README, "Reloading the configuration"), end to end: the `runtime`
 * command as a real child process with simulated providers as its children, its configuration file
 * rewritten and SIGHUP sent. Provider processes are told apart by the simulator file each one is
 * given.
 */
import { apiFetch } from "../helpers/openapi_check.ts";
import assert from "node:assert/strict";
import {
  childPids,
  freePort,
  type RuntimeChild,
  type RuntimeChildOptions,
  startRuntimeChildOnFreePort,
} from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { Api, EventStream } from "./alarms_helpers.ts";
import { waitFor } from "../helpers/kernel.ts";
import { connect, readResponse, send } from "../http/_raw_socket.ts";
import { certWithDates, selfSignedCert } from "../http/_tls_certs.ts";
import { TLS_FILE_MAX_BYTES } from "../../src/host/mod.ts";

/** How long a test waits for a reload (or anything it causes) to show. */
const WAIT_MS = 60000;
/** The longest a gated provider waits for the test to let it start (Rig.gatedProvider). */
const GATE_S = 30;

/** A temp folder with one simulator file per provider id (so its process can be found). */
class Rig {
  /** The API's port: a free one {@link start} picked and wrote to the configuration. */
  port = 0;
  /** The body last given to {@link write}. */
  #body = "";

  constructor(readonly dir: string) {}

  static async create(ids: readonly string[]): Promise<Rig> {
    const dir = await Deno.makeTempDir({ prefix: "runtime-reload-" });
    const sim = await Deno.readTextFile(SIM_INERT_YAML);
    for (const id of ids) await Deno.writeTextFile(`${dir}/sim-${id}.yaml`, sim);
    return new Rig(dir);
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

  /**
   * A provider entry whose process starts the simulator only once the test calls {@link open}
   * (through /bin/sh, `exec`: the same pid): a reload that starts it is mid-restart until then.
   * After GATE_S seconds it starts anyway, so that a runtime stuck behind the reload fails the
   * test's assertions instead of hanging it.
   */
  gatedProvider(id: string): string {
    const sim = `${Deno.execPath()} run --quiet --allow-read --allow-env ${SIM_MAIN} --config ` +
      `${this.dir}/sim-${id}.yaml`;
    const gate = `${this.dir}/gate-${id}`;
    const wait = `i=0; while [ ! -e ${gate} ] && [ $i -lt ${GATE_S * 50} ]; do ` +
      "sleep 0.02; i=$((i+1)); done";
    return `  - {id: ${id}, command: /bin/sh, args: [-c, "${wait}; exec ${sim}"], ` +
      `hello_timeout_ms: ${WAIT_MS}}`;
  }

  /** Lets the process of {@link gatedProvider} `id` start the simulator. */
  open(id: string): Promise<void> {
    return Deno.writeTextFile(`${this.dir}/gate-${id}`, "");
  }

  /** Writes the configuration file: the runtime section, then `body` (providers etc.). */
  async write(body: string): Promise<void> {
    this.#body = body;
    await Deno.writeTextFile(
      this.configPath,
      `runtime: {data_dir: ${this.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http: {port: ${this.port}}\n${body}`,
    );
  }

  /**
   * Starts the runtime on a free port ({@link port}); before each attempt `write` writes the
   * configuration with it (default: the body last given to {@link write}, written again).
   */
  start(
    o: Omit<RuntimeChildOptions, "config" | "port"> = {},
    write: () => Promise<void> = () => this.write(this.#body),
  ): Promise<RuntimeChild> {
    return startRuntimeChildOnFreePort(async (port) => {
      this.port = port;
      await write();
      return { ...o, config: this.configPath, port };
    });
  }

  dispose(): Promise<void> {
    return Deno.remove(this.dir, { recursive: true });
  }
}

/** Provider id -> pid of the runtime's child processes running a simulator file of this rig. */
/** Waits until provider `id` runs as a process other than `oldPid` (a restart has spawned it). */
async function newProcess(rt: RuntimeChild, rig: Rig, id: string, oldPid: number | undefined) {
  await waitFor(`${id}'s new process`, () => {
    const pid = providerPids(rt, rig).get(id);
    return pid !== undefined && pid !== oldPid;
  }, WAIT_MS);
}

function providerPids(rt: RuntimeChild, rig: Rig): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of childPids(rt.pid)) {
    let cmdline = "";
    try {
      cmdline = Deno.readTextFileSync(`/proc/${pid}/cmdline`);
    } catch {
      continue;
    }
    const m = new RegExp(`${rig.dir}/sim-([a-z0-9]+)\\.yaml`).exec(cmdline);
    if (m) out.set(m[1]!, pid);
  }
  return out;
}

/** SHA-256 of a text's UTF-8 bytes, lower-case hex (a tree's automation_version digest). */
async function sha256Hex(text: string): Promise<string> {
  const hash = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(hash)].map((b) => b.toString(16).padStart(2, "0")).join("");
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

async function metric(api: Api, sample: string): Promise<number | undefined> {
  const text = await (await apiFetch(`${api.base}/metrics`)).text();
  const line = text.split("\n").find((l) => l.startsWith(`${sample} `));
  return line === undefined ? undefined : Number(line.slice(sample.length + 1));
}

Deno.test("SIGHUP adds, restarts and removes providers and leaves an unchanged one untouched (same process, state, no availability event)", async () => {
  const rig = await Rig.create(["keep", "change", "gone", "added"]);
  await rig.write(
    `polling: {interval_ms: 200}\nproviders:\n${rig.provider("keep")}\n${rig.provider("change")}\n${
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
    }, WAIT_MS);
    events = await EventStream.open(rt.base);

    // A shorter interval that polls no device less often: nothing weakened, so the summary is at
    // INFO (a longer one is a weakening: WARN and an audit record; refused in AUTO,
    // tests/app/kernel_reload_test.ts; so is a shorter one under which a device's poll period, a
    // whole number of intervals, grows: 100 ms would poll tempctl0, 2 Hz hints, every 500 ms
    // instead of 400, tests/app/kernel_reload_poll_period_test.ts).
    await rig.write(
      `polling: {interval_ms: 130}\nproviders:\n${rig.provider("added")}\n${
        rig.provider("keep")
      }\n${rig.provider("change", "timeout_ms: 6000")}\n`,
    );
    const summary = await reload(rt, 1);
    assert.match(summary, /^INFO .*config reload: providers \+1 -1 ~1 =1; polling 200->130 ms/);

    const status = await waitFor("providers available", async () => {
      const s = await api.get("/v0/runtime/status");
      const all = s.json.providers as { provider_id: string; state: string }[];
      return all.length === 3 && all.every((p) => p.state === "AVAILABLE") ? s.json : undefined;
    }, WAIT_MS);
    assert.deepEqual(
      status.providers.map((p: { provider_id: string }) => p.provider_id),
      ["added", "keep", "change"],
    );
    assert.equal(status.polling_interval_ms, 130);
    const after = await waitFor("gone's process to end", () => {
      const pids = providerPids(rt, rig);
      return pids.has("gone") ? undefined : pids;
    }, WAIT_MS);
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
    }, WAIT_MS);
    assert.equal(reloadEvents.length, 1);
    assert.equal(reloadEvents[0]!.data.result, "applied");
    assert.deepEqual(reloadEvents[0]!.data.providers_added, ["added"]);
    assert.deepEqual(reloadEvents[0]!.data.providers_removed, ["gone"]);
    assert.deepEqual(reloadEvents[0]!.data.providers_restarted, ["change"]);
    assert.deepEqual(reloadEvents[0]!.data.providers_unchanged, ["keep"]);
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
    const removed = events.frames.filter((f) =>
      f.event === "device_availability" && f.data.provider_id === "gone" && !f.data.available
    );
    assert.ok(removed.length > 0, "the removed provider's devices were said gone on the stream");
    assert.ok(
      removed.every((f) => f.data.reason === "removed"),
      `as a removal: ${JSON.stringify(removed.map((f) => f.data))}`,
    );
    // The restarted provider (its entry changed) is taken out the same way: its devices are said
    // gone as a removal, then back, without a reason, from the new process's first answered poll.
    const changed = await waitFor("the changed provider's devices back on the stream", () => {
      const flips = events!.frames.filter((f) =>
        f.event === "device_availability" && f.data.provider_id === "change"
      );
      const gone = flips.filter((f) => !f.data.available);
      const back = (id: string) =>
        flips.findIndex((f) => f.data.device_id === id && f.data.available) >
          flips.findIndex((f) => f.data.device_id === id && !f.data.available);
      return gone.length > 0 && gone.every((f) => back(f.data.device_id)) ? flips : undefined;
    }, WAIT_MS);
    assert.deepEqual(
      changed.map((f) => [f.data.available, f.data.reason ?? null]).filter(([a]) => !a),
      changed.filter((f) => !f.data.available).map(() => [false, "removed"]),
      `as a removal: ${JSON.stringify(changed.map((f) => f.data))}`,
    );
    assert.ok(
      changed.filter((f) => f.data.available).every((f) => f.data.reason === undefined),
      `back without a reason: ${JSON.stringify(changed.map((f) => f.data))}`,
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

Deno.test("SIGHUP applies new health thresholds and a new e-stop ladder at once", async () => {
  const rig = await Rig.create(["p0"]);
  const body = `polling: {interval_ms: 1000}\nproviders:\n${rig.provider("p0")}\n`;
  await rig.write(body);
  const rt = await rig.start();
  const api = new Api(rt.base);
  const healths = async () =>
    ((await api.get("/v0/providers/health")).json.providers[0].devices as { health: string }[])
      .map((d) => d.health);
  try {
    // Defaults: WARNING only after 3 polling cycles without a poll.
    assert.ok(!(await healths()).includes("WARNING"));
    const rung = async () => (await api.get("/v0/runtime/status")).json.estop.software_safe_state;
    assert.equal(await rung(), "none");
    await rig.write(
      "health: {staleness: {warn_after_ms: 1, stale_after_ms: 600000}}\n" +
        `safety: {safe_state: {zero_is_safe: true}}\n${body}`,
    );
    assert.match(await reload(rt, 1), /applied: safety, health/); // table order (CONFIG_SECTIONS)
    assert.equal(await rung(), "zero");
    // warn_after_ms: 1 is a test value, there to see WARNING at once: a sample older than 1 ms
    // is a warning, within a 1 s cycle nearly always. The reload applies it and says so, once.
    assert.deepEqual(
      rt.stderr().split("\n").filter((l) => /warning: health\.staleness\.warn_after_ms/.test(l))
        .map((l) => l.replace(/^(WARN) .*(config reload: ).*runtime\.yaml:\d+:\d+: /, "$1 $2"))
        .map((l) => l.replace(/ \(1 <= 1000\).*/, " (1 <= 1000)")),
      [
        "WARN config reload: warning: health.staleness.warn_after_ms: is not " +
        "longer than polling.interval_ms (1 <= 1000)",
      ],
    );
    await waitFor("WARNING health", async () => (await healths()).includes("WARNING"), WAIT_MS);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP applies new alarms and interlocks at once", async () => {
  const rig = await Rig.create(["p0"]);
  const body = `providers:\n${rig.provider("p0")}\n`;
  await rig.write(body);
  const rt = await rig.start();
  const api = new Api(rt.base);
  const relay = {
    provider_id: "p0",
    device_id: "relayio0",
    function_id: 1,
    args: { enabled: { type: "bool", bool: true } },
  };
  try {
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.deepEqual((await api.get("/v0/alarms")).json.alarms, []);
    assert.equal((await api.post("/v0/call", relay)).status, 200);
    // The inert simulator holds tc1_temp at 25.
    await rig.write(
      "alarms: [{id: hot, signal: p0/tempctl0/tc1_temp, hi: 10}]\n" +
        "interlocks: [{id: lock, block: [p0/relayio0/set_relay_ch1], " +
        "while: p0/tempctl0/tc1_temp > 10, message: too hot}]\n" + body,
    );
    assert.match(await reload(rt, 1), /applied: alarms/);
    const alarm = await waitFor("alarm hot active", async () => {
      const a = (await api.get("/v0/alarms")).json.alarms as { id: string; state: string }[];
      return a.find((x) => x.state === "active");
    }, WAIT_MS);
    assert.equal(alarm.id, "hot");
    const refused = await api.post("/v0/call", relay);
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.match(refused.json.status.message, /lock/);

    // A reload that changes the alarms but keeps `hot` as it was: the operator's ack stays, and
    // `hot` is not raised again.
    const ack = await api.post("/v0/alarms/hot/ack", {});
    assert.equal(ack.status, 200, JSON.stringify(ack.json));
    await rig.write(
      "alarms: [{id: hot, signal: p0/tempctl0/tc1_temp, hi: 10}, " +
        "{id: cold, signal: p0/tempctl0/tc1_temp, lo: 0}]\n" +
        "interlocks: [{id: lock, block: [p0/relayio0/set_relay_ch1], " +
        "while: p0/tempctl0/tc1_temp > 10, message: too hot}]\n" + body,
    );
    assert.match(await reload(rt, 2), /applied: alarms/);
    const after = (await api.get("/v0/alarms")).json.alarms as {
      id: string;
      state: string;
      transitions: { transition: string }[];
    }[];
    assert.deepEqual(after.map((a) => [a.id, a.state]), [["hot", "active_acked"], [
      "cold",
      "normal",
    ]]);
    assert.deepEqual(after[0]!.transitions.map((t) => t.transition), ["raise", "ack"]);
  } finally {
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
    // Two errors: line 3 (polling below its minimum) and line 4 (an unknown log level); and a
    // warning on line 3 (an unknown key), logged too although the file is refused.
    await rig.write(
      `polling: {interval_ms: 5, intervl_ms: 3}\nlogging: {level: loud}\nproviders:\n${
        rig.provider("p0")
      }\n`,
    );
    rt.signal("SIGHUP");
    const failed = await waitFor(
      "reload failure",
      () => rt.stderr().split("\n").find((l) => l.includes("config reload failed")),
      WAIT_MS,
    );
    assert.match(failed, /^ERROR .*config reload failed: 2 error\(s\) in the file/);
    const diagnostics = rt.stderr().split("\n").filter((l) =>
      /^ERROR .*config reload: .*runtime\.yaml:\d+:\d+: error: /.test(l)
    );
    assert.equal(diagnostics.length, 2, rt.stderr());
    assert.match(diagnostics[0]!, /runtime\.yaml:3:\d+: error: polling\.interval_ms/);
    assert.match(diagnostics[1]!, /runtime\.yaml:4:\d+: error: logging\.level/);
    const warned = rt.stderr().split("\n").filter((l) =>
      /^WARN .*config reload: .*runtime\.yaml:\d+:\d+: warning: /.test(l)
    );
    assert.equal(warned.length, 1, rt.stderr());
    assert.match(warned[0]!, /runtime\.yaml:3:\d+: warning: polling\.intervl_ms: unknown key/);
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

const TREE_A = `<root BTCPP_format="4" main_tree_to_execute="Main">
  <BehaviorTree ID="Main"><AlwaysSuccess name="tree_a"/></BehaviorTree>
</root>
`;
const TREE_B = TREE_A.replace("tree_a", "tree_b");

/** automation: with a tree file, parameters and the AUTO -> FAULT hook AUTO needs. */
function automationYaml(tree: string, parameters: string): string {
  return `automation:
  enabled: true
  behavior_tree: ${tree}
  parameters:
${parameters}
  mode_transition_hooks:
    before_transition:
      - {from: AUTO, to: FAULT, calls: [{device_handle: p0/relayio0, function_id: 1, args: {enabled: false}}]}
`;
}

Deno.test("SIGHUP applies the log level, refuses a new tree and a parameter change that would change the running recipe in AUTO, applies both in MANUAL (still-valid values kept), reports http.port as needing a restart", async () => {
  const rig = await Rig.create(["p0"]);
  await Deno.writeTextFile(`${rig.dir}/tree-a.xml`, TREE_A);
  await Deno.writeTextFile(`${rig.dir}/tree-b.xml`, TREE_B);
  const params = [
    "    - {name: keep, type: double, default: 1.5}",
    "    - {name: redo, type: int64, default: 1, min: 0, max: 10}",
    "    - {name: gone, type: bool, default: true}",
  ];
  await rig.write(
    `logging: {level: info}\n${automationYaml("tree-a.xml", params.join("\n"))}providers:\n${
      rig.provider("p0")
    }\n`,
  );
  const rt = await rig.start();
  const api = new Api(rt.base);
  try {
    for (const [name, value] of [["keep", 2.5], ["redo", 5]] as const) {
      const r = await api.post("/v0/parameters", { name, value });
      assert.equal(r.status, 200, JSON.stringify(r.json));
    }
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const auto = await api.post("/v0/mode", { mode: "AUTO" });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));
    const debugBefore = rt.stderr().split("\n").filter((l) => l.startsWith("DEBUG")).length;
    assert.equal(debugBefore, 0);

    const next = [
      params[0],
      params[1]!.replace("max: 10", "max: 20"),
      "    - {name: fresh, type: string, default: hello}",
    ];
    await Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http: {port: ${freePort()}}\naudit: {max_files: 3}\nlogging: {level: debug}\n${
          automationYaml("tree-b.xml", next.join("\n"))
        }providers:\n${rig.provider("p0")}\n`,
    );
    const first = await reload(rt, 1);
    assert.match(first, /^WARN /);
    assert.match(first, /log level info->debug/);
    assert.match(first, /refused automation\.behavior_tree: mode is AUTO/);
    // Removing `gone` would change the running recipe: the whole section waits for MANUAL.
    assert.match(
      first,
      /refused automation\.parameters: mode is AUTO: it would change the running recipe: "gone" \(removed\)/,
    );
    assert.match(first, /needs restart: http\.port, audit\.max_files$/);
    const values = async () =>
      ((await api.get("/v0/parameters")).json.parameters as { name: string; value: unknown }[])
        .map((p) => [p.name, p.value]);
    assert.deepEqual(await values(), [["keep", 2.5], ["redo", 5], ["gone", true]]);
    // Both refusals are on record, as the reload's.
    const audit = (await api.get("/v0/audit?origin=reload")).json.entries as {
      origin: { kind: string };
      action: string;
      function: string;
      outcome: string;
    }[];
    assert.deepEqual(
      audit.map((e) => [e.origin.kind, e.action, e.function, e.outcome]),
      [
        ["reload", "config", "automation.behavior_tree", "refused"],
        ["reload", "config", "automation.parameters", "refused"],
      ],
    );
    assert.match(await (await apiFetch(`${rt.base}/v0/automation/tree`)).text(), /tree_a/);
    assert.equal((await api.get("/v0/mode")).json.mode, "AUTO", "the reload left AUTO running");
    await waitFor(
      "a DEBUG line",
      () => rt.stderr().split("\n").some((l) => l.startsWith("DEBUG")),
      WAIT_MS,
    );

    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const second = await reload(rt, 2);
    assert.match(second, /behavior tree reloaded/);
    assert.match(second, /applied: .*automation\.parameters/);
    // `redo` keeps 5: the new bounds (0..20) still accept it; `gone` is gone, `fresh` is new.
    assert.deepEqual(await values(), [["keep", 2.5], ["redo", 5], ["fresh", "hello"]]);
    assert.match(
      second,
      /needs restart: http\.port, audit\.max_files$/,
      "still not applied: still reported",
    );
    assert.match(await (await apiFetch(`${rt.base}/v0/automation/tree`)).text(), /tree_b/);

    // The same path with new content is a new tree too.
    await Deno.writeTextFile(`${rig.dir}/tree-b.xml`, TREE_B.replace("tree_b", "tree_c"));
    assert.match(await reload(rt, 3), /behavior tree reloaded/);
    const status = (await api.get("/v0/automation/status")).json;
    assert.equal(
      status.automation_version.digest,
      await sha256Hex(TREE_B.replace("tree_b", "tree_c")),
    );
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP with a tree that includes a FIFO refuses the file, reads nothing from the FIFO, and the runtime (its e-stop included) keeps answering", async () => {
  const rig = await Rig.create(["p0"]);
  await Deno.writeTextFile(`${rig.dir}/tree-a.xml`, TREE_A);
  const param = "    - {name: keep, type: double, default: 1.5}";
  await rig.write(`${automationYaml("tree-a.xml", param)}providers:\n${rig.provider("p0")}\n`);
  const rt = await rig.start();
  const api = new Api(rt.base);
  try {
    // A FIFO without a writer: a synchronous read of it blocks the runtime's only thread for ever.
    const fifo = await new Deno.Command("mkfifo", { args: [`${rig.dir}/sub.xml`] }).output();
    assert.ok(fifo.success, "mkfifo");
    await Deno.writeTextFile(
      `${rig.dir}/tree-b.xml`,
      TREE_B.replace("<BehaviorTree", '<include path="sub.xml"/>\n  <BehaviorTree'),
    );
    await rig.write(`${automationYaml("tree-b.xml", param)}providers:\n${rig.provider("p0")}\n`);
    rt.signal("SIGHUP");
    const failed = await waitFor(
      "reload failure",
      () => rt.stderr().split("\n").find((l) => l.includes("config reload failed")),
      20_000,
    );
    assert.match(failed, /^ERROR .*config reload failed: 1 error\(s\)/);
    assert.ok(
      rt.stderr().split("\n").some((l) =>
        /tree-b\.xml:2:\d+: error: cannot read included file .*sub\.xml: not a regular file \(a FIFO\)/
          .test(l)
      ),
      rt.stderr(),
    );
    assert.match(await (await apiFetch(`${rt.base}/v0/automation/tree`)).text(), /tree_a/);
    const stop = await api.post("/v0/estop", { reason: "after a reload that met a FIFO" });
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    assert.equal(stop.json.latched, true);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP in AUTO refuses removing or changing a provider (its process goes on) but starts an added one; after AUTO the change applies", async () => {
  const rig = await Rig.create(["p0", "p1", "p2", "p3"]);
  await Deno.writeTextFile(`${rig.dir}/tree-a.xml`, TREE_A);
  const automation = automationYaml("tree-a.xml", "    - {name: k, type: bool, default: true}");
  await rig.write(
    `${automation}providers:\n${rig.provider("p0")}\n${rig.provider("p1")}\n${
      rig.provider("p3")
    }\n`,
  );
  const rt = await rig.start();
  const api = new Api(rt.base);
  try {
    const before = providerPids(rt, rig);
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    assert.equal((await api.post("/v0/mode", { mode: "AUTO" })).status, 200);
    // p1 changed, p2 added, p3 removed.
    await rig.write(
      `${automation}providers:\n${rig.provider("p0")}\n${rig.provider("p1", "timeout_ms: 6000")}\n${
        rig.provider("p2")
      }\n`,
    );
    const first = await reload(rt, 1);
    assert.match(
      first,
      /^WARN .*providers \+1 -0 ~0 =1; refused providers: mode is AUTO: removal or change of p3, p1 held back/,
    );
    const inAuto = await waitFor("p2 up", () => {
      const pids = providerPids(rt, rig);
      return pids.has("p2") ? pids : undefined;
    }, WAIT_MS);
    assert.equal(inAuto.get("p1"), before.get("p1"), "p1 was not restarted in AUTO");
    assert.equal(inAuto.get("p3"), before.get("p3"), "p3 was not stopped in AUTO");
    assert.equal((await api.get("/v0/mode")).json.mode, "AUTO");

    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const second = await reload(rt, 2);
    assert.match(second, /^INFO .*providers \+0 -1 ~1 =2/);
    const after = await waitFor("p3 gone", () => {
      const pids = providerPids(rt, rig);
      return pids.has("p3") ? undefined : pids;
    }, WAIT_MS);
    assert.notEqual(after.get("p1"), before.get("p1"), "p1 restarted once AUTO was left");
    assert.equal(after.get("p2"), inAuto.get("p2"));
    assert.equal(after.get("p0"), before.get("p0"));
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP that restarts a provider refuses AUTO until the restart is done", async () => {
  const rig = await Rig.create(["p0", "p1"]);
  await Deno.writeTextFile(`${rig.dir}/tree-a.xml`, TREE_A);
  const automation = automationYaml("tree-a.xml", "    - {name: k, type: bool, default: true}");
  await rig.write(`${automation}providers:\n${rig.provider("p0")}\n${rig.provider("p1")}\n`);
  const rt = await rig.start();
  const api = new Api(rt.base);
  try {
    assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
    const oldPid = providerPids(rt, rig).get("p1");
    // The changed p1 starts the simulator once the test lets it: the reload is mid-restart
    // meanwhile. It began in MANUAL, so the AUTO rule let it restart p1.
    await rig.write(
      `${automation}providers:\n${rig.provider("p0")}\n${rig.gatedProvider("p1")}\n`,
    );
    rt.signal("SIGHUP");
    await newProcess(rt, rig, "p1", oldPid);
    const refused = await api.post("/v0/mode", { mode: "AUTO" });
    assert.equal(refused.status, 409, JSON.stringify(refused.json));
    assert.equal(
      refused.json.status.message,
      "refusing AUTO: a configuration reload is stopping or restarting provider(s) p1; retry " +
        "when it has finished",
    );
    assert.deepEqual(summaries(rt), [], "the reload was still running");
    await rig.open("p1");
    assert.match(
      await waitFor("reload summary", () => summaries(rt)[0], WAIT_MS),
      /providers \+0 -0 ~1 =1/,
    );
    const auto = await api.post("/v0/mode", { mode: "AUTO" });
    assert.equal(auto.status, 200, JSON.stringify(auto.json));
    const modes = ((await api.get("/v0/audit")).json.entries as {
      action: string;
      function: string;
      outcome: string;
      refused_by: string | null;
    }[]).filter((e) => e.action === "mode" && e.function === "AUTO");
    assert.deepEqual(modes.map((e) => [e.outcome, e.refused_by]), [
      ["refused", "reload"],
      ["accepted", null],
    ]);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("POST /v0/estop answers while a reload restarts a provider, and the restarted provider is brought to the safe state once up", async () => {
  const rig = await Rig.create(["keep", "change"]);
  const body = (change: string) =>
    `safety: {safe_state: {zero_is_safe: true}}\nproviders:\n${rig.provider("keep")}\n${change}\n`;
  await rig.write(body(rig.provider("change")));
  const rt = await rig.start();
  const api = new Api(rt.base);
  try {
    const oldPid = providerPids(rt, rig).get("change");
    // The changed entry starts the simulator once the test lets it: the reload is mid-restart
    // meanwhile.
    await rig.write(body(rig.gatedProvider("change")));
    rt.signal("SIGHUP");
    await newProcess(rt, rig, "change", oldPid);
    const stop = await api.post("/v0/estop", { reason: "during reload" });
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    assert.equal(stop.json.latched, true);
    assert.deepEqual(summaries(rt), [], "the e-stop answered before the reload finished");
    // Two more SIGHUPs during the reload are coalesced into one reload after it.
    rt.signal("SIGHUP");
    rt.signal("SIGHUP");
    const keepCalls = stop.json.actions.filter((a: { device_handle: string }) =>
      a.device_handle.startsWith("keep/")
    );
    assert.ok(keepCalls.length > 0 && keepCalls.every((a: { success: boolean }) => a.success));
    await rig.open("change");

    const summary = await waitFor("reload summary", () => summaries(rt)[0], WAIT_MS);
    const plan = (await api.get("/v0/runtime/status")).json.estop.plan.calls as {
      device_handle: string;
    }[];
    const changeCalls = plan.filter((c) => c.device_handle.startsWith("change/")).length;
    assert.ok(changeCalls > 0);
    assert.match(summary, /providers \+0 -0 ~1 =1/);
    assert.match(summary, new RegExp(`e-stop latched: ${changeCalls} safe-state call\\(s\\) run`));
    assert.equal((await api.get("/v0/runtime/status")).json.estop.latched, true);
    assert.match(
      await waitFor("the coalesced reload", () => summaries(rt)[1], WAIT_MS),
      /no change$/,
    );
    assert.equal(await rt.stop(), 0, rt.stderr());
    assert.equal(summaries(rt).length, 2, "three SIGHUPs, two reloads");
  } finally {
    await rt.stop();
    await rig.dispose();
  }
});

/** A stand-in InfluxDB on loopback: answers 204 to everything and keeps each write's body. */
class FakeInflux {
  readonly writes: string[] = [];
  readonly #server: Deno.HttpServer<Deno.NetAddr>;

  constructor() {
    this.#server = Deno.serve({ hostname: "127.0.0.1", port: 0, onListen() {} }, async (req) => {
      const body = await req.text();
      if (new URL(req.url).pathname === "/api/v2/write") this.writes.push(body);
      return new Response(null, { status: 204 });
    });
  }

  get url(): string {
    return `http://127.0.0.1:${this.#server.addr.port}`;
  }

  close(): Promise<void> {
    return this.#server.shutdown();
  }
}

Deno.test("SIGHUP with a new telemetry target: rows go to the new InfluxDB from then on", async () => {
  const rig = await Rig.create(["p0"]);
  const first = new FakeInflux();
  const second = new FakeInflux();
  const telemetry = (url: string) =>
    `telemetry: {enabled: true, influxdb: {url: "${url}", token: t0k3n, flush_interval_ms: 100}}\n`;
  try {
    await rig.write(`${telemetry(first.url)}providers:\n${rig.provider("p0")}\n`);
    const rt = await rig.start();
    try {
      await waitFor("rows at the first target", () => first.writes.length > 0, WAIT_MS);
      await rig.write(`${telemetry(second.url)}providers:\n${rig.provider("p0")}\n`);
      const summary = await reload(rt, 1);
      assert.match(summary, new RegExp(`telemetry retargeted \\(writing to ${second.url}\\)`));
      const api = new Api(rt.base);
      // A mode change after the reload is a row only the new writer can have written.
      assert.equal((await api.post("/v0/mode", { mode: "MANUAL" })).status, 200);
      await waitFor(
        "the mode change at the second target",
        () => second.writes.some((w) => /mode_change.*MANUAL/.test(w)),
        WAIT_MS,
      );
      assert.ok(!first.writes.some((w) => /mode_change.*MANUAL/.test(w)));
      assert.ok(!rt.stderr().includes("t0k3n"), "the token is never logged");
    } finally {
      assert.equal(await rt.stop(), 0, rt.stderr());
    }
  } finally {
    await first.close();
    await second.close();
    await rig.dispose();
  }
});

Deno.test("SIGHUP that removes a named token: it is refused from the next request on, its open event stream ends; an added one works at once", async () => {
  const rig = await Rig.create(["p0"]);
  const OLD = "old-token-aaaaaaaaaaaaaaaa";
  const NEW = "new-token-bbbbbbbbbbbbbbbb";
  const write = (token: string, night?: string) =>
    Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http:\n  port: ${rig.port}\n  auth_enabled: true\n  auth_exempt_loopback: false\n` +
        `  tokens:\n    - {name: shift, role: operator, token: ${token}}\n` +
        (night ? `    - {name: night, role: viewer, token: ${night}}\n` : "") +
        `providers:\n${rig.provider("p0")}\n`,
    );
  const rt = await rig.start({ token: OLD }, () => write(OLD));
  try {
    const status = async (token: string) =>
      (await apiFetch(`${rt.base}/v0/runtime/status`, {
        headers: { authorization: `Bearer ${token}` },
      })).status;
    assert.equal(await status(OLD), 200);
    assert.equal(await status(NEW), 401);
    /** An event stream opened with `token`, its body read until it ends. */
    const stream = async (token: string) => {
      const res = await apiFetch(`${rt.base}/v0/events`, {
        headers: { authorization: `Bearer ${token}` },
      });
      assert.equal(res.status, 200);
      const reader = res.body!.getReader();
      const decoder = new TextDecoder();
      let ended = false;
      let text = "";
      const done = (async () => {
        for (;;) {
          const { done, value } = await reader.read(); // events and keep-alives
          if (done) break;
          text += decoder.decode(value, { stream: true });
        }
        ended = true;
      })();
      return {
        ended: () => ended,
        text: () => text,
        done,
        cancel: () => reader.cancel().catch(() => {}),
      };
    };
    const held = await stream(OLD);
    await write(NEW);
    const summary = await reload(rt, 1);
    assert.match(
      summary,
      /API tokens replaced: 'shift' replaced; 1 event stream\(s\) of removed tokens ended/,
    );
    assert.doesNotMatch(summary, /needs restart/, "tokens are live, not restart-only");
    assert.equal(await status(OLD), 401, "the removed token is refused at once");
    assert.equal(await status(NEW), 200);
    await waitFor("the old token's stream ended", held.ended, WAIT_MS);
    await held.done;
    assert.match(
      rt.stderr(),
      /^INFO .*event stream of 'shift' ended: its token no longer admits it/m,
    );
    // A stream with the new token stays open through a token reload that keeps it.
    const kept = await stream(NEW);
    await write(NEW, "night-token-cccccccccccccccc");
    const second = await reload(rt, 2);
    assert.match(second, /API tokens replaced: added viewer 'night'/);
    assert.doesNotMatch(second, /ended/);
    // Who was given access, and whose token was replaced, is on the audit trail: names and roles.
    const res = await apiFetch(`${rt.base}/v0/audit?origin=reload`, {
      headers: { authorization: `Bearer ${NEW}` },
    });
    const auditText = await res.text();
    assert.equal(res.status, 200, auditText);
    const entries = JSON.parse(auditText).entries.filter((e: { action: string }) =>
      e.action === "config"
    );
    assert.deepEqual(
      entries.map((e: { function: string; outcome: string; args: unknown }) => [
        e.function,
        e.outcome,
        e.args,
      ]),
      [
        ["http.tokens", "accepted", {
          tokens: { added: [], removed: [], roles: [], replaced: ["shift"] },
        }],
        ["http.tokens", "accepted", {
          tokens: {
            added: [{ name: "night", role: "viewer" }],
            removed: [],
            roles: [],
            replaced: [],
          },
        }],
      ],
    );
    assert.ok(!auditText.includes(OLD) && !auditText.includes(NEW), "no token on the trail");
    // The reload's own config_reload event, published after its tokens section re-checked every
    // open stream, reaches the kept stream: the window in which it could have been ended is over.
    await waitFor(
      "the second reload's event on the kept stream",
      () => /event: config_reload\n[^]*added viewer 'night'/.test(kept.text()) || kept.ended(),
      WAIT_MS,
    );
    assert.equal(kept.ended(), false, "an admitted stream is not ended");
    await kept.cancel();
    assert.ok(!rt.stderr().includes(OLD) && !rt.stderr().includes(NEW), "no token is logged");
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP that turns auth off (a restart's business) and drops every token keeps the tokens in force: the API, still authenticating, is not left with none", async () => {
  const rig = await Rig.create(["p0"]);
  const TOKEN = "shift-token-aaaaaaaaaaaaaaaa";
  const write = (auth: string) =>
    Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http:\n  port: ${rig.port}\n  auth_exempt_loopback: false\n${auth}` +
        `providers:\n${rig.provider("p0")}\n`,
    );
  const rt = await rig.start(
    { token: TOKEN },
    () =>
      write(
        `  auth_enabled: true\n  tokens:\n    - {name: shift, role: operator, token: ${TOKEN}}\n`,
      ),
  );
  try {
    const status = async (token: string) =>
      (await apiFetch(`${rt.base}/v0/runtime/status`, {
        headers: token === "" ? {} : { authorization: `Bearer ${token}` },
      })).status;
    assert.equal(await status(TOKEN), 200);
    await write("  auth_enabled: false\n");
    const summary = await reload(rt, 1);
    assert.match(summary, /needs restart: http\.auth_enabled/);
    assert.equal(
      await status(TOKEN),
      200,
      `auth is still on until the restart: its token must still admit (${summary})`,
    );
    assert.match(summary, /refused http\.tokens: .*http\.auth_enabled/);
    assert.equal(await status(""), 401, "auth is still on");
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP that removes a token while a request made with it is still sending its body: the request does not act (401), the mode stays", async () => {
  const rig = await Rig.create(["p0"]);
  const OLD = "old-token-aaaaaaaaaaaaaaaa";
  const NEW = "new-token-bbbbbbbbbbbbbbbb";
  const write = (token: string) =>
    Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http:\n  port: ${rig.port}\n  auth_enabled: true\n  auth_exempt_loopback: false\n` +
        `  tokens:\n    - {name: shift, role: operator, token: ${token}}\n` +
        `providers:\n${rig.provider("p0")}\n`,
    );
  const rt = await rig.start({ token: OLD }, () => write(OLD));
  const conn = await connect(rig.port);
  try {
    const get = async (path: string, token: string) =>
      await (await apiFetch(`${rt.base}${path}`, {
        headers: { authorization: `Bearer ${token}` },
      })).text();
    const body = JSON.stringify({ mode: "MANUAL" });
    // The request's head, with the token about to be removed; its body comes after the reload.
    await send(
      conn,
      `POST /v0/mode HTTP/1.1\r\nHost: 127.0.0.1\r\nAuthorization: Bearer ${OLD}\r\n` +
        `Content-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    // Admitted and waiting for its body (this scrape is the other request in flight).
    await waitFor(
      "the POST in flight",
      async () => /^runtime_http_requests_in_flight 2$/m.test(await get("/metrics", OLD)),
      WAIT_MS,
    );
    await write(NEW);
    assert.match(await reload(rt, 1), /API tokens replaced: 'shift' replaced/);
    await send(conn, body);
    const res = await readResponse(conn);
    assert.equal(
      res?.status,
      401,
      `a request whose token the reload removed acted once its body arrived: ${res?.body}`,
    );
    assert.equal(JSON.parse(await get("/v0/mode", NEW)).mode, "IDLE");
  } finally {
    conn.close();
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP after the TLS certificate was renewed in place (same paths) says it needs a restart, not 'no change'", async () => {
  const rig = await Rig.create(["p0"]);
  const tls = `${rig.dir}/tls`;
  await Deno.mkdir(tls);
  const { cert, key } = await selfSignedCert(tls);
  const rt = await rig.start({ caCert: await Deno.readTextFile(cert) }, () =>
    Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http: {port: ${rig.port}, tls_cert_path: ${cert}, tls_key_path: ${key}}\n` +
        `providers:\n${rig.provider("p0")}\n`,
    ));
  try {
    // certbot's renewal: a new key and certificate written over the old files, then a reload.
    await selfSignedCert(tls, 90);
    const summary = await reload(rt, 1);
    assert.match(
      summary,
      /needs restart: http\.tls_cert_path \(file changed\), http\.tls_key_path \(file changed\)$/,
      `the renewed certificate is served only after a restart, and the reload says so: ${summary}`,
    );
    assert.doesNotMatch(summary, /no change/);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP after the TLS files were renewed in place with ones a start refuses (expired, a key of another certificate; at a new path, one it cannot read) says so on the needs-restart line; the reload still applies", async () => {
  const rig = await Rig.create(["p0"]);
  const tls = `${rig.dir}/tls`;
  await Deno.mkdir(tls);
  const { cert, key } = await selfSignedCert(tls);
  const served = await Deno.readTextFile(cert);
  const write = (level: string, files = { cert, key }) =>
    Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http: {port: ${rig.port}, tls_cert_path: ${files.cert}, tls_key_path: ${files.key}}\n` +
        `logging: {level: ${level}}\nproviders:\n${rig.provider("p0")}\n`,
    );
  const rt = await rig.start({ caCert: served }, () => write("info"));
  try {
    // An expired pair written over the served one: the next start refuses it.
    await certWithDates(tls, "20200101000000Z", "20200201000000Z");
    await write("debug");
    const expired = await reload(rt, 1);
    assert.match(
      expired,
      /needs restart: http\.tls_cert_path \(file changed; a restart refuses it: the certificate '[^']+' has expired \(valid from 2020-01-01T00:00:00\.000Z to 2020-02-01T00:00:00\.000Z\)[^)]*\), http\.tls_key_path \(file changed\)$/,
      expired,
    );
    assert.match(expired, /applied: logging/, "the rest of the reload applies");
    // A good certificate with the key of another one.
    const other = `${tls}/other`;
    await Deno.mkdir(other);
    await selfSignedCert(tls);
    await Deno.copyFile((await selfSignedCert(other)).key, key);
    await write("info");
    const mismatched = await reload(rt, 2);
    assert.match(
      mismatched,
      /needs restart: http\.tls_cert_path \(file changed; a restart refuses it: cannot use the certificate and key: [^,]*\), http\.tls_key_path \(file changed\)$/,
      mismatched,
    );
    assert.match(mismatched, /applied: logging/);
    // New paths, to an expired pair: judged too (the loader only saw that the files exist).
    const moved = `${tls}/moved`;
    await Deno.mkdir(moved);
    await write("debug", await certWithDates(moved, "20200101000000Z", "20200201000000Z"));
    const elsewhere = await reload(rt, 3);
    assert.match(
      elsewhere,
      /needs restart: http\.tls_cert_path \(a restart refuses it: the certificate '[^']*\/moved\/cert\.pem' has expired .*\), http\.tls_key_path$/,
      elsewhere,
    );
    // New paths, to a key a start cannot read (larger than a PEM file can be; the loader only saw
    // that it exists): said too, not left as a bare 'needs restart'.
    const big = `${tls}/big`;
    await Deno.mkdir(big);
    const bigPair = await selfSignedCert(big);
    await Deno.writeTextFile(bigPair.key, "#".repeat(TLS_FILE_MAX_BYTES + 1), { append: true });
    await write("info", bigPair);
    const unreadable = await reload(rt, 4);
    assert.match(
      unreadable,
      /needs restart: http\.tls_cert_path, http\.tls_key_path \(a restart refuses it: cannot read '[^']*\/big\/key\.pem': too large: \d+ bytes, the limit is 1048576 bytes \(1 MiB\)\)$/,
      unreadable,
    );
    assert.match(unreadable, /applied: logging/);
    // The certificate in force is still served: the API answers over TLS, trusting it.
    const client = Deno.createHttpClient({ caCerts: [served] });
    try {
      const res = await fetch(`${rt.base}/v0/runtime/status`, { client });
      await res.body?.cancel();
      assert.equal(res.status, 200);
    } finally {
      client.close();
    }
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP that changes http.auth_token while RUNTIME_API_TOKEN overrides it says the token in force did not change", async () => {
  const rig = await Rig.create(["p0"]);
  const ENV = "env-token-dddddddddddddddd";
  const write = (token: string) =>
    Deno.writeTextFile(
      rig.configPath,
      `runtime: {data_dir: ${rig.dir}/data, shutdown_timeout_ms: 2000}\n` +
        `http:\n  port: ${rig.port}\n  auth_enabled: true\n  auth_exempt_loopback: false\n` +
        `  auth_token: ${token}\n` +
        `providers:\n${rig.provider("p0")}\n`,
    );
  const rt = await rig.start(
    { token: ENV, env: { RUNTIME_API_TOKEN: ENV } },
    () => write("file-token-aaaaaaaaaaaaaaaa"),
  );
  try {
    const status = async (token: string) =>
      (await apiFetch(`${rt.base}/v0/runtime/status`, {
        headers: { authorization: `Bearer ${token}` },
      })).status;
    await write("file-token-bbbbbbbbbbbbbbbb");
    const summary = await reload(rt, 1);
    assert.equal(await status(ENV), 200, "RUNTIME_API_TOKEN still wins");
    assert.equal(await status("file-token-bbbbbbbbbbbbbbbb"), 401);
    assert.doesNotMatch(summary, /API tokens replaced/, `nothing was replaced: ${summary}`);
    assert.match(summary, /http\.auth_token not in effect: RUNTIME_API_TOKEN overrides it/);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("SIGHUP adding a provider that fails to start lists it DOWN with the reason in /v0/providers/health and /metrics until a reload removes it or brings it up", async () => {
  const rig = await Rig.create(["p0"]); // no simulator file for "bad": its process exits at once
  const body = `providers:\n${rig.provider("p0")}\n`;
  await rig.write(body);
  const rt = await rig.start();
  const api = new Api(rt.base);
  const listed = async () =>
    // deno-lint-ignore no-explicit-any
    ((await api.get("/v0/providers/health")).json.providers as any[]).map((p) => p.provider_id);
  try {
    await rig.write(`${body}${rig.provider("bad")}\n`);
    assert.match(await reload(rt, 1), /failed to start: bad: /);
    const bad = (await api.get("/v0/providers/health")).json.providers
      // deno-lint-ignore no-explicit-any
      .find((p: any) => p.provider_id === "bad");
    assert.ok(bad, "the provider that failed to start is listed");
    assert.deepEqual(
      [bad.state, bad.lifecycle_state, bad.device_count, bad.last_seen_ago_ms],
      ["UNAVAILABLE", "DOWN", 0, null],
    );
    // In the words of one a reload could not register (providers_health_unhosted_test.ts).
    assert.match(
      bad.start_error,
      /^provider bad failed to start at a configuration reload \(.*process exit code 1.*\)$/,
      "with the reason it did not start",
    );
    assert.equal(await metric(api, 'runtime_provider_up{provider="bad"}'), 0);
    // A reload that removes the entry takes it out; one that adds it again tries it again.
    await rig.write(body);
    await reload(rt, 2);
    assert.deepEqual(await listed(), ["p0"]);
    await rig.write(`${body}${rig.provider("bad")}\n`);
    assert.match(await reload(rt, 3), /failed to start: bad: /);
    await Deno.copyFile(`${rig.dir}/sim-p0.yaml`, `${rig.dir}/sim-bad.yaml`);
    await rig.write(`${body}${rig.provider("bad")}\n`);
    assert.match(await reload(rt, 4), /providers \+1 /);
    const up = (await api.get("/v0/providers/health")).json.providers
      // deno-lint-ignore no-explicit-any
      .find((p: any) => p.provider_id === "bad");
    assert.deepEqual([up.state, up.lifecycle_state, up.start_error], [
      "AVAILABLE",
      "RUNNING",
      null,
    ]);
    assert.equal(await metric(api, 'runtime_provider_up{provider="bad"}'), 1);
  } finally {
    assert.equal(await rt.stop(), 0, rt.stderr());
    await rig.dispose();
  }
});

Deno.test("With --log-level, a reload keeps that level in force, and the running configuration and the reload's report say so: the file's logging.level changes nothing", async () => {
  const rig = await Rig.create(["sim0"]);
  const body = (level: string) =>
    `logging: {level: ${level}}\nproviders:\n${rig.provider("sim0")}\n`;
  await rig.write(body("info"));
  const rt = await rig.start({ args: ["--log-level", "debug"] });
  const api = new Api(rt.base);
  let events: EventStream | null = null;
  try {
    events = await EventStream.open(rt.base);
    const opened = await api.post("/v0/runs", {});
    assert.equal(opened.status, 200, JSON.stringify(opened.json));
    const runId = opened.json.run.run_id as string;

    await rig.write(body("warn"));
    const summary = await reload(rt, 1);
    // The level in force is the command line's, before and after: the configuration in effect
    // does not change, so nothing is "applied" (nor "not applied").
    assert.match(summary, /^INFO .*config reload: no change$/);
    const reported = await waitFor("config_reload event", () => events!.of("config_reload")[0]);
    assert.equal(reported.data.result, "applied");
    assert.equal(reported.data.summary, "config reload: no change");
    // The file's edit is not silently ignored: one line names the key, where it is, and why.
    const overridden = rt.stderr().split("\n").filter((l) => l.includes("logging.level"));
    assert.equal(overridden.length, 1, rt.stderr());
    assert.match(
      overridden[0]!,
      /^WARN .*config reload: .*runtime\.yaml:3:\d+: warning: logging\.level: info -> warn in the file is not in effect: --log-level debug overrides it for this run$/,
    );

    // The level in force is still debug: the next reload's DEBUG line is written.
    const debugBefore = rt.stderr().split("\n").filter((l) => /^DEBUG .*re-reading/.test(l));
    assert.equal((await reload(rt, 2)).endsWith("config reload: no change"), true);
    const debugAfter = rt.stderr().split("\n").filter((l) => /^DEBUG .*re-reading/.test(l));
    assert.equal(debugAfter.length, debugBefore.length + 1, rt.stderr());

    const closed = await api.post(`/v0/runs/${runId}/close`, { close_reason: "completed" });
    assert.equal(closed.status, 200, JSON.stringify(closed.json));
    const listed = await api.get(`/v0/runs/${runId}/events?limit=100`);
    const changes = (listed.json.events as { category: string }[])
      .filter((e) => e.category === "config_change");
    assert.deepEqual(changes, [], "the run records no change of the logging section");
  } finally {
    await events?.close();
    await rt.stop();
    await rig.dispose();
  }
});
