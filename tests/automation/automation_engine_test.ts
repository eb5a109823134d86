/** AutomationEngine over in-memory kernel doubles: the BtServices adapter, mode following, faults. */
import assert from "node:assert/strict";
import {
  type DeviceCapabilities,
  type FunctionSpec,
  type Logger,
  MAX_NAMED_IN_WARNING,
  NO_FUNCTION_POLICY,
  PROVIDER_TEXT_CHARS,
  type Quality,
  QUOTED_DEVICE_ID_CHARS,
  QUOTED_PROVIDER_ID_CHARS,
  type SignalSpec,
  type TypedValue,
} from "../../src/common/mod.ts";
import type { RuntimeMode } from "../../src/config/mod.ts";
import type { CallRequest, GateContext, ModeChangeListener } from "../../src/control/mod.ts";
import type {
  DeviceCondition,
  DeviceConditionKind,
  DeviceConditionListener,
} from "../../src/state/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import {
  AutomationEngine,
  type AutomationEngineOptions,
  type AutomationInventory,
  MAX_CALL_RECORDS,
  MAX_OUTAGE_DATES,
  type TickScheduler,
} from "../../src/automation/mod.ts";
import { BtRunner } from "../../src/automation/bt/mod.ts";
import { ManualClock, memFiles, xmlRoot } from "./bt/_helpers.ts";

const SILENT: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => SILENT,
};

class FakeModes {
  mode: RuntimeMode = "IDLE";
  readonly listeners = new Set<ModeChangeListener>();
  readonly faults: string[] = [];
  current(): RuntimeMode {
    return this.mode;
  }
  onModeChange(l: ModeChangeListener): () => void {
    this.listeners.add(l);
    return () => this.listeners.delete(l);
  }
  set(mode: RuntimeMode): void {
    const previous = this.mode;
    this.mode = mode;
    for (const l of this.listeners) l({ previous, current: mode });
  }
  forceFault(reason: string): Promise<boolean> {
    this.faults.push(reason);
    this.set("FAULT");
    return Promise.resolve(true);
  }
}

/** Never fires on its own: the test ticks with runner.tickOnce(). */
const NO_TIMER: TickScheduler = { setInterval: () => 1, clearInterval: () => {} };

const TREE = "/bt/demo.xml";

function setup(body: string, o: Partial<AutomationEngineOptions> = {}) {
  const modes = new FakeModes();
  const calls: CallRequest[] = [];
  const signals = new Map<
    string,
    { value: TypedValue; quality: Quality; timestampMs: number; receivedMono: number }
  >();
  const engine = new AutomationEngine({
    behaviorTree: TREE,
    tickRateHz: 10,
    cache: { signal: (p, d, s) => signals.get(`${p}/${d}/${s}`) },
    router: {
      call: (req) => {
        calls.push(req);
        return Promise.reject(new Error("not reached"));
      },
    },
    parameters: {
      get: (name) => name === "target_temp" ? { name, type: "double", value: 40 } : undefined,
      list: () => [{ name: "target_temp", type: "double", value: 40 }],
    },
    modes,
    bus: new EventBus(),
    clock: new ManualClock(),
    log: SILENT,
    readFile: memFiles({ [TREE]: xmlRoot(body, "Main") }),
    scheduler: NO_TIMER,
    ...o,
  });
  return { engine, modes, calls, signals };
}

const SLEEP = `<BehaviorTree ID="Main"><Sleep msec="1000"/></BehaviorTree>`;

/** Loads and starts the engine, then walks the fake mode to `mode` (IDLE -> MANUAL -> AUTO). */
async function started(
  s: { engine: AutomationEngine; modes: FakeModes },
  mode: "IDLE" | "MANUAL" | "AUTO" = "IDLE",
): Promise<void> {
  await s.engine.load();
  s.engine.start();
  if (mode === "IDLE") return;
  s.modes.set("MANUAL");
  if (mode === "AUTO") s.modes.set("AUTO");
}

/** A readFile over `files` that a test edits (a reload reads them again); unknown paths throw. */
function editable(files: Record<string, string>): (path: string) => string {
  return (path) => {
    const text = files[path];
    if (text === undefined) throw new Error(`No such file: ${path}`);
    return text;
  };
}

/** Files TREE includes common.xml from (subtree Hold: a 1 s Sleep), for editable(). */
function includingTree(): Record<string, string> {
  return {
    [TREE]: xmlRoot(
      `<include path="common.xml"/><BehaviorTree ID="Main"><SubTree ID="Hold"/></BehaviorTree>`,
      "Main",
    ),
    "/bt/common.xml": xmlRoot(`<BehaviorTree ID="Hold"><Sleep msec="1000"/></BehaviorTree>`),
  };
}

/** set_motor_duty of sim0/motorctl0: actuating, no args, no policy unless `o` says otherwise. */
function setMotorDuty(o: Partial<FunctionSpec> = {}): FunctionSpec {
  return {
    functionId: 1,
    name: "set_motor_duty",
    description: "",
    category: "ACTUATE",
    actuating: true,
    args: [],
    policy: NO_FUNCTION_POLICY,
    ...o,
  };
}

/** A signal `id` of `valueType`, no unit, hint or staleness (for motorctlInventory's `signals`). */
function signal(id: string, valueType: SignalSpec["valueType"]): SignalSpec {
  return {
    signalId: id,
    name: id,
    description: "",
    valueType,
    unit: "",
    pollHintHz: 0,
    staleAfterMs: 0,
  };
}

/**
 * An inventory holding one available device, sim0/motorctl0 (or sim0/`deviceId`), declaring
 * `functions` (and `signals`).
 */
function motorctlInventory(
  functions: FunctionSpec[],
  deviceId = "motorctl0",
  signals: SignalSpec[] = [],
): AutomationInventory {
  const caps: DeviceCapabilities = {
    device: {
      providerId: "sim0",
      deviceId,
      providerName: "sim",
      typeId: "t",
      typeVersion: "1",
      label: "",
      address: "",
      tags: {},
    },
    functions,
    signals,
  };
  return {
    providerAvailable: () => true,
    devicesOf: () => [deviceId],
    capabilities: (p, d) => p === "sim0" && d === deviceId ? caps : undefined,
  };
}

/** A main tree reading two signals of `handle` in sequence, each `[signal id, blackboard key]`. */
function readsTree(handle: string, ...reads: [string, string][]): string {
  return `<BehaviorTree ID="Main">\n  <Sequence>\n` +
    reads.map(([id, key]) =>
      `    <ReadSignal device_handle="${handle}" signal_id="${id}" value="{${key}}"/>\n`
    ).join("") +
    `  </Sequence>\n</BehaviorTree>`;
}

/**
 * The AUTO refusal of `main` (the main tree, setup's) over `inventory` once loaded, each place in
 * the tree file (` at FILE:LINE:COL`) as ` at FILE`; a text saying so when AUTO is admitted.
 */
async function autoProblemAt(main: string, inventory: AutomationInventory): Promise<string> {
  const { engine } = setup(main, { inventory });
  try {
    await engine.load();
    return (engine.autoProblem() ?? "(no problem: AUTO admitted)")
      .replace(/ at \S+:\d+:\d+/g, " at FILE");
  } finally {
    engine.stop();
  }
}

Deno.test("AutomationEngine services read the cache with UNAVAILABLE as UNKNOWN and read parameters", () => {
  const { engine, signals } = setup(SLEEP);
  signals.set("sim0/tempctl0/tc1_temp", {
    value: { type: "double", double: 31.5 },
    quality: "UNAVAILABLE",
    timestampMs: 1,
    receivedMono: 1,
  });
  assert.deepEqual(engine.services.readSignal("sim0/tempctl0", "tc1_temp"), {
    value: { type: "double", double: 31.5 },
    quality: "UNKNOWN",
  });
  assert.equal(engine.services.readSignal("sim0/tempctl0", "tc2_temp"), null);
  assert.equal(engine.services.readSignal("no-slash", "tc1_temp"), null);
  assert.deepEqual(engine.services.getParameter("target_temp"), { type: "double", value: 40 });
  assert.equal(engine.services.getParameter("nope"), null);
});

Deno.test("AutomationEngine services call the router as automated with the halt signal", async () => {
  const { engine, calls } = setup(SLEEP);
  const abort = new AbortController();
  await assert.rejects(
    engine.services.callDevice("sim0/motorctl0", "set_motor_duty", {}, abort.signal),
  );
  assert.equal(calls.length, 1);
  assert.equal(calls[0]!.providerId, "sim0");
  assert.equal(calls[0]!.deviceId, "motorctl0");
  assert.equal(calls[0]!.functionName, "set_motor_duty");
  assert.equal(calls[0]!.origin, "automated");
  assert.equal(calls[0]!.signal, abort.signal);
  await assert.rejects(
    engine.services.callDevice("motorctl0", "set_motor_duty", {}, abort.signal),
    { code: "INVALID_ARGUMENT" },
  );
  assert.equal(calls.length, 1);
});

Deno.test("AutomationEngine ticks only in AUTO and halts the tree when leaving it", async () => {
  const { engine, modes } = setup(SLEEP);
  await started({ engine, modes });
  const runner = engine.runner!;
  assert.equal(runner.active, false);
  assert.equal(runner.tickOnce(), null);
  assert.equal(
    engine.status().why_not_running,
    "mode is IDLE: the tree ticks only in AUTO; switch to MANUAL, then AUTO (IDLE -> AUTO is no transition)",
    "IDLE -> AUTO is no transition: the remedy goes through MANUAL",
  );
  modes.set("MANUAL");
  modes.set("AUTO");
  assert.equal(runner.tickOnce(), "RUNNING");
  assert.equal(engine.status().engine_diagnostics.current_running_node, "Main/Sleep[0]");
  modes.set("FAULT");
  assert.equal(runner.active, false);
  assert.equal(engine.status().engine_diagnostics.current_running_node, null);
  assert.equal(engine.status().execution_reason, "mode_gate");
  engine.stop();
  assert.equal(engine.status().execution_reason, "stopped");
  modes.set("MANUAL");
  modes.set("AUTO");
  assert.equal(runner.active, false, "a stopped engine no longer follows the mode");
});

Deno.test("AutomationEngine forces FAULT when a tick throws", async () => {
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><Script code="x := y; y := 0"/></BehaviorTree>`,
  );
  await started({ engine, modes }, "AUTO");
  assert.equal(engine.runner!.tickOnce(), null);
  assert.equal(modes.faults.length, 1);
  assert.match(modes.faults[0]!, /^automation fault: .*"y".*Main\/Script\[0\]/);
  assert.equal(modes.mode, "FAULT");
  assert.equal(engine.status().execution_status, "failed");
});

Deno.test("AutomationEngine status reflects a re-arm at once, not the throw of the tick before", async () => {
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><Script code="x := y; y := 0"/></BehaviorTree>`,
  );
  await started({ engine, modes }, "AUTO");
  assert.equal(engine.runner!.tickOnce(), null);
  assert.equal(modes.mode, "FAULT");
  assert.equal(engine.status().not_running?.cause, "automation_fault");

  modes.set("MANUAL"); // FAULT left: re-armed
  let s = engine.status();
  assert.deepEqual(
    [s.execution_status, s.execution_reason, s.not_running?.cause, s.why_not_running],
    ["running", "mode_gate", "mode", "mode is MANUAL: the tree ticks only in AUTO"],
    "FAULT -> MANUAL",
  );
  assert.equal(s.engine_diagnostics.error_count, 1, "the throw stays counted");
  assert.match(s.last_error ?? "", /"y"/, "and its error stays the last one");

  modes.set("AUTO"); // before the first tick
  s = engine.status();
  assert.deepEqual([s.execution_status, s.execution_reason, s.not_running], [
    "running",
    undefined,
    null,
  ], "MANUAL -> AUTO, not ticked yet");
  engine.stop();
});

Deno.test("AutomationEngine load fails with every error diagnostic", async () => {
  const { engine } = setup(
    `<BehaviorTree ID="Main"><Sequence><Nope/><Sleep/></Sequence></BehaviorTree>`,
  );
  await assert.rejects(engine.load(), (err: Error & { code?: string }) => {
    assert.equal(err.code, "INVALID_ARGUMENT");
    assert.match(err.message, /Failed to load behavior tree \/bt\/demo\.xml: 2 error\(s\)/);
    assert.match(err.message, /\/bt\/demo\.xml:2:\d+: error: .*Nope/);
    assert.match(err.message, /\/bt\/demo\.xml:2:\d+: error: .*msec/);
    return true;
  });
  assert.equal(engine.runner, null);
});

Deno.test("AutomationEngine treeXml answers the file of the tree that runs, not the file on disk after a reload refused in AUTO; NOT_FOUND without a tree", async () => {
  const first = xmlRoot(SLEEP, "Main");
  const files: Record<string, string> = { [TREE]: first };
  const { engine, modes } = setup(SLEEP, { readFile: editable(files) });
  await started({ engine, modes }, "AUTO");
  assert.equal(await engine.treeXml(), first);
  // The operator edits the file and reloads in AUTO: refused, the first tree keeps running.
  const edited = xmlRoot(`<BehaviorTree ID="Main"><Sleep msec="5"/></BehaviorTree>`, "Main");
  files[TREE] = edited;
  assert.equal(await engine.reloadTree(TREE, 10), "refused_auto");
  assert.equal(
    await engine.treeXml(),
    first,
    "GET /v0/automation/tree shows a tree that does not run",
  );
  delete files[TREE];
  assert.equal(await engine.treeXml(), first, "the running tree's file is kept, not re-read");
  files[TREE] = edited;
  modes.set("MANUAL");
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.equal(await engine.treeXml(), edited, "the tree swapped in");
  assert.equal(await engine.reloadTree(null, 10), "replaced");
  await assert.rejects(engine.treeXml(), { code: "NOT_FOUND" }, "a reload removed the tree");
  engine.stop();
  await assert.rejects(setup(SLEEP).engine.treeXml(), { code: "NOT_FOUND" }, "none loaded yet");
  const none = setup(SLEEP, { behaviorTree: null }).engine;
  await assert.rejects(none.treeXml(), { code: "NOT_FOUND" });
  await none.load();
  assert.equal(none.status().execution_reason, "no_definition");
  assert.equal(none.automationVersion(), null);
});

Deno.test("AutomationEngine status carries the open run id and the version once loaded", async () => {
  const { engine } = setup(SLEEP);
  assert.equal(engine.automationVersion(), null);
  await engine.load();
  engine.setOpenRunId(() => "demo-01RUN");
  assert.equal(engine.status().run_id, "demo-01RUN");
  assert.equal(engine.automationVersion()?.id, "demo");
  assert.match(engine.automationVersion()?.digest ?? "", /^[0-9a-f]{64}$/);
});

/** Device conditions the test sets, told to the engine's latch as DeviceOutages tells them. */
class FakeOutages {
  readonly kinds = new Map<string, DeviceConditionKind>();
  /** The monotonic time each device not up is out since (undated when absent). */
  readonly since = new Map<string, number>();
  readonly #listeners: DeviceConditionListener[] = [];
  condition(p: string, d: string): DeviceCondition {
    const kind = this.kinds.get(`${p}/${d}`) ?? "up";
    const sinceMono = kind === "up" ? null : this.since.get(`${p}/${d}`) ?? null;
    return { kind, reason: kind === "up" ? "" : "its reads fail", sinceMono };
  }
  onChange(l: DeviceConditionListener): () => void {
    this.#listeners.push(l);
    return () => {};
  }
  /** `dated`: out since that monotonic time, the change told at that wall time. */
  set(
    handle: string,
    kind: DeviceConditionKind,
    dated?: { sinceMono: number; atWallMs: number },
  ): void {
    const [providerId, deviceId] = handle.split("/") as [string, string];
    const previous = this.kinds.get(handle) ?? "up";
    this.kinds.set(handle, kind);
    if (dated) this.since.set(handle, dated.sinceMono);
    for (const l of this.#listeners) {
      l({
        providerId,
        deviceId,
        previous,
        condition: this.condition(providerId!, deviceId!),
        atWallMs: dated?.atWallMs ?? 1,
      });
    }
  }
}

const NAMES_MOTOR = `<BehaviorTree ID="Main">
  <ReadSignal device_handle="sim0/motorctl0" signal_id="motor1_duty" value="{d}"/>
</BehaviorTree>`;

Deno.test("AutomationEngine device-loss latch: in AUTO a device the tree names going down forces FAULT; another device is latched only", async () => {
  const outages = new FakeOutages();
  const gates: Array<(ctx: GateContext) => unknown> = [];
  const { engine, modes } = setup(NAMES_MOTOR, {
    outages,
    router: {
      call: () => Promise.reject(new Error("not reached")),
      addGate: (g) => void gates.push(g),
    },
  });
  await started({ engine, modes }, "MANUAL");
  // Failing (within the bound): AUTO is refused, naming the device and why.
  outages.set("sim0/motorctl0", "failing");
  assert.match(engine.autoProblem() ?? "", /sim0\/motorctl0 \(its reads fail\)/);
  assert.deepEqual(engine.status().blocked_devices.map((b) => [b.device_handle, b.condition]), [
    ["sim0/motorctl0", "failing"],
  ]);
  outages.set("sim0/motorctl0", "up");
  assert.equal(engine.autoProblem(), null);
  modes.set("AUTO");

  // A device the tree neither names nor commanded: latched (automated calls refused), no FAULT.
  outages.set("sim0/relayio0", "down");
  assert.equal(modes.current(), "AUTO");
  assert.deepEqual(engine.status().device_loss_latched, ["sim0/relayio0"]);
  assert.deepEqual(modes.faults, []);
  const ctx = (origin: string) =>
    ({
      origin,
      device: { device: { providerId: "sim0", deviceId: "relayio0" } },
      fn: { name: "set_relay", actuating: true },
    }) as unknown as GateContext;
  assert.equal(gates.length, 1);
  assert.match(
    String((gates[0]!(ctx("automated")) as Error).message),
    /^Device-loss latch: sim0\/relayio0 was lost \(its reads fail at /,
  );
  assert.equal(gates[0]!(ctx("manual")), null, "manual calls are exempt");

  // The device the tree names: FAULT at once, with the device in the reason.
  outages.set("sim0/motorctl0", "down");
  assert.equal(modes.current(), "FAULT");
  assert.deepEqual(modes.faults, ["device-loss latch: sim0/motorctl0 is down (its reads fail)"]);
  const status = engine.status();
  assert.equal(status.not_running?.cause, "device_loss_latch");
  assert.deepEqual(status.device_loss_latched, ["sim0/relayio0", "sim0/motorctl0"]);
  // Back: still latched, nothing re-armed; entering AUTO again releases it.
  outages.set("sim0/motorctl0", "up");
  assert.equal(modes.current(), "FAULT");
  modes.set("MANUAL");
  assert.equal(engine.status().not_running?.cause, "mode");
  modes.set("AUTO");
  // relayio0 is still down: it stays latched (its return must not let the tree command it).
  assert.deepEqual(engine.status().device_loss_latched, ["sim0/relayio0"]);
  assert.equal(engine.status().not_running, null);
  outages.set("sim0/relayio0", "up");
  modes.set("MANUAL");
  modes.set("AUTO");
  assert.deepEqual(engine.status().device_loss_latched, []);
});

/**
 * A tree that commands sim0/motorctl0 through a handle from its blackboard (it does not name the
 * device literally: it depends on it because it commands it), in AUTO, ticked once: its call is
 * held where `mark` leaves it (told sent, or admitted to its provider's queue) and never answers.
 * Then the device goes down; returns the FAULTs forced and the mode.
 */
async function lossWhileCommanding(
  mark: (req: CallRequest) => void,
): Promise<{ faults: string[]; mode: RuntimeMode; called: string[] }> {
  const outages = new FakeOutages();
  const { engine, modes, calls } = setup(
    `<BehaviorTree ID="Main"><Sequence>` +
      `<SetBlackboard value="sim0/motorctl0" output_key="dev"/>` +
      `<CallDevice device_handle="{dev}" function_name="set_motor_duty"/>` +
      `</Sequence></BehaviorTree>`,
    {
      outages,
      router: {
        call: (req) => {
          calls.push(req);
          mark(req);
          return new Promise(() => {});
        },
      },
    },
  );
  await started({ engine, modes }, "AUTO");
  assert.equal(engine.runner!.tickOnce(), "RUNNING");
  const called = calls.map((c) => `${c.providerId}/${c.deviceId}`);
  outages.set("sim0/motorctl0", "down");
  const lost = { faults: [...modes.faults], mode: modes.current(), called };
  engine.stop();
  return lost;
}

Deno.test("AutomationEngine device-loss latch: a device the tree is commanding (its call in flight) going down forces FAULT", async () => {
  // Its provider dies while the call is in flight.
  const lost = await lossWhileCommanding((req) => req.onSent?.()); // sent, not answered yet
  assert.deepEqual(lost.called, ["sim0/motorctl0"]);
  assert.deepEqual(
    lost.faults,
    ["device-loss latch: sim0/motorctl0 is down (its reads fail)"],
    "the device the tree is commanding forces FAULT",
  );
  assert.equal(lost.mode, "FAULT");
});

Deno.test("AutomationEngine device-loss latch: a device the tree's call waits in its provider's queue for going down forces FAULT", async () => {
  // The call passed the gates and waits behind another call to its provider (not written yet)
  // when the device is lost: the tree was about to command it.
  const lost = await lossWhileCommanding((req) => (req as { onQueued?: () => void }).onQueued?.() // admitted to the queue, not sent
  );
  assert.deepEqual(
    lost.faults,
    ["device-loss latch: sim0/motorctl0 is down (its reads fail)"],
    "the device the tree's queued call was about to command forces FAULT",
  );
  assert.equal(lost.mode, "FAULT");
});

Deno.test("AutomationEngine reloadTree loads the tree again when only a file it includes changed", async () => {
  const files = includingTree();
  const { engine, modes } = setup(SLEEP, {
    readFile: editable(files),
  });
  await started({ engine, modes }, "MANUAL");
  assert.equal(await engine.reloadTree(TREE, 10), "unchanged", "nothing changed");
  const before = engine.runner;
  // The operator edits the included subtree: the top-level file is byte for byte the same.
  files["/bt/common.xml"] = xmlRoot(`<BehaviorTree ID="Hold"><Sleep msec="5"/></BehaviorTree>`);
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.notEqual(engine.runner, before);
  modes.set("AUTO");
  files["/bt/common.xml"] = xmlRoot(`<BehaviorTree ID="Hold"><Sleep msec="7"/></BehaviorTree>`);
  assert.equal(await engine.reloadTree(TREE, 10), "refused_auto", "never swapped in AUTO");
  // A file that does not load is refused with why (every diagnostic), as outside AUTO.
  files["/bt/common.xml"] = xmlRoot(`<BehaviorTree ID="Hold"><Sleeep msec="7"/></BehaviorTree>`);
  const r = await engine.reloadTree(TREE, 10);
  assert.ok(typeof r === "object", `refused with the file's diagnostics, not ${JSON.stringify(r)}`);
  assert.match(r.refused_auto.does_not_load, /common\.xml:\d+:\d+: error: .*"Sleeep"/);
  engine.stop();
});

Deno.test("AutomationEngine reloadTree of the tree in force builds nothing; an edited file is built", async () => {
  const files = includingTree();
  let builds = 0;
  const { engine, modes } = setup(SLEEP, {
    readFile: editable(files),
    newRunner: (options) => {
      builds++;
      return new BtRunner(options);
    },
  });
  await started({ engine, modes }, "MANUAL");
  assert.equal(builds, 1, "load() builds the tree");
  const runner = engine.runner;
  assert.equal(await engine.reloadTree(TREE, 10), "unchanged");
  assert.equal(builds, 1, "the same files: not built again");
  assert.equal(await engine.reloadTree(TREE, 20), "retimed");
  assert.equal(builds, 1, "retimed in place, not built");
  assert.equal(engine.runner, runner);
  modes.set("AUTO");
  assert.equal(await engine.reloadTree(TREE, 20), "unchanged", "in AUTO too");
  assert.equal(builds, 1);
  modes.set("MANUAL");
  // Only the included file is edited: the tree is built again, and swapped in.
  files["/bt/common.xml"] = xmlRoot(`<BehaviorTree ID="Hold"><Sleep msec="5"/></BehaviorTree>`);
  assert.equal(await engine.reloadTree(TREE, 20), "replaced");
  assert.equal(builds, 2);
  assert.equal(await engine.reloadTree(TREE, 20), "unchanged", "the edited tree is now in force");
  assert.equal(builds, 2);
  engine.stop();
});

Deno.test("AutomationEngine reloadTree of the same tree at another tick rate answers retimed, its version unchanged", async () => {
  const { engine, modes } = setup(SLEEP);
  await started({ engine, modes }, "MANUAL");
  const version = engine.automationVersion();
  assert.equal(await engine.reloadTree(TREE, 20), "retimed");
  assert.deepEqual(engine.automationVersion(), version);
  assert.equal(await engine.reloadTree(TREE, 20), "unchanged");
  engine.stop();
});

Deno.test("AutomationEngine retimed by a reload keeps the tree's state (blackboard, RunOnce), as leaving AUTO does", async () => {
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><Sequence><RunOnce><Script code="n := 0"/></RunOnce>` +
      `<Script code="n := n + 1"/></Sequence></BehaviorTree>`,
  );
  await started({ engine, modes }, "AUTO");
  for (let k = 0; k < 3; k++) assert.equal(engine.runner!.tickOnce(), "SUCCESS");
  modes.set("MANUAL");
  assert.equal(await engine.reloadTree(TREE, 20), "retimed");
  assert.equal(engine.runner!.periodMs, 50, "ticks at the new rate");
  modes.set("AUTO");
  assert.equal(engine.runner!.tickOnce(), "SUCCESS");
  assert.deepEqual(engine.runner!.tree.blackboard.get("n"), { type: "int64", value: 4 });
  assert.equal(engine.tickCounts().ticks, 4);
  engine.stop();
});

Deno.test("AutomationEngine tick counts (GET /metrics counters) keep counting across a tree a reload replaces or removes", async () => {
  const files: Record<string, string> = {
    [TREE]: xmlRoot(
      `<BehaviorTree ID="Main"><Script code="x := missing; missing := 0"/></BehaviorTree>`,
      "Main",
    ),
  };
  const { engine, modes } = setup(SLEEP, {
    readFile: editable(files),
  });
  await started({ engine, modes }, "AUTO");
  assert.equal(engine.runner!.tickOnce(), null, "the tick threw");
  assert.equal(modes.current(), "FAULT");
  modes.set("MANUAL");
  modes.set("AUTO");
  assert.equal(engine.runner!.tickOnce(), null);
  assert.deepEqual(engine.tickCounts(), { ticks: 2, errors: 2 });
  modes.set("MANUAL");
  files[TREE] = xmlRoot(SLEEP, "Main");
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  modes.set("AUTO");
  assert.equal(engine.runner!.tickOnce(), "RUNNING");
  // runtime_bt_ticks_total and runtime_bt_tick_errors_total count from the runtime's start.
  assert.deepEqual(engine.tickCounts(), { ticks: 3, errors: 2 }, "after the tree was replaced");
  modes.set("MANUAL");
  assert.equal(await engine.reloadTree(null, 10), "replaced");
  assert.deepEqual(engine.tickCounts(), { ticks: 3, errors: 2 }, "after the tree was removed");
  engine.stop();
});

Deno.test("AutomationEngine reloadTree stops the runner it replaces: its tick timer is cleared and it no longer follows the mode or ticks", async () => {
  /** Interval ids the runners hold now (a test scheduler that never fires on its own). */
  const live = new Set<number>();
  let nextId = 0;
  const scheduler: TickScheduler = {
    setInterval: () => {
      live.add(++nextId);
      return nextId;
    },
    clearInterval: (id) => void live.delete(id as number),
  };
  const files: Record<string, string> = { [TREE]: xmlRoot(SLEEP, "Main") };
  const { engine, modes } = setup(SLEEP, { readFile: editable(files), scheduler });
  await started({ engine, modes }, "AUTO");
  const old = engine.runner!;
  assert.equal(old.tickOnce(), "RUNNING");
  assert.equal(live.size, 1, "the running tree's tick timer");
  modes.set("MANUAL");
  assert.equal(live.size, 0, "out of AUTO: no tick timer");
  files[TREE] = xmlRoot(`<BehaviorTree ID="Main"><Sleep msec="2000"/></BehaviorTree>`, "Main");
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.notEqual(engine.runner, old);
  assert.equal(old.status().execution_reason, "stopped", "the replaced runner is stopped");
  modes.set("AUTO");
  assert.deepEqual(
    [live.size, old.active, old.tickOnce(), engine.runner!.tickOnce()],
    [1, false, null, "RUNNING"],
    "only the new tree's timer runs; the replaced runner neither follows AUTO nor ticks",
  );
  engine.stop();
  assert.equal(live.size, 0, "stopped: no timer left");
});

Deno.test('AutomationEngine without a tree answers a reload changing only the tick rate "unchanged": no tree is retimed', async () => {
  const { engine, modes } = setup(SLEEP, { behaviorTree: null });
  await started({ engine, modes });
  assert.equal(await engine.reloadTree(null, 20), "unchanged", "outside AUTO");
  modes.set("MANUAL");
  modes.set("AUTO");
  assert.equal(await engine.reloadTree(null, 30), "unchanged", "in AUTO: no running tree");
  engine.stop();
});

Deno.test("AutomationEngine started without a tree ticks the one a reload adds, in AUTO", async () => {
  const { engine, modes } = setup(SLEEP, { behaviorTree: null });
  await started({ engine, modes }, "MANUAL");
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.equal(engine.status().not_running?.cause, "mode", "waiting for AUTO, not stopped");
  modes.set("AUTO");
  assert.equal(engine.runner!.active, true);
  assert.equal(engine.runner!.tickOnce(), "RUNNING");
  assert.equal(engine.status().not_running, null);
  engine.stop();
});

Deno.test("AutomationEngine forgets the replaced tree's failed calls: status names no outage the new tree never saw", async () => {
  const files: Record<string, string> = { [TREE]: xmlRoot(SLEEP, "Main") };
  const { engine, modes } = setup(SLEEP, {
    readFile: editable(files),
  });
  await started({ engine, modes }, "MANUAL");
  const abort = new AbortController();
  for (let i = 0; i < 2; i++) {
    await assert.rejects(engine.services.callDevice("sim0/motorctl0", "f", {}, abort.signal));
  }
  assert.deepEqual(engine.status().device_outages.map((o) => o.device_handle), ["sim0/motorctl0"]);
  files[TREE] = xmlRoot(`<BehaviorTree ID="Main"><Sleep msec="5"/></BehaviorTree>`, "Main");
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.deepEqual(engine.status().device_outages, []);
  assert.equal(engine.status().last_error, null);
  engine.stop();
});

Deno.test("AutomationEngine keeps the tree's failed calls when a reload changes only its tick rate: the same tree's outage is still named", async () => {
  const { engine, modes } = setup(SLEEP);
  await started({ engine, modes }, "MANUAL");
  const abort = new AbortController();
  for (let i = 0; i < 2; i++) {
    await assert.rejects(engine.services.callDevice("sim0/motorctl0", "f", {}, abort.signal));
  }
  assert.deepEqual(engine.status().device_outages.map((o) => o.device_handle), ["sim0/motorctl0"]);
  assert.equal(await engine.reloadTree(TREE, 20), "retimed");
  assert.deepEqual(
    engine.status().device_outages.map((o) => [o.device_handle, o.consecutive_failures]),
    [["sim0/motorctl0", 2]],
    "a tick rate change is no other tree: what its calls found still holds",
  );
  assert.match(engine.status().last_error ?? "", /device outage: sim0\/motorctl0/);
  engine.stop();
});

Deno.test("AutomationEngine refuses AUTO while the tree reads a parameter the store does not declare (a reload's parameters not applied yet)", async () => {
  const files: Record<string, string> = { [TREE]: xmlRoot(SLEEP, "Main") };
  const { engine, modes } = setup(SLEEP, { readFile: (path) => files[path]! });
  await started({ engine, modes }, "MANUAL");
  files[TREE] = xmlRoot(
    `<BehaviorTree ID="Main"><GetParameter param="duty" value="{d}"/></BehaviorTree>`,
    "Main",
  );
  // The reload declares `duty`; its automation.parameters section comes after the tree's.
  const duty = {
    name: "duty",
    type: "double" as const,
    default: 0.1,
    min: 0,
    max: 1,
    allowedValues: [],
  };
  assert.equal(await engine.reloadTree(TREE, 10, [duty]), "replaced");
  // Not applied yet (or refused): the store declares target_temp only.
  assert.match(
    engine.autoProblem() ?? "",
    /^refusing AUTO: the behavior tree reads parameters that are not declared: .*"duty" is not a declared parameter/,
  );
  engine.stop();
});

Deno.test("AutomationEngine's AUTO gate judges a duplicated function name by the declaration a call by that name reaches (the last)", async () => {
  // A provider declaring two functions under one name: a call by name goes to the last declared
  // (CallRouter, as anolis). Its policy keeps it out of AUTO, so the tree's every call would be
  // refused; the gate read the first declaration's policy instead and let AUTO in.
  const fn = (functionId: number, allowedModes: string[]): FunctionSpec =>
    setMotorDuty({ functionId, policy: { ...NO_FUNCTION_POLICY, allowedModes } });
  const { engine } = setup(
    `<BehaviorTree ID="Main">
  <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args="json:{}"/>
</BehaviorTree>`,
    { inventory: motorctlInventory([fn(1, ["AUTO", "MANUAL"]), fn(2, ["MANUAL"])]) },
  );
  await engine.load();
  assert.match(
    engine.autoProblem() ?? "(no problem: AUTO admitted)",
    /^refusing AUTO: the behavior tree calls sim0\/motorctl0 set_motor_duty \(Call refused in AUTO mode: .* allowed only in "MANUAL"/,
  );
});

Deno.test("AutomationEngine stalled: why_not_running names the devices whose calls keep failing, not 'no error'", async () => {
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><CallDevice device_handle="sim0/motorctl0" function_name="f" args="{}"/></BehaviorTree>`,
  );
  await started({ engine, modes }, "AUTO");
  for (let i = 0; i < 40 && engine.status().not_running?.cause !== "stalled"; i++) {
    engine.runner!.tickOnce();
    await new Promise((r) => setTimeout(r, 0));
  }
  const s = engine.status();
  assert.equal(s.not_running?.cause, "stalled");
  assert.equal(
    s.last_error,
    "device outage: sim0/motorctl0 (" +
      `${s.device_outages[0]!.consecutive_failures} calls failed)`,
  );
  assert.equal(
    s.why_not_running,
    `the tree keeps failing tick after tick (${s.last_error})`,
  );
  engine.stop();
});

Deno.test("AutomationEngine in a FAULT it did not cause: why_not_running gives the re-arm, not AUTO (FAULT -> AUTO is no transition)", async () => {
  const { engine, modes } = setup(SLEEP);
  await started({ engine, modes }, "AUTO");
  modes.set("FAULT"); // an e-stop, an alarm action
  const s = engine.status();
  assert.deepEqual(s.not_running, { cause: "mode", mode: "FAULT" });
  assert.equal(
    s.why_not_running,
    "mode is FAULT: the tree ticks only in AUTO; re-arm (FAULT -> MANUAL -> AUTO)",
  );
  engine.stop();
});

Deno.test("AutomationEngine outside AUTO: why_not_running says AUTO would be refused for the tree's call policy, not only that the tree waits for AUTO", async () => {
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main">
  <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args="json:{}"/>
</BehaviorTree>`,
    {
      inventory: motorctlInventory([
        setMotorDuty({ policy: { ...NO_FUNCTION_POLICY, allowedModes: ["MANUAL"] } }),
      ]),
    },
  );
  await started({ engine, modes }, "MANUAL");
  const problem = engine.autoProblem();
  assert.match(problem ?? "", /^refusing AUTO: the behavior tree calls sim0\/motorctl0/);
  const s = engine.status();
  assert.deepEqual(s.not_running, { cause: "mode", mode: "MANUAL" });
  assert.equal(
    s.why_not_running,
    `mode is MANUAL: the tree ticks only in AUTO; ${problem}`,
    "the remedy 'enter AUTO' would be refused: the line says why",
  );
  engine.stop();
});

Deno.test("AutomationEngine logs a reload that removes the tree as 'behavior tree removed', one line, level first", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const { engine, modes } = setup(SLEEP, { log });
  await started({ engine, modes }, "MANUAL");
  lines.length = 0;
  assert.equal(await engine.reloadTree(null, 10), "replaced");
  const reload = lines.filter((l) => /behavior tree/.test(l));
  assert.equal(reload.length, 1, reload.join("\n"));
  assert.match(reload[0]!, /^INFO\b.*behavior tree removed by a configuration reload$/);
  assert.doesNotMatch(reload[0]!, /\(none\)|loaded/);
  engine.stop();
});

Deno.test("AutomationEngine: a call of a replaced tree that settles after the swap says nothing of the new tree's outages", async () => {
  const files: Record<string, string> = { [TREE]: xmlRoot(SLEEP, "Main") };
  let settle: (() => void) | null = null;
  let pending = true;
  const { engine, modes } = setup(SLEEP, {
    readFile: (path) => files[path]!,
    router: {
      call: (req) => {
        if (!pending) return Promise.reject(new Error("device fault"));
        pending = false;
        req.onSent?.();
        return new Promise((resolve) => {
          settle = () =>
            resolve({
              providerId: req.providerId,
              deviceId: req.deviceId,
              functionId: 1,
              functionName: "f",
              results: {},
              postCallPollTriggered: false,
            });
        });
      },
    },
  });
  await started({ engine, modes }, "MANUAL");
  // The old tree's call is in flight when a reload replaces the tree.
  const old = engine.services.callDevice("sim0/motorctl0", "f", {}, new AbortController().signal);
  files[TREE] = xmlRoot(`<BehaviorTree ID="Main"><Sleep msec="5"/></BehaviorTree>`, "Main");
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  // The new tree's calls to the device fail: an outage.
  for (let i = 0; i < 2; i++) {
    await assert.rejects(
      engine.services.callDevice("sim0/motorctl0", "f", {}, new AbortController().signal),
    );
  }
  assert.deepEqual(engine.status().device_outages.map((o) => o.device_handle), ["sim0/motorctl0"]);
  settle!();
  await old;
  assert.deepEqual(
    engine.status().device_outages.map((o) => [o.device_handle, o.consecutive_failures]),
    [["sim0/motorctl0", 2]],
    "the replaced tree's late answer ended the new tree's outage",
  );
  engine.stop();
});

/** sim0/motorctl0 declaring set_motor_duty with one required `duty` in [0, 1]. */
const dutyInventory = () =>
  motorctlInventory([setMotorDuty({
    args: [{
      name: "duty",
      type: "double",
      unit: "",
      description: "",
      required: true,
      min: 0,
      max: 1,
      allowedValues: [],
    }],
  })]);

Deno.test("AutomationEngine refuses AUTO for a literal call of a function the device does not declare, or with literal args that fail validation, naming the node", async () => {
  // Every such call is refused at run time (unknown_function / validation): the tree cannot run
  // in AUTO, so entering it is refused, as for a call whose policy keeps it out of AUTO.
  const inventory = dutyInventory();
  const problemOf = async (tree: string): Promise<string | null> => {
    const { engine } = setup(`<BehaviorTree ID="Main">\n${tree}\n</BehaviorTree>`, { inventory });
    try {
      await engine.load();
      return engine.autoProblem();
    } finally {
      engine.stop();
    }
  };
  assert.equal(
    await problemOf(
      `  <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args='json:{"duty": 0.5}'/>`,
    ),
    null,
  );
  assert.match(
    await problemOf(
      `  <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_dutty" args='json:{"duty": 0.5}'/>`,
    ) ?? "(no problem: AUTO admitted)",
    /^refusing AUTO: the behavior tree calls sim0\/motorctl0 set_motor_dutty at \S+:3:\d+ \(Function not found: .*"set_motor_dutty"/,
  );
  assert.match(
    await problemOf(
      `  <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args='json:{"duty": 1.5}'/>`,
    ) ?? "(no problem: AUTO admitted)",
    /^refusing AUTO: the behavior tree calls sim0\/motorctl0 set_motor_duty at \S+:3:\d+ \(args\.duty: .*1\.5/,
  );
  assert.match(
    await problemOf(
      `  <CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty"/>`,
    ) ?? "(no problem: AUTO admitted)",
    /^refusing AUTO: .* set_motor_duty at \S+:3:\d+ \(args\.duty: required argument missing/,
  );
  // Args from the blackboard are judged at the call, as before.
  assert.equal(
    await problemOf(
      `<Sequence><Script code="a := 'json:{}'"/>` +
        `<CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args="{a}"/>` +
        `</Sequence>`,
    ),
    null,
  ); // A SubTree port setting the device and function to literals is a literal call too.
  const { engine } = setup(SLEEP, { inventory, readFile: () => SUBTREE_CALL("set_motor_dutty") });
  try {
    await engine.load();
    assert.match(
      engine.autoProblem() ?? "(no problem: AUTO admitted)",
      /^refusing AUTO: the behavior tree calls sim0\/motorctl0 set_motor_dutty at \S+:3:\d+ \(Function not found/,
    );
  } finally {
    engine.stop();
  }
});

Deno.test("AutomationEngine refuses AUTO for a literal call of an unknown 10 kB function name with a line break in one bounded line, the name cut and escaped", async () => {
  const inventory = dutyInventory();
  const name = `a&#10;INFO forged'"${"x".repeat(10_000)}`;
  const { engine } = setup(
    `<BehaviorTree ID="Main">\n  <CallDevice device_handle="sim0/motorctl0" function_name="${
      name.replace('"', "&quot;")
    }"/>\n</BehaviorTree>`,
    { inventory },
  );
  try {
    await engine.load();
    const problem = engine.autoProblem() ?? "(no problem: AUTO admitted)";
    // deno-lint-ignore no-control-regex
    assert.doesNotMatch(problem, /[\x00-\x1f]/, "one line: no control character");
    const cut = "x".repeat(PROVIDER_TEXT_CHARS - `a\nINFO forged'"`.length);
    assert.equal(
      problem.replace(/ at \S+:3:\d+ /, " at FILE "),
      `refusing AUTO: the behavior tree calls sim0/motorctl0 a\\nINFO forged'"${cut}\u2026 ` +
        `at FILE (Function not found: sim0/motorctl0 "a\\nINFO forged'\\"${cut}\u2026")`,
    );
  } finally {
    engine.stop();
  }
});

Deno.test("AutomationEngine refuses AUTO naming a device of a 10 kB id cut, as the call router names it", async () => {
  // A device's id is any length (a provider lists it): the refusal names it cut, not 10 kB.
  const deviceId = "d".repeat(10_000);
  const cut = `sim0/${"d".repeat(QUOTED_DEVICE_ID_CHARS)}\u2026`;
  const problemOf = async (fn: FunctionSpec, functionName: string) => {
    const { engine } = setup(
      `<BehaviorTree ID="Main">\n  <CallDevice device_handle="sim0/${deviceId}" ` +
        `function_name="${functionName}" args="json:{}"/>\n</BehaviorTree>`,
      { inventory: motorctlInventory([fn], deviceId) },
    );
    try {
      await engine.load();
      return (engine.autoProblem() ?? "(no problem: AUTO admitted)")
        .replace(/ at \S+:3:\d+ /, " at FILE ");
    } finally {
      engine.stop();
    }
  };
  assert.equal(
    await problemOf(setMotorDuty(), "set_motor_dutty"),
    `refusing AUTO: the behavior tree calls ${cut} set_motor_dutty at FILE ` +
      `(Function not found: ${cut} "set_motor_dutty")`,
  );
  const manualOnly = setMotorDuty({ policy: { ...NO_FUNCTION_POLICY, allowedModes: ["MANUAL"] } });
  const refused = await problemOf(manualOnly, "set_motor_duty");
  assert.ok(
    refused.startsWith(`refusing AUTO: the behavior tree calls ${cut} set_motor_duty (`),
    refused.slice(0, 300),
  );
  assert.ok(refused.length < 1000, `${refused.length} characters`);
});

Deno.test("AutomationEngine refuses AUTO for a blackboard entry two signals type apart, the device's 10 kB ids cut", async () => {
  const deviceId = "d".repeat(10_000);
  const signalId = "s".repeat(10_000);
  const problem = await autoProblemAt(
    readsTree(`sim0/${deviceId}`, [signalId, "x"], ["q", "x"]),
    motorctlInventory([], deviceId, [signal(signalId, "double"), signal("q", "string")]),
  );
  const device = `sim0/${"d".repeat(QUOTED_DEVICE_ID_CHARS)}\u2026`;
  assert.ok(
    problem.startsWith(
      `refusing AUTO: the behavior tree writes blackboard entry "x" with ReadSignal ${device} ` +
        `${"s".repeat(PROVIDER_TEXT_CHARS)}\u2026 (a double signal) at FILE and with ReadSignal ` +
        `${device} q (a string signal) at FILE (`,
    ),
    problem.slice(0, 400),
  );
});

Deno.test("AutomationEngine refuses AUTO for a blackboard entry of a 10 kB key two signals type apart, the key cut and quoted", async () => {
  // A key holds no quote or control character (a port refuses it as no blackboard reference).
  const key = "k".repeat(10_000);
  const problem = await autoProblemAt(
    readsTree("sim0/motorctl0", ["v", key], ["q", key]),
    motorctlInventory([], undefined, [signal("v", "double"), signal("q", "string")]),
  );
  assert.ok(
    problem.startsWith(
      `refusing AUTO: the behavior tree writes blackboard entry "${
        "k".repeat(PROVIDER_TEXT_CHARS)
      }\u2026" with ReadSignal sim0/motorctl0 v (a double signal) at FILE and with `,
    ),
    problem.slice(0, 400),
  );
  assert.ok(problem.length < 1000, `${problem.length} characters`);
});

Deno.test("AutomationEngine logs the main tree's id of 10 kB with a quote and a line break cut and quoted", async () => {
  // As the XML writes it (&quot; a quote, &#10; a line break), and as the tree reads it.
  const written = `M&quot;&#10;${"m".repeat(10_000)}`;
  const id = `M"\n${"m".repeat(10_000)}`;
  const { log, lines } = capturingLogger();
  const { engine } = setup("", {
    log,
    readFile: memFiles({
      [TREE]: xmlRoot(`<BehaviorTree ID="${written}"><Sleep msec="1000"/></BehaviorTree>`, written),
    }),
  });
  try {
    await engine.load();
    const loaded = lines.find((l) => l.includes("loaded (main tree"));
    assert.ok(
      loaded?.endsWith(
        `loaded (main tree ${
          JSON.stringify(`${id.slice(0, PROVIDER_TEXT_CHARS)}\u2026`)
        }, 1 file(s))`,
      ),
      (loaded ?? lines.join("\n")).slice(0, 400),
    );
  } finally {
    engine.stop();
  }
});

Deno.test("AutomationEngine refuses a tree's call with a malformed 10 kB handle holding a quote and control characters, the handle cut and quoted", async () => {
  const handle = `m"\u001b\r\n${"h".repeat(10_000)}`;
  const { engine } = setup(SLEEP);
  try {
    await engine.load();
    await assert.rejects(
      engine.services.callDevice(handle, "set_motor_duty", {}, new AbortController().signal),
      (err: Error) => {
        assert.equal(
          err.message,
          `device_handle must be 'provider/device', got ${
            JSON.stringify(`${handle.slice(0, PROVIDER_TEXT_CHARS)}\u2026`)
          }`,
        );
        return true;
      },
    );
  } finally {
    engine.stop();
  }
});

Deno.test("AutomationEngine refuses AUTO for a SubTree instance's literal args that fail validation, also when another instance maps that port to an entry the tree writes", async () => {
  const inventory = dutyInventory();
  const tree = xmlRoot(
    `<BehaviorTree ID="Main"><Sequence>` +
      `<Script code="a := 'json:{&quot;duty&quot;: 0.5}'"/>` +
      `<SubTree ID="m" a='json:{"duty": 1.5}'/>` +
      `<SubTree ID="m" a="{@a}"/>` +
      `</Sequence></BehaviorTree>\n<BehaviorTree ID="m">` +
      `<CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty" args="{a}"/>` +
      `</BehaviorTree>`,
    "Main",
  );
  const { engine } = setup(SLEEP, { inventory, readFile: () => tree });
  try {
    await engine.load();
    // Before: null -- the second instance's mapping made the first's literal count as varying.
    assert.match(
      engine.autoProblem() ?? "(no problem: AUTO admitted)",
      /^refusing AUTO: the behavior tree calls sim0\/motorctl0 set_motor_duty at \S+:3:\d+ \(args\.duty: .*1\.5/,
    );
  } finally {
    engine.stop();
  }
});

/** A SubTree setting the device (and function) of the call inside it to a literal. */
const SUBTREE_CALL = (fn: string) =>
  xmlRoot(
    `<BehaviorTree ID="Main"><SubTree ID="m" _autoremap="true" dev="sim0/motorctl0" fn="${fn}"/>` +
      `</BehaviorTree>\n<BehaviorTree ID="m">` +
      `<CallDevice device_handle="{dev}" function_name="{fn}" args='json:{"duty": 0.5}'/>` +
      `</BehaviorTree>`,
    "Main",
  );

Deno.test("AutomationEngine: a call whose device a SubTree port sets to a literal is named by the tree: AUTO refused while it is down, FAULT when it goes down in AUTO", async () => {
  const outages = new FakeOutages();
  const { engine, modes } = setup(SLEEP, {
    outages,
    readFile: () => SUBTREE_CALL("set_motor_duty"),
  });
  await engine.load();
  engine.start();
  modes.set("MANUAL");
  outages.set("sim0/motorctl0", "failing");
  assert.match(
    engine.autoProblem() ?? "(AUTO admitted)",
    /names sim0\/motorctl0 \(its reads fail\)/,
  );
  outages.set("sim0/motorctl0", "up");
  assert.equal(engine.autoProblem(), null);
  modes.set("AUTO");
  outages.set("sim0/motorctl0", "down");
  assert.equal(modes.current(), "FAULT", "the device the tree names going down forces FAULT");
  assert.deepEqual(modes.faults, ["device-loss latch: sim0/motorctl0 is down (its reads fail)"]);
  engine.stop();
});

Deno.test("AutomationEngine keeps the failure and refusal records of at most MAX_CALL_RECORDS devices, the least recently updated going first", async () => {
  const { engine } = setup(SLEEP);
  await engine.load();
  const signal = new AbortController().signal;
  const fail = (handle: string) =>
    assert.rejects(engine.services.callDevice(handle, "f", {}, signal));
  // sim0/kept fails first, then again after the others started: it is the most recent.
  await fail("sim0/kept");
  for (let i = 0; i < MAX_CALL_RECORDS; i++) {
    await fail(`sim0/dev${i}`);
    await fail(`sim0/dev${i}`);
    // A handle the tree computed malformed is refused (validation): a refusal record.
    await fail(`bad${i}`);
    await fail(`bad${i}`);
    if (i === 0) await fail("sim0/kept");
  }
  await fail(`bad${MAX_CALL_RECORDS}`);
  await fail(`bad${MAX_CALL_RECORDS}`);
  const s = engine.status();
  assert.equal(s.device_outages.length, MAX_CALL_RECORDS);
  assert.equal(s.refused_calls.length, MAX_CALL_RECORDS);
  const outages = s.device_outages.map((o) => o.device_handle);
  assert.ok(outages.includes("sim0/kept"), "updated after the oldest: kept");
  assert.ok(!outages.includes("sim0/dev0"), "the least recently updated went");
  assert.ok(outages.includes(`sim0/dev${MAX_CALL_RECORDS - 1}`));
  assert.deepEqual(
    [s.refused_calls[0]!.device_handle, s.refused_calls.at(-1)!.device_handle],
    ["bad1", `bad${MAX_CALL_RECORDS}`],
  );
  engine.stop();
});

/** A tree reading sim1/dev0 and sim1/dev1 (the MAX_OUTAGE_DATES tests: it dates their outages). */
const NAMES_SIM1_DEV0_DEV1 = xmlRoot(
  `<BehaviorTree ID="Main"><Sequence>
      <ReadSignal device_handle="sim1/dev0" signal_id="s" value="{a}"/>
      <ReadSignal device_handle="sim1/dev1" signal_id="s" value="{b}"/>
    </Sequence></BehaviorTree>`,
  "Main",
);

/**
 * The MAX_OUTAGE_DATES tests' engine: NAMES_MOTOR from an editable file, MANUAL, on a manual clock
 * with fake outages; `dated()` dates an outage now, `since(handle)` reads its date from status.
 */
async function outageDatesRig() {
  const outages = new FakeOutages();
  const clock = new ManualClock();
  const files: Record<string, string> = { [TREE]: xmlRoot(NAMES_MOTOR, "Main") };
  const { engine, modes } = setup(NAMES_MOTOR, { outages, clock, readFile: editable(files) });
  await started({ engine, modes }, "MANUAL");
  const t0 = clock.wall;
  const dated = () => ({ sinceMono: clock.mono, atWallMs: clock.wall });
  const since = (handle: string) =>
    engine.status().blocked_devices.find((b) => b.device_handle === handle)?.since_epoch_ms;
  return { outages, clock, files, engine, t0, dated, since };
}

Deno.test("AutomationEngine keeps the outage date of a device the tree names when MAX_OUTAGE_DATES are kept: a device the tree does not name is let go first", async () => {
  const { outages, clock, files, engine, t0, dated, since } = await outageDatesRig();
  // The device the tree names starts failing first (its date the oldest kept), then
  // MAX_OUTAGE_DATES devices no tree names go down, one a millisecond.
  outages.set("sim0/motorctl0", "failing", dated());
  for (let i = 0; i < MAX_OUTAGE_DATES; i++) {
    clock.advance(1);
    outages.set(`sim1/dev${i}`, "down", dated());
  }
  // NTP steps the wall clock back an hour before anyone reads status: a date let go would be
  // counted back from the stepped clock.
  clock.wall -= 3_600_000;
  assert.equal(since("sim0/motorctl0"), t0, "the named device's date was kept");
  // The bound held: the oldest date of a device the tree does not name went instead (a reload's
  // tree naming it dates it from the read), the next one is kept.
  files[TREE] = NAMES_SIM1_DEV0_DEV1;
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.equal(since("sim1/dev0"), t0 + 1 - 3_600_000, "let go: counted back from the read");
  assert.equal(since("sim1/dev1"), t0 + 2, "kept");
  // Dating sim1/dev0 at that read added one to MAX_OUTAGE_DATES kept: one went for it, the oldest
  // of a device the tree no longer names (sim0/motorctl0), as when an outage is told.
  files[TREE] = xmlRoot(NAMES_MOTOR, "Main");
  assert.equal(await engine.reloadTree(TREE, 11), "replaced");
  assert.equal(since("sim0/motorctl0"), t0 - 3_600_000, "let go for the date a read added");
  engine.stop();
});

Deno.test("AutomationEngine lets go the outage date written longest ago when MAX_OUTAGE_DATES are kept, not that of an outage re-dated since", async () => {
  const { outages, clock, files, engine, t0, dated, since } = await outageDatesRig();
  // MAX_OUTAGE_DATES devices no tree names start failing, one a millisecond: sim1/dev0 first.
  for (let i = 0; i < MAX_OUTAGE_DATES; i++) {
    clock.advance(1);
    outages.set(`sim1/dev${i}`, "failing", dated());
  }
  // sim1/dev0 goes down later: its outage is dated anew, the latest date kept.
  clock.advance(1);
  outages.set("sim1/dev0", "down", dated());
  const renewed = clock.wall;
  // One more outage: the bound lets the date written longest ago go (sim1/dev1's).
  clock.advance(1);
  outages.set(`sim1/dev${MAX_OUTAGE_DATES}`, "down", dated());
  clock.wall -= 3_600_000; // NTP steps the wall clock back: a date let go is counted from it
  files[TREE] = NAMES_SIM1_DEV0_DEV1;
  assert.equal(await engine.reloadTree(TREE, 10), "replaced");
  assert.equal(since("sim1/dev0"), renewed, "re-dated late: kept");
  assert.equal(since("sim1/dev1"), t0 + 2 - 3_600_000, "written longest ago: let go");
  engine.stop();
});

Deno.test("AutomationEngine's AUTO gate judges only the trees the main tree reaches: an unused library tree naming a missing device or an undeclared function does not refuse AUTO", async () => {
  const inventory = motorctlInventory([setMotorDuty()]);
  const LIB = `<BehaviorTree ID="Lib"><Sequence>` +
    `<ReadSignal device_handle="sim9/gone0" signal_id="x" value="{x}"/>` +
    `<CallDevice device_handle="sim0/motorctl0" function_name="no_such_function"/>` +
    `</Sequence></BehaviorTree>`;
  const problemOf = async (main: string): Promise<string | null> => {
    const { engine } = setup(`${main}${LIB}`, { inventory });
    try {
      await engine.load();
      return engine.autoProblem();
    } finally {
      engine.stop();
    }
  };
  const CALL = `<CallDevice device_handle="sim0/motorctl0" function_name="set_motor_duty"/>`;
  assert.equal(
    await problemOf(`<BehaviorTree ID="Main">${CALL}</BehaviorTree>`),
    null,
    "the library tree nobody instantiates names nothing",
  );
  assert.match(
    await problemOf(
      `<BehaviorTree ID="Main"><Sequence>${CALL}<SubTree ID="Lib"/></Sequence></BehaviorTree>`,
    ) ?? "(no problem: AUTO admitted)",
    /^refusing AUTO: /,
    "the same tree reached through SubTree still refuses",
  );
});

Deno.test("AutomationEngine: a CallDevice whose device_handle entry holds '' is listed in refused_calls under its port as written, never under an empty device_handle", async () => {
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><Sequence>` +
      `<Script code="dev := ''"/>` +
      `<CallDevice device_handle="{dev}" function_name="set_relay"/>` +
      `</Sequence></BehaviorTree>`,
  );
  await started({ engine, modes }, "AUTO");
  const runner = engine.runner!;
  // Each refusal: RUNNING on its tick, FAILURE on the next once the refused call settled.
  for (let refusals = 0; refusals < 2;) {
    if (runner.tickOnce() === "FAILURE") refusals++;
    await Promise.resolve();
  }
  const refused = engine.status().refused_calls;
  assert.deepEqual(
    refused.map((r) => [r.device_handle, r.consecutive_refusals, r.refused_by]),
    [["{dev}", 2, "validation"]],
    "the refusal is listed under the port as written",
  );
  assert.match(
    refused[0]!.last_refusal,
    /device_handle must be 'provider\/device', got "" from "{dev}"/,
  );
  engine.stop();
});

Deno.test("AutomationEngine logs the tree's verify warnings when it loads a tree, not again at a reload that keeps it", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const pulse = (interval: number) =>
    xmlRoot(
      `<BehaviorTree ID="Main"><PeriodicPulseWindow interval_s="${interval}" now_ms="{t}"/>` +
        `</BehaviorTree>`,
      "Main",
    );
  const files: Record<string, string> = { [TREE]: pulse(60) };
  const { engine, modes } = setup(SLEEP, { log, readFile: editable(files) });
  const warnings = () => lines.filter((l) => /^WARN\b.*now_ms/.test(l));
  await started({ engine, modes }, "MANUAL");
  assert.equal(warnings().length, 1, `the load warns once:\n${lines.join("\n")}`);
  assert.equal(await engine.reloadTree(TREE, 10), "unchanged");
  assert.equal(await engine.reloadTree(TREE, 20), "retimed");
  assert.equal(warnings().length, 1, `the same tree is not warned of again:\n${lines.join("\n")}`);
  files[TREE] = pulse(30);
  assert.equal(await engine.reloadTree(TREE, 20), "replaced");
  assert.equal(warnings().length, 2, `an edited tree is warned of:\n${lines.join("\n")}`);
  engine.stop();
});

/** A configured provider id of 10 kB, and as a message names it (namedProviderId). */
const LONG_PROVIDER = `p${"q".repeat(10_000)}`;
const LONG_PROVIDER_NAMED = `${LONG_PROVIDER.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`;

Deno.test("AutomationEngine names the tree's devices of a provider id of 10 kB cut, up to MAX_NAMED_IN_WARNING, in AUTO's refusal and why_not_running", async () => {
  const n = MAX_NAMED_IN_WARNING + 5;
  const reads = Array.from(
    { length: n },
    (_, i) => `<ReadSignal device_handle="${LONG_PROVIDER}/d${i}" signal_id="s" value="{v${i}}"/>`,
  ).join("");
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><Sequence>${reads}</Sequence></BehaviorTree>`,
    {
      inventory: {
        providerAvailable: () => false,
        devicesOf: () => [],
        capabilities: () => undefined,
      },
    },
  );
  await started({ engine, modes });
  const first = `${LONG_PROVIDER_NAMED}/d0 (provider ${LONG_PROVIDER_NAMED} is UNAVAILABLE)`;
  const refusal = engine.autoProblem() ?? "";
  assert.ok(
    refusal.startsWith(`refusing AUTO: the behavior tree names ${first}, `),
    refusal.slice(0, 400),
  );
  assert.ok(refusal.endsWith(" and 5 more"), refusal.slice(-200));
  const why = engine.status().why_not_running ?? "";
  assert.ok(
    why.includes(
      `; AUTO is refused while ${LONG_PROVIDER_NAMED}/d0 is down (provider ${LONG_PROVIDER_NAMED} is UNAVAILABLE), `,
    ),
    why.slice(0, 600),
  );
  assert.ok(why.endsWith(" and 5 more"), why.slice(-200));
  for (const text of [refusal, why]) {
    assert.equal(text.includes(LONG_PROVIDER.slice(0, QUOTED_PROVIDER_ID_CHARS + 1)), false);
  }
  // The fields keep the handles whole.
  assert.equal(engine.status().blocked_devices[0]!.device_handle, `${LONG_PROVIDER}/d0`);
  engine.stop();
});

Deno.test("AutomationEngine's device-loss latch names a lost device of a provider id of 10 kB cut: the FAULT it forces, its refusal of a call, why_not_running", async () => {
  const outages = new FakeOutages();
  const gates: Array<(ctx: GateContext) => unknown> = [];
  const { engine, modes } = setup(
    `<BehaviorTree ID="Main"><ReadSignal device_handle="${LONG_PROVIDER}/motor" signal_id="s" value="{d}"/></BehaviorTree>`,
    {
      outages,
      router: {
        call: () => Promise.reject(new Error("not reached")),
        addGate: (g) => void gates.push(g),
      },
    },
  );
  await started({ engine, modes }, "AUTO");
  outages.set(`${LONG_PROVIDER}/motor`, "down");
  assert.equal(modes.current(), "FAULT");
  assert.deepEqual(modes.faults, [
    `device-loss latch: ${LONG_PROVIDER_NAMED}/motor is down (its reads fail)`,
  ]);
  const refusal = gates[0]!({
    origin: "automated",
    device: { device: { providerId: LONG_PROVIDER, deviceId: "motor" } },
    fn: { name: "set_motor_duty", actuating: true },
  } as unknown as GateContext) as Error;
  assert.ok(
    refusal.message.startsWith(
      `Device-loss latch: ${LONG_PROVIDER_NAMED}/motor was lost (its reads fail at `,
    ),
    refusal.message.slice(0, 400),
  );
  const status = engine.status();
  assert.equal(status.not_running?.cause, "device_loss_latch");
  assert.ok(
    status.why_not_running?.startsWith(
      `device-loss latch: ${LONG_PROVIDER_NAMED}/motor was lost (its reads fail); mode FAULT`,
    ),
    status.why_not_running?.slice(0, 400),
  );
  assert.deepEqual(
    status.device_loss_latched,
    [`${LONG_PROVIDER}/motor`],
    "the field keeps it whole",
  );
  engine.stop();
});
