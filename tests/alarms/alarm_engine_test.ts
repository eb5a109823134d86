/**
 * AlarmEngine over a real provider process (the programmable provider) and a real StateCache:
 * evaluation after each poll, bad inputs of every kind, actions, the interlock gate and its
 * reasons, shelve expiry. The wall clock and the shelve timers are the test's; polls happen when
 * the test asks (no poll loop).
 */
import assert from "node:assert/strict";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import {
  AlarmEngine,
  type AlarmView,
  TRANSITION_LOG_LINES,
  TRANSITION_LOG_WINDOW_MS,
} from "../../src/alarms/mod.ts";
import type {
  DeviceCapabilities,
  FunctionSpec,
  Logger,
  RuntimeError,
} from "../../src/common/mod.ts";
import { type AlarmConfig, type InterlockConfig, loadConfig } from "../../src/config/mod.ts";
import type { CallOrigin } from "../../src/control/mod.ts";
import { type DeviceCondition, Inventory as InventoryPort } from "../../src/state/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { journalFiles, LineLogger } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { waitFor } from "../helpers/kernel.ts";
import { withRealTimers } from "../helpers/clock.ts";
import { RunRegistry } from "../../src/runs/mod.ts";
import {
  dbl,
  type Inventory,
  type ProgrammableFixture,
  Q,
  type Sample,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";

const INVENTORY: Inventory = {
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE },
        { id: "mode", type: T.STRING },
        { id: "on", type: T.BOOL },
        { id: "count", type: T.INT64 },
      ],
      values: [
        dbl("temp", 25),
        { id: "mode", type: T.STRING, string: "open", quality: Q.OK },
        { id: "on", type: T.BOOL, bool: false, quality: Q.OK },
      ],
    },
    other: { signals: [{ id: "x", type: T.DOUBLE, hint: 0 }] },
    // Values an interlock cannot compare (bytes), a type the provider leaves unspecified (0),
    // and an unsigned 64-bit integer.
    blobs: {
      signals: [
        { id: "a", type: T.BYTES },
        { id: "b", type: T.BYTES },
        { id: "u", type: T.UNSPECIFIED },
        { id: "n", type: T.UINT64 },
      ],
      values: [
        { id: "a", type: T.BYTES, bytes: "AQI=", quality: Q.OK },
        { id: "b", type: T.BYTES, bytes: "AQI=", quality: Q.OK },
        { id: "u", type: T.STRING, string: "open", quality: Q.OK },
        { id: "n", type: T.UINT64, uint64: "7", quality: Q.OK },
      ],
    },
  },
};

/** Alarms and interlocks through the real loader (the shapes the runtime gets). */
function configOf(yaml: string): { alarms: AlarmConfig[]; interlocks: InterlockConfig[] } {
  const r = loadConfig(`providers: [{id: p0, command: prov}]\n${yaml}`, {
    path: "/etc/rig/runtime.yaml",
    mode: "check",
    env: {},
    fileExists: () => false,
    commandExists: () => true,
    cwd: "/",
  });
  assert.deepEqual(r.diagnostics.filter((d) => d.severity === "error"), []);
  return { alarms: [...r.config!.alarms], interlocks: [...r.config!.interlocks] };
}

/**
 * The engine's clock's timers, fired by hand: `fireDue()` fires those whose time (on the
 * fixture's monotonic clock) has come, `fireAll()` every one at once (a timer that fires early).
 */
class ManualTimers {
  readonly pending = new Map<number, { fn: () => void; ms: number; due: number }>();
  #next = 1;
  constructor(readonly monoMs: () => number) {}
  set(fn: () => void, ms: number): number {
    const h = this.#next++;
    this.pending.set(h, { fn, ms, due: this.monoMs() + ms });
    return h;
  }
  clear(handle: unknown): void {
    this.pending.delete(handle as number);
  }
  /** Due times (monotonic) of the pending timers, soonest first. */
  dueTimes(): number[] {
    return [...this.pending.values()].map((t) => t.due).sort((a, b) => a - b);
  }
  fireAll(): void {
    const due = [...this.pending.entries()];
    this.pending.clear();
    for (const [, t] of due) t.fn();
  }
  fireDue(): void {
    for (;;) {
      const now = this.monoMs();
      const next = [...this.pending.entries()].filter(([, t]) => t.due <= now)
        .sort((a, b) => a[1].due - b[1].due)[0];
      if (next === undefined) return;
      this.pending.delete(next[0]);
      next[1].fn();
    }
  }
}

interface Setup {
  fx: ProgrammableFixture;
  engine: AlarmEngine;
  bus: EventBus;
  events: RuntimeEvent[];
  actions: string[];
  lines: string[];
  timers: ManualTimers;
  /** Programs what probe's ReadSignals answers, then polls it (the engine evaluates). */
  read(values: Sample[]): Promise<void>;
  /** A configuration reload: the engine reconfigured in place. */
  reload(yaml: string): void;
  close(): Promise<void>;
}

async function setup(
  yaml: string,
  o: {
    estop?: (reason: string, cause: string) => void;
    /** While it returns true, every WARN and ERROR line the engine writes throws (a closed stderr). */
    logFails?: () => boolean;
    /** Every device's condition (state/device_outage.ts); absent: none judged. */
    condition?: () => DeviceCondition;
  } = {},
): Promise<Setup> {
  // Samples go stale 1000 ms after the runtime received them (monotonic; the test moves it).
  const fx = await startProgrammable(INVENTORY, {
    mono: 1_000,
    staleness: { warnAfterMs: 0, staleAfterMs: 1000 },
  });
  const { alarms, interlocks } = configOf(yaml);
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  const actions: string[] = [];
  const lines: string[] = [];
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => 0,
    write: (line, level) => {
      if ((level === "warn" || level === "error") && o.logFails?.() === true) {
        throw new Error("stderr is closed");
      }
      lines.push(line);
    },
  });
  const timers = new ManualTimers(() => fx.clock.monoMs());
  const inventory = new InventoryPort(fx.registry);
  const make = (c: ReturnType<typeof configOf>) =>
    new AlarmEngine({
      alarms: c.alarms,
      interlocks: c.interlocks,
      cache: fx.cache,
      inventory,
      ...(o.condition === undefined ? {} : { outages: { condition: o.condition } }),
      bus,
      clock: {
        nowMs: () => fx.clock.nowMs(),
        monoMs: () => fx.clock.monoMs(),
        setTimer: (fn, ms) => timers.set(fn, ms),
        clearTimer: (id) => timers.clear(id),
      },
      log,
      actions: {
        fault: (reason) => {
          actions.push(`fault: ${reason}`);
          return Promise.resolve();
        },
        estop: (reason, cause) => {
          o.estop?.(reason, cause);
          actions.push(`estop ${cause}: ${reason}`);
          return Promise.resolve();
        },
      },
    });
  const engine = make({ alarms, interlocks });
  await fx.cache.pollDevice("p0", "probe");
  engine.start();
  const out: Setup = {
    fx,
    engine,
    bus,
    events,
    actions,
    lines,
    timers,
    async read(values) {
      await fx.program("probe", { read: { values } });
      await fx.cache.pollDevice("p0", "probe");
    },
    reload(yaml) {
      out.engine.reconfigure(configOf(yaml));
    },
    async close() {
      out.engine.stop();
      await fx.close();
    },
  };
  return out;
}

const temp = (v: number, o: Partial<Sample> = {}) => dbl("temp", v, o);
const mode = (v: string): Sample => ({ id: "mode", type: T.STRING, string: v, quality: Q.OK });
const alarmEvents = (events: RuntimeEvent[]) =>
  events.filter((e): e is Extract<RuntimeEvent, { kind: "alarm" }> => e.kind === "alarm");
const interlockEvents = (events: RuntimeEvent[]) =>
  events.filter((e): e is Extract<RuntimeEvent, { kind: "interlock" }> => e.kind === "interlock");

Deno.test("AlarmEngine evaluates an alarm right after each poll of its device and publishes each transition once", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80, hysteresis: 5, message: Probe hot }
`);
  try {
    assert.deepEqual(s.events, [], "25 °C: nothing");
    await s.read([temp(85)]);
    assert.deepEqual(s.events, [{
      kind: "alarm",
      alarm_id: "hot",
      transition: "raise",
      state: "active",
      level: "MINOR",
      cause: "hi",
      limit: 80,
      signal: "p0/probe/temp",
      value: { type: "double", double: 85 },
      quality: "OK",
      action: "none",
      message: "Probe hot",
      shelved_until_epoch_ms: null,
      timestamp_ms: s.fx.clock.wallMs,
    }]);
    await s.fx.cache.pollDevice("p0", "probe");
    assert.equal(s.events.length, 1, "polled again, unchanged: nothing new");
    await s.read([temp(75)]);
    assert.equal(s.events.length, 1, "exactly hi - hysteresis: still active");
    await s.read([temp(74.9)]);
    assert.deepEqual(alarmEvents(s.events).map((e) => [e.transition, e.state]), [
      ["raise", "active"],
      ["clear", "normal"],
    ]);
    const view = s.engine.alarm("hot");
    assert.equal(view.state, "normal");
    assert.deepEqual(view.value, { type: "double", double: 74.9 });
    assert.deepEqual(view.transitions.map((t) => t.transition), ["raise", "clear"]);
    assert.match(
      s.lines.join("\n"),
      /WARN .*\[alarms\] alarm hot raised MINOR \(hi 80\): p0\/probe\/temp = 85 - Probe hot/,
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine treats a STALE, an old, an undeclared, an unpolled or a wrongly typed input as a bad input and says why", async () => {
  const s = await setup(`
alarms:
  - { id: stale, signal: p0/probe/temp, hi: 80 }
  - { id: missing, signal: p0/probe/nope, hi: 1 }
  - { id: unpolled, signal: p0/other/x, hi: 1 }
  - { id: wrong_type, signal: p0/probe/mode, hi: 1 }
  - { id: unknown_device, signal: p0/ghost/x, hi: 1 }
`);
  try {
    const raised = alarmEvents(s.events).map((e) => [e.alarm_id, e.transition, e.cause, e.level]);
    assert.deepEqual(raised, [
      ["missing", "raise", "bad_quality", "MAJOR"],
      ["unpolled", "raise", "bad_quality", "MAJOR"],
      ["wrong_type", "raise", "bad_quality", "MAJOR"],
      ["unknown_device", "raise", "bad_quality", "MAJOR"],
    ]);
    const why = (id: string) => s.engine.alarm(id).bad_input;
    assert.equal(why("stale"), null);
    assert.equal(why("missing"), "p0/probe/nope: device p0/probe declares no signal 'nope'");
    assert.equal(
      why("unpolled"),
      "p0/other/x: declared without a poll hint: the runtime never polls it",
    );
    assert.equal(why("wrong_type"), "p0/probe/mode is string; limits compare numbers");
    assert.equal(
      why("unknown_device"),
      "p0/ghost/x: device p0/ghost is not in the inventory of p0",
    );
    // Each is said once at start-up, as an error naming the alarm.
    const errors = s.lines.filter((l) => l.startsWith("ERROR") && l.includes("treats it as a bad"));
    assert.equal(errors.length, 4, errors.join("\n"));
    assert.ok(errors.some((l) => l.includes("alarm wrong_type: p0/probe/mode is declared string")));

    // A sample the runtime received longer ago than the staleness bound (1000 ms here) is stale
    // whatever its quality says; nothing polls meanwhile: the engine's timer decides it on time.
    await s.read([temp(25)]);
    s.fx.clock.mono = s.fx.clock.monoMs() + 1000;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("stale").state, "normal", "exactly at the bound: fresh");
    s.fx.clock.mono = s.fx.clock.monoMs() + 1;
    s.timers.fireDue();
    assert.deepEqual(
      alarmEvents(s.events).filter((e) => e.alarm_id === "stale").map((e) => e.transition),
      ["raise"],
    );
    assert.equal(
      why("stale"),
      "p0/probe/temp is stale: its sample is 1001 ms old (stale after 1000 ms)",
    );
    await s.read([temp(25)]);
    assert.equal(s.engine.alarm("stale").state, "normal", "fresh again: cleared");
    // The provider's timestamp is reported, never trusted for age: an hour ahead or behind
    // changes nothing.
    await s.read([temp(25, { ts: s.fx.clock.wallMs + 3_600_000 })]);
    s.fx.clock.mono = s.fx.clock.monoMs() + 1001;
    s.timers.fireDue();
    assert.equal(
      s.engine.alarm("stale").state,
      "active",
      "stamped an hour ahead: stale all the same",
    );
    await s.read([temp(25, { ts: s.fx.clock.wallMs - 3_600_000 })]);
    assert.equal(s.engine.alarm("stale").state, "normal", "stamped an hour behind: fresh");
    await s.read([temp(25, { quality: Q.STALE })]);
    assert.equal(s.engine.alarm("stale").state, "active");
    assert.equal(s.engine.alarm("stale").quality, "STALE");
    assert.equal(why("stale"), "p0/probe/temp is STALE");
    await s.read([temp(25, { quality: Q.FAULT })]);
    assert.equal(why("stale"), "p0/probe/temp is FAULT");
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's bad_input of a signal the inventory cannot serve says why, as its ERROR line, not the type it is declared", async () => {
  // p0/other/x is declared a double without a poll hint: never polled, never a sample; that, not
  // its type, is what the rebinding's ERROR line says, and what bad_input says too.
  const s = await setup(`
alarms:
  - { id: unpolled_when, signal: p0/other/x, alarm_when: true }
`);
  try {
    const why = "p0/other/x: declared without a poll hint: the runtime never polls it";
    assert.equal(s.engine.alarm("unpolled_when").bad_input, why);
    assert.deepEqual(
      s.lines.filter((l) => l.startsWith("ERROR") && l.includes("treats it as a bad input")).map((
        l,
      ) => l.slice(l.indexOf("alarm unpolled_when"))),
      [
        "alarm unpolled_when: p0/other/x: declared without a poll hint: the runtime never polls " +
        "it; the alarm treats it as a bad input",
      ],
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine runs an alarm's estop action when its logger throws on the raise's line and on the ERROR line saying so", async () => {
  let logFails = false;
  const s = await setup(
    `
alarms:
  - { id: stop, signal: p0/probe/temp, hihi: 80, action: estop }
  - { id: flt, signal: p0/probe/temp, hi: 90, action: fault }
`,
    { logFails: () => logFails },
  );
  try {
    logFails = true; // a closed stderr: the raise's ERROR line, and the line about it, throw
    await s.read([temp(95)]);
    logFails = false;
    assert.deepEqual(s.actions, [
      "estop alarm:stop: alarm stop raised MAJOR (hihi 80): p0/probe/temp = 95",
      "fault: alarm flt raised MINOR (hi 90): p0/probe/temp = 95",
    ], "a logger that fails keeps no alarm action from running");
    assert.deepEqual(
      alarmEvents(s.events).map((e) => [e.alarm_id, e.transition]),
      [["stop", "raise"], ["flt", "raise"]],
      "each raise is published although its line could not be written",
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine runs estop (cause alarm:<id>) and fault actions inside the poll that raised them; a throwing action stops nothing else", async () => {
  let latchedDuringPoll = false;
  const s = await setup(
    `
alarms:
  - { id: stop, signal: p0/probe/temp, hi: 80, action: estop }
  - { id: flt, signal: p0/probe/temp, hi: 90, action: fault }
  - { id: note, signal: p0/probe/temp, hi: 70 }
`,
    {
      estop: () => {
        latchedDuringPoll = true;
        throw new Error("e-stop service exploded");
      },
    },
  );
  try {
    const polled = s.read([temp(95)]);
    await polled;
    assert.equal(latchedDuringPoll, true);
    assert.deepEqual(s.actions, [
      "fault: alarm flt raised MINOR (hi 90): p0/probe/temp = 95",
    ], "the throwing estop action did not keep the fault action from running");
    assert.deepEqual(alarmEvents(s.events).map((e) => e.alarm_id), ["stop", "flt", "note"]);
    assert.ok(
      s.lines.some((l) =>
        l.startsWith("ERROR") &&
        l.includes("alarm stop: action estop failed: e-stop service exploded")
      ),
    );
    await s.read([temp(96)]);
    assert.equal(s.actions.length, 1, "no new raise, no new action");
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's estop action names the alarm as the cause", async () => {
  const s = await setup(`
alarms:
  - { id: tc_over, signal: p0/probe/temp, hihi: 60, action: estop, message: Too hot }
`);
  try {
    await s.read([temp(61.5)]);
    assert.deepEqual(s.actions, [
      "estop alarm:tc_over: alarm tc_over raised MAJOR (hihi 60): p0/probe/temp = 61.5 - Too hot",
    ]);
    await s.read([temp(20)]);
    await s.read([temp(20, { quality: Q.STALE })]);
    assert.deepEqual(s.actions.slice(1), [
      "estop alarm:tc_over: alarm tc_over raised MAJOR (bad input): p0/probe/temp is STALE - Too hot",
    ]);
  } finally {
    await s.close();
  }
});

function fn(name: string, actuating: boolean): FunctionSpec {
  return {
    functionId: 1,
    name,
    description: "",
    category: actuating ? "ACTUATE" : "READ",
    actuating,
    args: [],
  };
}

function device(providerId: string, deviceId: string): DeviceCapabilities {
  return deviceCapabilities(providerId, deviceId);
}

function gate(
  s: Setup,
  handle: string,
  f: FunctionSpec,
  origin: CallOrigin = "manual",
): RuntimeError | null {
  const [p, d] = handle.split("/");
  return s.engine.gate({ fn: f, device: device(p!, d!), origin });
}

const on = (v: boolean): Sample => ({ id: "on", type: T.BOOL, bool: v, quality: Q.OK });
const count = (v: string): Sample => ({ id: "count", type: T.INT64, int64: v, quality: Q.OK });

/** Whether the engine refuses the actuating function `name` of p0/probe. */
const blocks = (s: Setup, name: string) => gate(s, "p0/probe", fn(name, true)) !== null;

/** Which of the actuating functions `names` of p0/probe the engine refuses, in order. */
const blocking = (s: Setup, ...names: string[]) => names.map((name) => blocks(s, name));

/** The probe's reads answer temp 20 and count `v` (a 64-bit integer), then it is polled. */
const readCount = (s: Setup, v: string) => s.read([temp(20), count(v)]);

/** The engine's refusal of the actuating function `name` of p0/probe, or "allowed". */
const gateMessage = (s: Setup, name: string) =>
  gate(s, "p0/probe", fn(name, true))?.message ?? "allowed";

/**
 * The interlocks section of one interlock per entry of `conditions`: id `${prefix}${name}`,
 * blocking the function `name` of p0/probe while its condition holds, message m.
 */
function probeInterlocks(conditions: Record<string, string>, prefix = ""): string {
  return "interlocks:\n" +
    Object.entries(conditions).map(([name, cond]) =>
      `  - { id: ${prefix}${name}, block: [p0/probe/${name}], while: "${cond}", message: m }\n`
    ).join("");
}

/** An interlock `hot` blocking p0/probe/a while temp is over 80. */
const HOT_INTERLOCK = `
interlocks:
  - { id: hot, block: [p0/probe/a], while: "p0/probe/temp > 80", message: m }
`;

Deno.test("AlarmEngine's gate refuses blocked functions while the condition holds, for every origin but safety", async () => {
  const s = await setup(`
interlocks:
  - id: il
    block: [p0/probe/program, p0/other/*]
    while: p0/probe/temp > 80 and p0/probe/mode == 'open'
    message: Probe hot
`);
  try {
    const program = fn("program", false);
    assert.equal(gate(s, "p0/probe", program), null);
    assert.deepEqual(interlockEvents(s.events), [], "starting released is no transition");
    await s.read([temp(85), mode("open")]);
    assert.deepEqual(interlockEvents(s.events), [{
      kind: "interlock",
      interlock_id: "il",
      blocking: true,
      reason: 'p0/probe/temp = 85, p0/probe/mode = "open"',
      message: "Probe hot",
      block: ["p0/probe/program", "p0/other/*"],
      timestamp_ms: s.fx.clock.wallMs,
    }]);
    for (const origin of ["manual", "automated", "hook"] as const) {
      const refused = gate(s, "p0/probe", program, origin);
      assert.equal(refused?.code, "FAILED_PRECONDITION", origin);
      assert.equal(
        refused?.message,
        'Interlock il blocks p0/probe program: Probe hot (p0/probe/temp = 85, p0/probe/mode = "open")',
      );
      assert.deepEqual(refused?.details, { interlock_id: "il" });
    }
    assert.equal(gate(s, "p0/probe", program, "safety"), null, "stop actions are never refused");
    assert.equal(gate(s, "p0/probe", fn("stats", false)), null, "not in the block list");
    assert.equal(gate(s, "p0/other", fn("set", true))?.code, "FAILED_PRECONDITION", "* blocks it");
    assert.equal(gate(s, "p0/other", fn("read", false)), null, "* means actuating functions only");
    assert.equal(gate(s, "p0/probe2", program), null);

    await s.read([temp(85), mode("closed")]);
    assert.equal(gate(s, "p0/probe", program), null);
    assert.deepEqual(interlockEvents(s.events).map((e) => [e.blocking, e.reason]), [
      [true, 'p0/probe/temp = 85, p0/probe/mode = "open"'],
      [false, null],
    ]);
    const [view] = s.engine.interlocks();
    assert.deepEqual(view, {
      id: "il",
      message: "Probe hot",
      condition: "p0/probe/temp > 80 and p0/probe/mode == 'open'",
      block: ["p0/probe/program", "p0/other/*"],
      blocking: false,
      reason: null,
      since_epoch_ms: s.fx.clock.wallMs,
      inputs: [
        {
          signal: "p0/probe/temp",
          value: { type: "double", double: 85 },
          quality: "OK",
          bad_input: null,
        },
        {
          signal: "p0/probe/mode",
          value: { type: "string", string: "closed" },
          quality: "OK",
          bad_input: null,
        },
      ],
      // other has no actuating function: the `*` entry matches nothing and blocks nothing.
      unresolved_block: ["p0/other/*"],
    });
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's interlocks block on a bad input they compare and on a type mismatch; bad() is their own", async () => {
  const s = await setup(`
interlocks:
  - { id: hot, block: [p0/probe/a], while: "p0/probe/temp > 80", message: m }
  - { id: typed, block: [p0/probe/b], while: "p0/probe/mode > 3", message: m }
  - { id: dead, block: [p0/probe/c], while: "bad(p0/probe/temp)", message: m }
  - { id: guarded, block: [p0/probe/d], while: "not bad(p0/probe/temp) and p0/probe/on == true", message: m }
`);
  try {
    const refused = (letter: string) => gate(s, "p0/probe", fn(letter, true))?.message ?? null;
    assert.equal(refused("a"), null);
    assert.equal(
      refused("b"),
      "Interlock typed blocks p0/probe b: m (type mismatch: column 15 of the condition: '>' " +
        "cannot compare p0/probe/mode (string) with 3)",
    );
    assert.ok(
      s.lines.some((l) =>
        l.startsWith("ERROR") &&
        l.includes("interlock typed: column 15 of the condition: '>' cannot compare p0/probe/mode")
      ),
      "the declared type already told at start-up",
    );
    assert.equal(refused("c"), null);
    assert.equal(refused("d"), null);

    await s.read([temp(25, { quality: Q.STALE })]);
    assert.equal(
      refused("a"),
      "Interlock hot blocks p0/probe a: m (bad input: p0/probe/temp is STALE)",
    );
    assert.equal(refused("c"), "Interlock dead blocks p0/probe c: m (p0/probe/temp is STALE)");
    assert.equal(refused("d"), null, "temp only inside bad(): its quality is the condition's");

    await s.read([temp(25), on(true)]);
    assert.equal(refused("a"), null);
    assert.equal(refused("c"), null);
    assert.match(
      refused("d") ?? "",
      /^Interlock guarded blocks p0\/probe d: m \(p0\/probe\/temp = 25, p0\/probe\/on = true\)$/,
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine ack, shelve and unshelve publish their transitions; a shelve ends when its timer runs out", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
  - { id: stop, signal: p0/probe/temp, hi: 200, action: estop }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    assert.equal(s.engine.ack("hot").state, "active_acked");
    assert.equal(s.engine.ack("hot").state, "active_acked", "again: no new transition");
    const shelved = s.engine.shelve("hot", 60_000);
    assert.equal(shelved.state, "shelved");
    assert.equal(shelved.shelved_until_epoch_ms, s.fx.clock.wallMs + 60_000);
    assert.ok(s.timers.dueTimes().includes(1_000 + 60_000), "the shelve's timer");
    assert.throws(() => s.engine.shelve("stop", 1000), /cannot be shelved/);
    assert.throws(() => s.engine.ack("nope"), /^RuntimeError: Alarm not found: nope$/);

    await s.read([temp(70)]);
    await s.read([temp(90)]);
    assert.deepEqual(
      alarmEvents(s.events).map((e) => e.transition),
      ["raise", "ack", "shelve"],
      "raise and clear while shelved are not published",
    );
    s.fx.clock.mono = 1_000 + 59_999;
    s.timers.fireAll(); // early: re-armed for what is left
    assert.ok(s.timers.dueTimes().includes(1_000 + 60_000), "re-armed for the 1 ms left");
    assert.equal(s.engine.alarm("hot").state, "shelved");
    s.fx.clock.mono = 1_000 + 60_000;
    s.timers.fireDue();
    const last = alarmEvents(s.events).at(-1)!;
    assert.deepEqual([last.transition, last.state, last.shelved_until_epoch_ms], [
      "unshelve",
      "active",
      null,
    ]);
    const shelveAt = (t0: number) => s.timers.dueTimes().includes(t0 + 5_000);
    assert.ok(!s.timers.dueTimes().includes(1_000 + 60_000), "the shelve's timer is gone");

    let t0 = s.fx.clock.monoMs();
    s.engine.shelve("hot", 5_000);
    assert.ok(shelveAt(t0));
    assert.equal(s.engine.unshelve("hot").state, "active");
    assert.ok(!shelveAt(t0), "unshelving clears its timer");
    t0 = s.fx.clock.monoMs();
    s.engine.shelve("hot", 5_000);
    s.fx.clock.mono += 5_000;
    assert.equal(s.engine.alarms()[0]!.state, "active", "a read never shows an expired shelve");
    assert.ok(!shelveAt(t0), "expiring it on a read clears its timer");
    s.engine.shelve("hot", 5_000);
  } finally {
    await s.close();
    assert.equal(s.timers.pending.size, 0, "stop() clears the shelve and wake-up timers");
  }
});

Deno.test("AlarmEngine: an unshelve that arrives as the shelve runs out (its timer not yet fired) is answered, with the expiry's one unshelve", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    s.engine.shelve("hot", 5_000);
    s.fx.clock.mono += 5_000; // run out; the timer has not fired yet
    assert.equal(s.engine.unshelve("hot").state, "active");
    assert.deepEqual(
      alarmEvents(s.events).map((e) => e.transition),
      ["raise", "shelve", "unshelve"],
      "one unshelve: the expiry's",
    );
    // Not shelved at all: still refused.
    assert.throws(() => s.engine.unshelve("hot"), /is not shelved/);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine: a shelve that arrives after the last one ran out (its timer not yet fired) publishes that one's unshelve first", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    s.engine.shelve("hot", 5_000);
    s.fx.clock.mono += 5_000; // run out; the timer has not fired yet
    assert.equal(s.engine.shelve("hot", 5_000).state, "shelved");
    assert.deepEqual(
      alarmEvents(s.events).map((e) => [e.transition, e.state]),
      [["raise", "active"], ["shelve", "shelved"], ["unshelve", "active"], [
        "shelve",
        "shelved",
      ]],
      "the first shelve ends where it ran out, as a read would have shown it",
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine: a raise and clear while shelved are no run events (shelving publishes neither, docs/alarms.md); the run has the shelve with its end and the unshelve with the state then", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
`);
  const dir = await Deno.makeTempDir({ prefix: "alarm_shelve_run_" });
  const runs = new RunRegistry({
    dataDir: dir,
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files: journalFiles,
    clock: withRealTimers(s.fx.clock),
    logger: runsLogger,
  });
  try {
    await runs.start();
    runs.attach(s.bus);
    const { run } = await runs.open({});
    s.fx.clock.mono = 1_000;
    await s.read([temp(70)]);
    const shelved = s.engine.shelve("hot", 60_000);
    await s.read([temp(85)]); // raises while shelved
    await s.read([temp(70)]); // clears while shelved
    await s.read([temp(90)]); // raises again
    s.engine.unshelve("hot");
    const events = (await runs.listEvents(run.run_id, {})).events.filter((e) =>
      e.category === "alarm"
    );
    assert.deepEqual(
      events.map((
        e,
      ) => [e.type, e.payload.state, e.payload.level, e.payload.shelved_until_epoch_ms]),
      [
        ["shelve", "shelved", null, shelved.shelved_until_epoch_ms],
        ["unshelve", "active", "MINOR", null],
      ],
    );
  } finally {
    await runs.shutdown();
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});

const runsLogger: Logger = {
  debug() {},
  info() {},
  warn() {},
  error() {},
  child: () => runsLogger,
};

Deno.test("AlarmEngine after a reload carries on with each alarm the reload kept: no new raise or action, ack and shelve kept; a changed one starts over", async () => {
  const yaml = (hotHi: number, message = "too hot") => `
alarms:
  - { id: trip, signal: p0/probe/temp, hihi: 100, action: fault }
  - { id: hot, signal: p0/probe/temp, hi: ${hotHi}, message: ${message} }
  - { id: warm, signal: p0/probe/temp, hi: 50 }
`;
  const s = await setup(yaml(80));
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(120)]);
    assert.equal(s.actions.length, 1, "trip's fault action ran once");
    s.engine.ack("trip");
    s.engine.shelve("warm", 60_000);
    const before = s.engine.alarms();
    const n = alarmEvents(s.events).length;

    // A reload that keeps every alarm as it was (hot's message changed, and it moved).
    s.reload(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80, message: much too hot }
  - { id: trip, signal: p0/probe/temp, hihi: 100, action: fault }
  - { id: warm, signal: p0/probe/temp, hi: 50 }
`);
    await s.read([temp(120)]);
    assert.equal(s.actions.length, 1, "no second fault from the reload");
    assert.deepEqual(alarmEvents(s.events).slice(n), [], "nothing raised again");
    const after = s.engine.alarms();
    const byId = (v: typeof before) => Object.fromEntries(v.map((a) => [a.id, a]));
    for (const id of ["trip", "warm", "hot"]) {
      const { message: _m, ...was } = byId(before)[id]!;
      const { message: _n, ...now } = byId(after)[id]!;
      assert.deepEqual(now, was, id);
    }
    assert.equal(byId(after).hot!.message, "much too hot", "the new text is shown");
    assert.equal(byId(after).trip!.state, "active_acked");
    assert.equal(byId(after).warm!.state, "shelved");
    // The carried shelve runs out on the new engine's timer.
    assert.ok(s.timers.dueTimes().includes(1_000 + 60_000));
    s.fx.clock.mono = 1_000 + 60_000;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("warm").state, "active");

    // A changed limit is a new alarm: the old one clears, the new one starts over and raises on
    // the next poll.
    const m = alarmEvents(s.events).length;
    s.reload(yaml(90));
    await s.read([temp(120)]);
    assert.deepEqual(
      alarmEvents(s.events).slice(m).map((e) => [e.alarm_id, e.transition]),
      [["hot", "clear"], ["hot", "raise"]],
    );
    assert.equal(s.actions.length, 1);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine clears a raised alarm a reload removes or changes, so events, rows and run records end where the alarm view does", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
  - { id: gone, signal: p0/probe/temp, hi: 50 }
  - { id: kept, signal: p0/probe/temp, hi: 60 }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    assert.deepEqual(
      alarmEvents(s.events).map((e) => [e.alarm_id, e.transition, e.state]),
      [["hot", "raise", "active"], ["gone", "raise", "active"], ["kept", "raise", "active"]],
    );
    const n = alarmEvents(s.events).length;
    // hot's limit moves above the value (it starts from normal, and stays so); gone is removed.
    s.reload(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 90 }
  - { id: kept, signal: p0/probe/temp, hi: 60 }
`);
    await s.read([temp(85)]);
    assert.equal(s.engine.alarm("hot").state, "normal");
    assert.deepEqual(
      alarmEvents(s.events).slice(n).map((e) => [e.alarm_id, e.transition, e.state, e.level]),
      [["hot", "clear", "normal", null], ["gone", "clear", "normal", null]],
      "the last event of each alarm says what the alarm view says",
    );
    assert.ok(
      s.lines.some((l) => l.includes("alarm gone cleared: removed or changed by a reload")),
      s.lines.join("\n"),
    );
  } finally {
    await s.close();
  }
});

/**
 * V8's tiers, each alone (a child process per tier): what one compiled the engine into is what
 * production may run at any poll (the tier it reached, or one it fell back to on a deopt).
 */
const TIERS = [
  { tier: "interpreter", flags: "--no-opt,--no-maglev,--no-sparkplug", optimizing: false },
  { tier: "Sparkplug", flags: "--no-opt,--no-maglev,--always-sparkplug", optimizing: false },
  { tier: "Maglev", flags: "--no-opt", optimizing: true },
  { tier: "TurboFan", flags: "--no-maglev", optimizing: true },
] as const;
/** A HeapNumber (Deno's V8 compresses no pointers): a double boxed by unoptimized code. */
const HEAP_NUMBER_BYTES = 16;

Deno.test("AlarmEngine evaluation allocates nothing when nothing changes (100 alarms, 20 interlocks), in every V8 tier", async () => {
  const script = new URL("./_evaluation_heap.ts", import.meta.url).pathname;
  const found: string[] = [];
  for (const { tier, flags, optimizing } of TIERS) {
    const out = await new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "-A",
        `--v8-flags=--expose-gc,--min-semi-space-size=64,${flags}`,
        script,
        optimizing ? "heap-and-objects" : "objects-only",
      ],
      stdout: "piped",
      stderr: "piped",
    }).output();
    const stderr = new TextDecoder().decode(out.stderr);
    assert.equal(out.code, 0, `${tier}: the probe failed: ${stderr}`);
    const r = JSON.parse(new TextDecoder().decode(out.stdout).trim().split("\n").at(-1)!) as {
      bytesPerEvaluation: number[];
      objects: Record<string, number>;
      profiledRounds: number;
    };
    // Unoptimized code boxes each double it reads or computes (times, limits, values): V8's,
    // not an object the code makes. Every other object is one: a context of a function holding
    // closures, a closure, an iterator, an array, a rest argument, a string, a returned object.
    const made = Object.entries(r.objects).filter(([size]) => Number(size) !== HEAP_NUMBER_BYTES);
    if (made.length > 0) {
      found.push(
        `${tier}: ${
          made.map(([size, n]) => `${n / r.profiledRounds} object(s) of ${size} B`).join(", ")
        } per evaluation`,
      );
    }
    // Optimized code keeps doubles unboxed: nothing at all. The median of three passes (one
    // can see V8 install code compiled in the background); a HeapNumber per evaluation is 16.
    const median = [...r.bytesPerEvaluation].sort((a, b) => a - b)[1]!;
    if (optimizing && median >= 4) {
      found.push(`${tier}: the heap grew ${r.bytesPerEvaluation.join(", ")} B per evaluation`);
    }
  }
  assert.deepEqual(found, []);
});

Deno.test("AlarmEngine logs at most TRANSITION_LOG_LINES transitions per alarm per window and says how many it left out; every event is published", async () => {
  const s = await setup(`
alarms:
  - { id: dither, signal: p0/probe/temp, hi: 80 }
interlocks:
  - { id: gate, block: [p0/probe/f], while: "p0/probe/temp > 80", message: m }
`);
  try {
    s.fx.clock.mono = 1_000;
    const transitions = TRANSITION_LOG_LINES + 3;
    for (let i = 0; i < transitions; i++) await s.read([temp(i % 2 === 0 ? 85 : 75)]);
    assert.equal(alarmEvents(s.events).length, transitions);
    assert.equal(interlockEvents(s.events).length, transitions);
    const lines = (what: RegExp) => s.lines.filter((l) => what.test(l));
    assert.equal(lines(/alarm dither (raised|cleared)/).length, TRANSITION_LOG_LINES);
    assert.equal(lines(/interlock gate (engaged|released)/).length, TRANSITION_LOG_LINES);
    s.fx.clock.mono += TRANSITION_LOG_WINDOW_MS;
    await s.read([temp(transitions % 2 === 0 ? 85 : 75)]);
    assert.match(
      lines(/alarm dither/).at(-1)!,
      / \(3 transition lines suppressed before this one\)$/,
    );
    assert.match(
      lines(/interlock gate/).at(-1)!,
      /^WARN .*interlock gate engaged: .* \(3 transition lines suppressed before this one\)$/,
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine limits the log lines of a flapping bad input like any other transition: its raises are no last lines", async () => {
  const s = await setup(`
alarms:
  - { id: flaky, signal: p0/probe/temp, hi: 80 }
`);
  try {
    s.fx.clock.mono = 1_000;
    // A sensor whose quality flaps every poll: raised on the bad input, cleared when it is good.
    const transitions = TRANSITION_LOG_LINES + 6;
    for (let i = 0; i < transitions; i++) {
      await s.read([temp(25, i % 2 === 0 ? { quality: Q.FAULT } : {})]);
    }
    assert.equal(alarmEvents(s.events).length, transitions, "every transition is published");
    const lines = s.lines.filter((l) => /alarm flaky (raised|cleared)/.test(l));
    assert.equal(
      lines.length,
      TRANSITION_LOG_LINES,
      `transition lines within one window:\n${lines.join("\n")}`,
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine keeps an unchanged alarm's transition log limit across a reload: a reload does not start a new window", async () => {
  const yaml = `
alarms:
  - { id: dither, signal: p0/probe/temp, hi: 80 }
`;
  const s = await setup(yaml);
  try {
    s.fx.clock.mono = 1_000;
    const lines = () => s.lines.filter((l) => /alarm dither (raised|cleared)/.test(l));
    for (let i = 0; i < TRANSITION_LOG_LINES + 2; i++) await s.read([temp(i % 2 === 0 ? 85 : 75)]);
    assert.equal(lines().length, TRANSITION_LOG_LINES);
    // A reload that keeps the alarm as it was (as a SIGHUP for another section would), within
    // the same window: the alarm carries on, and so does its log limit.
    s.reload(yaml);
    const n = alarmEvents(s.events).length;
    for (let i = 0; i < 4; i++) {
      await s.read([temp((TRANSITION_LOG_LINES + i) % 2 === 0 ? 85 : 75)]);
    }
    assert.equal(alarmEvents(s.events).length, n + 4, "every transition is published");
    assert.equal(
      lines().length,
      TRANSITION_LOG_LINES,
      `transition lines within one window across a reload:\n${lines().join("\n")}`,
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine logs the last clear of an alarm a reload removes even past its transition log limit, with the lines it left out", async () => {
  const s = await setup(`
alarms:
  - { id: dither, signal: p0/probe/temp, hi: 80 }
`);
  try {
    s.fx.clock.mono = 1_000;
    // Raised at the end, its window's lines used up and two left out.
    for (let i = 0; i < TRANSITION_LOG_LINES + 2; i++) await s.read([temp(i % 2 === 0 ? 85 : 75)]);
    assert.equal(s.engine.alarm("dither").state, "active");
    s.reload("alarms: []");
    assert.deepEqual(alarmEvents(s.events).at(-1)?.transition, "clear");
    // Its window goes with it: this line is the last that can say what was left out.
    assert.deepEqual(s.lines.filter((l) => l.includes("removed or changed by a reload")), [
      "INFO  1970-01-01T00:00:00.000Z [alarms] alarm dither cleared: removed or changed by a " +
      "reload (2 transition lines suppressed before this one)",
    ]);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine engages an interlock on time when its input goes stale, and raises a delayed alarm on a provider gone down, with no poll after", async () => {
  const s = await setup(`
alarms:
  - { id: guard, signal: p0/probe/temp, hi: 80, delay_ms: 2000, action: estop }
interlocks:
  - { id: gate, block: [p0/probe/f], while: "p0/probe/temp > 80", message: m }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(25)]);
    assert.equal(s.engine.interlocks()[0]!.blocking, false);
    // Nothing polls: the engine's own timer finds the sample stale 1000 ms after receipt.
    s.fx.clock.mono = 2_000;
    s.timers.fireDue();
    assert.deepEqual(interlockEvents(s.events).map((e) => e.blocking), []);
    s.fx.clock.mono = 2_001;
    s.timers.fireDue();
    assert.deepEqual(interlockEvents(s.events).map((e) => [e.blocking, e.reason]), [
      [true, "bad input: p0/probe/temp is stale: its sample is 1001 ms old (stale after 1000 ms)"],
    ]);
    // The alarm's delay runs from when the input went stale (2000), not from when it was seen.
    s.fx.clock.mono = 3_999;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "normal");
    s.fx.clock.mono = 4_000;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "active");
    assert.deepEqual(s.actions, [
      "estop alarm:guard: alarm guard raised MAJOR (bad input): p0/probe/temp is stale: its sample is 3000 ms old (stale after 1000 ms)",
    ]);

    // Fresh again, then the provider goes down: the delay runs from that moment, and the
    // alarm raises on time although nothing polls a provider that is down.
    await s.read([temp(25)]); // fresh and below hi: cleared (clearing has no delay)
    assert.equal(s.engine.alarm("guard").state, "normal");
    const downAt = s.fx.clock.monoMs();
    await s.fx.host.request("call", { device_id: "probe", function_id: 3 }).catch(() => {});
    for (let i = 0; i < 200 && s.fx.host.available; i++) {
      await new Promise((r) => setTimeout(r, 10));
    }
    assert.equal(s.engine.alarm("guard").bad_input, "p0/probe/temp is UNAVAILABLE");
    s.fx.clock.mono = downAt + 1_999;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "normal");
    s.fx.clock.mono = downAt + 2_000;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "active");
    assert.equal(s.actions.length, 2);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's gate refuses a blocked function when its interlock cannot be evaluated (fails closed)", async () => {
  const s = await setup(`
interlocks:
  - id: il
    block: [p0/probe/program]
    while: p0/probe/temp > 80
    message: Probe hot
`);
  const cache = s.fx.cache;
  const device = cache.device.bind(cache);
  try {
    const program = fn("program", false);
    await s.read([temp(25)]);
    assert.equal(gate(s, "p0/probe", program), null, "released: allowed");
    // The state layer fails while the gate evaluates the interlock (the condition's inputs).
    cache.device = () => {
      throw new Error("cache unavailable");
    };
    for (const origin of ["manual", "automated", "hook"] as const) {
      const refused = gate(s, "p0/probe", program, origin);
      assert.equal(refused?.code, "FAILED_PRECONDITION", origin);
      assert.equal(
        refused?.message,
        "Interlock il could not be evaluated (cache unavailable): call p0/probe program refused",
      );
      assert.deepEqual(refused?.details, { interlock_id: "il" });
    }
    assert.equal(gate(s, "p0/probe", program, "safety"), null, "stop actions are never refused");
    assert.equal(gate(s, "p0/probe", fn("stats", false)), null, "not in the block list");
    cache.device = device;
    assert.equal(gate(s, "p0/probe", program), null, "evaluable again and released: allowed");
  } finally {
    cache.device = device;
    await s.close();
  }
});

Deno.test("AlarmEngine's interlock conditions: every comparison at and around its boundary, and, or, not, equality of each kind", async () => {
  // One interlock per function of p0/probe; [name, condition, blocks(temp, mode, on)].
  type Reading = { t: number; m: string; on: boolean };
  const table: Array<[string, string, (r: Reading) => boolean]> = [
    ["lt", "p0/probe/temp < 50", (r) => r.t < 50],
    ["le", "p0/probe/temp <= 50", (r) => r.t <= 50],
    ["gt", "p0/probe/temp > 50", (r) => r.t > 50],
    ["ge", "p0/probe/temp >= 50", (r) => r.t >= 50],
    ["eq", "p0/probe/temp == 50", (r) => r.t === 50],
    ["ne", "p0/probe/temp != 50", (r) => r.t !== 50],
    ["lit_left", "50 < p0/probe/temp", (r) => 50 < r.t],
    ["and", "p0/probe/temp > 40 and p0/probe/on == true", (r) => r.t > 40 && r.on],
    ["or", "p0/probe/temp > 60 or p0/probe/mode == 'open'", (r) => r.t > 60 || r.m === "open"],
    ["not", "not (p0/probe/temp > 40)", (r) => !(r.t > 40)],
    ["str_ne", "p0/probe/mode != 'open'", (r) => r.m !== "open"],
    ["bool_ne", "p0/probe/on != false", (r) => r.on],
    ["const_false", "false or p0/probe/temp > 60", (r) => r.t > 60],
    ["const_true", "true and p0/probe/temp > 60", (r) => r.t > 60],
  ];
  const s = await setup(
    probeInterlocks(Object.fromEntries(table.map(([name, cond]) => [name, cond])), "il_"),
  );
  try {
    const readings: Reading[] = [
      { t: 49.5, m: "open", on: false },
      { t: 50, m: "closed", on: true },
      { t: 50.5, m: "open", on: true },
      { t: 61, m: "closed", on: false },
      { t: 40, m: "closed", on: true },
    ];
    for (const r of readings) {
      await s.read([temp(r.t), mode(r.m), on(r.on)]);
      for (const [name, , expected] of table) {
        assert.equal(blocks(s, name), expected(r), `${name} at ${JSON.stringify(r)}`);
      }
    }
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's interlock conditions block on a type mismatch inside and, or and not too", async () => {
  const s = await setup(probeInterlocks({
    a: "p0/probe/on == true and p0/probe/mode > 3",
    b: "p0/probe/mode > 3 and p0/probe/on == true",
    c: "p0/probe/on == true or p0/probe/mode > 3",
    d: "p0/probe/mode > 3 or p0/probe/on == true",
    e: "not (p0/probe/mode > 3)",
    f: "p0/probe/mode == 3",
    g: "p0/probe/temp == true",
    h: "p0/probe/temp > 3 and p0/probe/temp == 'x'",
    i: "p0/probe/mode != 'y' or p0/probe/on < 1",
  }));
  try {
    await s.read([temp(20), mode("x"), on(false)]);
    const mismatch = (column: number, op: string, what: string) =>
      `(type mismatch: column ${column} of the condition: '${op}' cannot compare ${what})`;
    const mode3 = "p0/probe/mode (string) with 3";
    const expected: Record<string, string> = {
      a: mismatch(39, ">", mode3),
      b: mismatch(15, ">", mode3),
      c: mismatch(38, ">", mode3),
      d: mismatch(15, ">", mode3),
      e: mismatch(20, ">", mode3),
      f: mismatch(15, "==", mode3),
      g: mismatch(15, "==", "p0/probe/temp (double) with true"),
      // Only the comparison that does not fit is named, never one that does.
      h: mismatch(37, "==", 'p0/probe/temp (double) with the string "x"'),
      i: mismatch(37, "<", "p0/probe/on (bool) with 1"),
    };
    for (const [name, text] of Object.entries(expected)) {
      const message = gateMessage(s, name);
      assert.ok(message.endsWith(`: m ${text}`), `${name}: ${message}`);
    }
  } finally {
    await s.close();
  }
});

/**
 * One read of p0/probe/count (`count`, its decimal text) and whether each interlock named in
 * `blocks` blocks its function then; `why`, when the outcome is not plain, says why.
 */
interface CountStep {
  readonly count: string;
  readonly blocks: Readonly<Record<string, boolean>>;
  readonly why?: string;
}

/**
 * The interlocks `conditions` (probeInterlocks) over p0/probe, its count read as each of `steps`
 * says, in order: after each read, the interlocks it names block as it says.
 */
async function assertCountSteps(
  conditions: Record<string, string>,
  steps: readonly CountStep[],
): Promise<void> {
  const s = await setup(probeInterlocks(conditions));
  try {
    for (const { count, blocks: expected, why } of steps) {
      await readCount(s, count);
      const names = Object.keys(expected);
      const found = blocking(s, ...names);
      assert.deepEqual(
        Object.fromEntries(names.map((name, i) => [name, found[i]])),
        expected,
        `p0/probe/count ${count}${why === undefined ? "" : `: ${why}`}`,
      );
    }
  } finally {
    await s.close();
  }
}

Deno.test("AlarmEngine's interlock conditions compare a 64-bit integer signal exactly, past 2^53", async () => {
  // 2^53 is a double exactly; 2^53 + 1 is not (as a double it would equal 2^53).
  await assertCountSteps({
    big: "p0/probe/count > 9007199254740992",
    eq: "p0/probe/count == 5",
    lit: "9007199254740992 < p0/probe/count",
    eqbig: "p0/probe/count == 9007199254740992",
  }, [
    {
      count: "9007199254740992",
      blocks: { big: false, eq: false, lit: false, eqbig: true },
      why: "a 64-bit integer equals the number of the same value",
    },
    { count: "9007199254740993", blocks: { eqbig: false, big: true, eq: false, lit: true } },
    { count: "5", blocks: { big: false, eq: true, lit: false } },
  ]);
});

Deno.test("AlarmEngine's interlock conditions keep an integer literal past 2^53 exact", async () => {
  // As a double the literal would be 2^53: equal to 2^53, not to 2^53 + 1, and >= neither.
  await assertCountSteps({
    eq: "p0/probe/count == 9007199254740993",
    ne: "p0/probe/count != 9007199254740993",
    ge: "p0/probe/count >= 9007199254740993",
    lo: "p0/probe/count < -9223372036854775807",
  }, [
    { count: "9007199254740992", blocks: { eq: false, ne: true, ge: false } },
    { count: "9007199254740993", blocks: { eq: true, ne: false, ge: true } },
    { count: "-9223372036854775808", blocks: { lo: true }, why: "-(2^63) < -(2^63 - 1)" },
    {
      count: "-9223372036854775807",
      blocks: { lo: false },
      why: "as doubles both are -2^63: not less",
    },
  ]);
});

Deno.test("AlarmEngine's interlock view says since when it has been released, from its first evaluation", async () => {
  const s = await setup(`
interlocks:
  - { id: il, block: [p0/probe/a], while: "p0/probe/temp > 80", message: m }
`);
  try {
    const started = s.fx.clock.wallMs;
    s.fx.clock.wallMs = started + 60_000;
    const [view] = s.engine.interlocks();
    assert.equal(view!.blocking, false);
    assert.equal(view!.since_epoch_ms, started);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's interlock reason names every comparison that cannot be made, by the types of the values it met", async () => {
  const s = await setup(probeInterlocks({
    bb: "p0/blobs/a == p0/blobs/b",
    bs: "p0/blobs/a != 'AQI='",
    so: "p0/probe/mode > p0/blobs/u",
    nb: "p0/probe/temp < p0/probe/on",
    two: "p0/probe/mode > 3 or p0/probe/on < 1",
    un: "p0/blobs/u > 3",
    ur: "3 < p0/blobs/u",
  }));
  try {
    await s.fx.cache.pollDevice("p0", "blobs");
    const mismatch = (...what: string[]) =>
      `(type mismatch: ${what.map((w) => `column ${w}`).join("; ")})`;
    const expected: Record<string, string> = {
      // Bytes compare with nothing, not even with bytes of the same content.
      bb: mismatch(
        "12 of the condition: '==' cannot compare p0/blobs/a (bytes) with p0/blobs/b (bytes)",
      ),
      bs: mismatch(
        `12 of the condition: '!=' cannot compare p0/blobs/a (bytes) with the string "AQI="`,
      ),
      // Only numbers are ordered.
      so: mismatch(
        "15 of the condition: '>' cannot compare p0/probe/mode (string) with p0/blobs/u (string)",
      ),
      nb: mismatch(
        "15 of the condition: '<' cannot compare p0/probe/temp (double) with p0/probe/on (bool)",
      ),
      two: mismatch(
        "15 of the condition: '>' cannot compare p0/probe/mode (string) with 3",
        "34 of the condition: '<' cannot compare p0/probe/on (bool) with 1",
      ),
      // A type the provider left unspecified is judged by the value it sent.
      un: mismatch("12 of the condition: '>' cannot compare p0/blobs/u (string) with 3"),
      ur: mismatch("3 of the condition: '<' cannot compare 3 with p0/blobs/u (string)"),
    };
    for (const [name, text] of Object.entries(expected)) {
      const message = gateMessage(s, name);
      assert.equal(message, `Interlock ${name} blocks p0/probe ${name}: m ${text}`);
    }
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine says at start-up which interlock comparisons the declared types cannot make, and only those", async () => {
  const s = await setup(probeInterlocks({
    bb: "p0/blobs/a == p0/blobs/b",
    ci: "p0/probe/count == 'x'",
    cn: "p0/probe/count > 3",
    nn: "p0/blobs/n >= 1",
    un: "p0/blobs/u > 3",
    ur: "3 < p0/blobs/u",
  }));
  try {
    const told = s.lines.filter((l) => l.startsWith("ERROR") && l.includes("cannot compare"))
      .map((l) => l.slice(l.indexOf("interlock ")));
    assert.deepEqual(told, [
      "interlock bb: column 12 of the condition: '==' cannot compare p0/blobs/a (bytes) with " +
      "p0/blobs/b (bytes); the interlock blocks while it does",
      // Told from the declared type, before the signal has any value (count has none yet).
      "interlock ci: column 16 of the condition: '==' cannot compare p0/probe/count (int64) with " +
      'the string "x"; the interlock blocks while it does',
      // 64-bit integers are numbers; a type left unspecified is not known until a value comes.
    ]);
  } finally {
    await s.close();
  }
});

/** The probe's temp, a double, reading 25. */
const TEMP_25: Inventory["devices"] = {
  probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] },
};

/** An inventory declaring the probe's temp `type`, with no value for it. */
function tempDeclared(type: typeof T.DOUBLE | typeof T.STRING): Inventory {
  return { devices: { probe: { signals: [{ id: "temp", type }] } } };
}

/**
 * An AlarmEngine over a real provider that restarts (in process), its lines captured: probe
 * polled once, the engine started. `restartWith` writes the inventory the provider comes back
 * with, kills it and waits for its successor up (its inventory announced before it counts as up).
 */
async function restartingEngine(
  devices: Inventory["devices"],
  yaml: string,
  restart: NonNullable<Parameters<typeof startProgrammable>[1]>["restart"] = {},
) {
  const fx = await startProgrammable({ devices }, { restart, inProcess: true });
  const lines: string[] = [];
  const engine = new AlarmEngine({
    ...configOf(yaml),
    cache: fx.cache,
    inventory: new InventoryPort(fx.registry),
    bus: new EventBus(),
    clock: fx.clock,
    log: capturingLogger({ now: () => 0, lines }).log,
    actions: { fault: () => Promise.resolve(), estop: () => Promise.resolve() },
  });
  const close = async () => {
    engine.stop();
    await fx.close();
  };
  try {
    await fx.cache.pollDevice("p0", "probe");
    engine.start();
  } catch (err) {
    await close();
    throw err;
  }
  return {
    fx,
    engine,
    lines,
    restartWith: async (inventory: Inventory) => {
      await fx.setInventory(inventory);
      const pid = fx.kill();
      await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    },
    close,
  };
}

Deno.test("AlarmEngine says after a rediscovery what the provider's new inventory no longer has (logged, unresolved_block)", async () => {
  // A real restart: the provider's inventory is announced before it counts as up again.
  const { engine, lines, restartWith, close } = await restartingEngine(
    {
      probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] },
      valve: { signals: [{ id: "x", type: T.DOUBLE }] },
    },
    `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
interlocks:
  - { id: il, block: [p0/valve/program], while: "p0/probe/temp > 80", message: m }
`,
  );
  try {
    assert.deepEqual(engine.interlocks()[0]!.unresolved_block, []);
    const told = () =>
      lines.filter((l) => l.startsWith("ERROR") && !l.includes(" raised "))
        .map((l) => l.slice(l.indexOf("[alarms] ") + 9));
    assert.deepEqual(told(), []);

    // The provider comes back without temp and without the valve.
    await restartWith({ devices: { probe: { signals: [{ id: "other", type: T.DOUBLE }] } } });
    assert.equal(
      engine.alarm("hot").bad_input,
      "p0/probe/temp: device p0/probe declares no signal 'temp'",
    );
    assert.deepEqual(engine.interlocks()[0]!.unresolved_block, ["p0/valve/program"]);
    assert.deepEqual(told(), [
      "alarm hot: p0/probe/temp: device p0/probe declares no signal 'temp'; the alarm treats it " +
      "as a bad input",
      "interlock il: p0/probe/temp: device p0/probe declares no signal 'temp'; the interlock " +
      "blocks on it",
      "interlock il: block entry p0/valve/program matches no function: it blocks nothing",
    ]);
  } finally {
    await close();
  }
});

Deno.test("AlarmEngine's bad_input names the declared type a restart gave an alarm's signal, not 'no sample', until a sample comes", async () => {
  // A real restart: the provider comes back declaring temp a string (it was a double), so the
  // cache drops the double it held: there is no sample until the next poll answers.
  const { fx, engine, lines, restartWith, close } = await restartingEngine(
    TEMP_25,
    `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
  - { id: open, signal: p0/probe/temp, alarm_when: true }
`,
  );
  try {
    assert.equal(engine.alarm("hot").bad_input, null);
    await restartWith(tempDeclared(T.STRING));
    assert.equal(fx.cache.signal("p0", "probe", "temp"), undefined, "no sample yet");
    assert.equal(
      engine.alarm("hot").bad_input,
      "p0/probe/temp is declared string; limits compare numbers",
    );
    assert.equal(
      engine.alarm("open").bad_input,
      "p0/probe/temp is declared string; alarm_when is a boolean",
    );
    assert.deepEqual(
      lines.filter((l) => l.startsWith("ERROR") && l.includes("is declared string")).map((l) =>
        l.slice(l.indexOf("[alarms] ") + 9)
      ),
      [
        "alarm hot: p0/probe/temp is declared string; limits compare numbers: the alarm treats " +
        "it as a bad input",
        "alarm open: p0/probe/temp is declared string; alarm_when is a boolean: the alarm " +
        "treats it as a bad input",
      ],
      "the same reason as the ERROR line of the rediscovery",
    );
  } finally {
    await close();
  }
});

Deno.test("AlarmEngine's interlock input bad_input names the declared type a restart gave its signal, not 'no sample', until a sample comes", async () => {
  // A real restart: the provider comes back declaring temp a string (it was a double), so the
  // cache drops the double it held: there is no sample until the next poll answers.
  const { fx, engine, lines, restartWith, close } = await restartingEngine(
    TEMP_25,
    `
interlocks:
  - { id: hot, block: [p0/probe/a], while: "p0/probe/temp > 80", message: m }
  - { id: dead, block: [p0/probe/c], while: "bad(p0/probe/temp)", message: m }
`,
  );
  try {
    const view = (id: string) => engine.interlocks().find((v) => v.id === id)!;
    assert.equal(view("hot").inputs[0]!.bad_input, null);
    await restartWith(tempDeclared(T.STRING));
    assert.equal(fx.cache.signal("p0", "probe", "temp"), undefined, "no sample yet");
    const mismatch = "p0/probe/temp is declared string; column 15 of the condition: '>' cannot " +
      "compare p0/probe/temp (string) with 80";
    const hot = view("hot");
    assert.equal(hot.inputs[0]!.bad_input, mismatch);
    assert.equal(hot.reason, `bad input: ${mismatch}`);
    assert.ok(
      lines.some((l) =>
        l.startsWith("ERROR") &&
        l.endsWith(
          "interlock hot: column 15 of the condition: '>' cannot compare " +
            "p0/probe/temp (string) with 80; the interlock blocks while it does",
        )
      ),
      "the same comparison as the ERROR line of the rediscovery",
    );
    // Read only inside bad(): no comparison wants a type, so no sample is all there is to say.
    assert.equal(
      view("dead").inputs[0]!.bad_input,
      "p0/probe/temp: no sample in the cache",
    );
  } finally {
    await close();
  }
});

Deno.test("AlarmEngine tells an interlock's reason anew when a restart retypes its compared signal back to a type its comparison takes, still with no sample", async () => {
  // Real restarts: temp comes back declared a string (the comparison cannot take it), then a
  // double again; each drops the sample, so temp has none all along. The reason GET shows goes
  // from the declared type to 'no sample': that is told, as another reason.
  const { engine, lines, restartWith, close } = await restartingEngine(
    TEMP_25,
    HOT_INTERLOCK,
  );
  try {
    const view = () => engine.interlocks()[0]!;
    const warned = () =>
      lines.filter((l) => l.startsWith("WARN") && l.includes("interlock hot "))
        .map((l) => l.slice(l.indexOf("interlock hot ")));
    assert.equal(view().blocking, false);
    await restartWith(tempDeclared(T.STRING));
    const declared = "bad input: p0/probe/temp is declared string; column 15 of the condition: " +
      "'>' cannot compare p0/probe/temp (string) with 80";
    assert.equal(view().reason, declared);
    await restartWith(tempDeclared(T.DOUBLE));
    const noSample = "bad input: p0/probe/temp: no sample in the cache";
    assert.equal(view().reason, noSample);
    // The restarts' own passing reasons (temp UNAVAILABLE, its provider down) come and go as
    // the timing has it; what was told last is what GET shows.
    assert.equal(
      warned().at(-1),
      `interlock hot blocks for another reason: m (${noSample}); blocks p0/probe/a`,
    );
  } finally {
    await close();
  }
});

Deno.test("AlarmEngine tells an interlock's reason anew when a reload changes its condition to one its input's declared type fits, still with no sample", async () => {
  // A real restart declares temp a string: no sample, and '>' cannot take it. The reload compares
  // it with a string instead: 'no sample' is all GET says then, and that is told.
  const { engine, lines, restartWith, close } = await restartingEngine(
    TEMP_25,
    HOT_INTERLOCK,
  );
  try {
    const view = () => engine.interlocks()[0]!;
    await restartWith(tempDeclared(T.STRING));
    assert.match(view().reason!, /^bad input: p0\/probe\/temp is declared string; /);
    engine.reconfigure(configOf(`
interlocks:
  - { id: hot, block: [p0/probe/a], while: "p0/probe/temp == 'hot'", message: m }
`));
    const noSample = "bad input: p0/probe/temp: no sample in the cache";
    assert.equal(view().reason, noSample);
    const warned = lines.filter((l) => l.startsWith("WARN") && l.includes("interlock hot "));
    assert.ok(
      warned.at(-1)!.endsWith(
        `interlock hot blocks for another reason: m (${noSample}); blocks p0/probe/a`,
      ),
      warned.at(-1),
    );
  } finally {
    await close();
  }
});

Deno.test("AlarmEngine judges a block entry a reload added while its provider was down once the provider is back, same inventory", async () => {
  const { fx, engine, lines, close } = await restartingEngine(
    {
      probe: { signals: [{ id: "temp", type: T.DOUBLE }], values: [dbl("temp", 25)] },
      valve: { signals: [{ id: "x", type: T.DOUBLE }] },
    },
    "",
    { backoffMs: [300, 300, 300] },
  );
  try {
    const pid = fx.kill();
    await waitFor("down", () => !fx.host.available);
    // A reload while it is down adds an interlock whose block entry names no function.
    engine.reconfigure(configOf(`
interlocks:
  - { id: il, block: [p0/valve/nothing], while: "p0/probe/temp > 80", message: m }
`));
    assert.deepEqual(engine.interlocks()[0]!.unresolved_block, [], "not judged while down");
    // It comes back with the inventory it had.
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid, 10000);
    assert.deepEqual(engine.interlocks()[0]!.unresolved_block, ["p0/valve/nothing"]);
    assert.ok(
      lines.some((l) =>
        l.includes("interlock il: block entry p0/valve/nothing matches no function")
      ),
      lines.join("\n"),
    );
  } finally {
    await close();
  }
});

Deno.test("AlarmEngine after a reload publishes an interlock's engage or release only when it changed: a kept one blocking is not engaged again, a loosened one is released", async () => {
  const yaml = (limit: number) => `
interlocks:
  - { id: il, block: [p0/probe/program], while: "p0/probe/temp > ${limit}", message: m }
`;
  const s = await setup(yaml(80));
  try {
    await s.read([temp(85)]);
    assert.deepEqual(interlockEvents(s.events).map((e) => e.blocking), [true]);
    const since = s.engine.interlocks()[0]!.since_epoch_ms;

    s.fx.clock.wallMs += 1_000;
    s.reload(yaml(80)); // kept as it was, still blocking: no transition
    assert.deepEqual(interlockEvents(s.events).map((e) => e.blocking), [true]);
    assert.equal(s.engine.interlocks()[0]!.since_epoch_ms, since, "blocking since the engage");

    s.reload(yaml(90)); // 85 no longer blocks: released, and said so
    assert.deepEqual(interlockEvents(s.events).map((e) => e.blocking), [true, false]);
    assert.equal(s.engine.interlocks()[0]!.blocking, false);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine releases a blocking interlock a reload removes, so its events and run records end where the gate does", async () => {
  const s = await setup(`
interlocks:
  - { id: il, block: [p0/probe/program], while: "p0/probe/temp > 80", message: m }
`);
  try {
    await s.read([temp(85)]);
    assert.deepEqual(interlockEvents(s.events).map((e) => [e.interlock_id, e.blocking]), [
      ["il", true],
    ]);
    s.reload("interlocks: []\n");
    assert.deepEqual(s.engine.interlocks(), []);
    assert.deepEqual(
      interlockEvents(s.events).map((e) => [e.interlock_id, e.blocking]),
      [["il", true], ["il", false]],
      "the last event of the removed interlock says it blocks nothing",
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine tells an interlock that keeps blocking for another reason (event and WARN line), not for new values of the same one", async () => {
  const s = await setup(HOT_INTERLOCK);
  try {
    const w0 = s.fx.clock.wallMs;
    const told = () =>
      interlockEvents(s.events).map((e) => `${e.blocking} ${e.reason} +${e.timestamp_ms - w0}`);
    const warned = () =>
      s.lines.filter((l) => l.startsWith("WARN") && l.includes("interlock hot")).map((l) =>
        l.slice(l.indexOf("interlock hot"))
      );
    s.fx.clock.wallMs = w0 + 10_000;
    await s.read([temp(90)]);
    s.fx.clock.wallMs = w0 + 11_000;
    await s.read([temp(91)]); // the same reason, new values: nothing told
    assert.deepEqual(told(), ["true p0/probe/temp = 90 +10000"]);
    s.fx.clock.wallMs = w0 + 12_000;
    await s.read([temp(91, { quality: Q.FAULT })]);
    s.fx.clock.wallMs = w0 + 13_000;
    await s.read([temp(92, { quality: Q.FAULT })]); // the same bad input: nothing more
    assert.deepEqual(told(), [
      "true p0/probe/temp = 90 +10000",
      "true bad input: p0/probe/temp is FAULT +12000",
    ]);
    assert.deepEqual(warned(), [
      "interlock hot engaged: m (p0/probe/temp = 90); blocks p0/probe/a",
      "interlock hot blocks for another reason: m (bad input: p0/probe/temp is FAULT); blocks " +
      "p0/probe/a",
    ]);
    const view = s.engine.interlocks()[0]!;
    assert.equal(view.reason, "bad input: p0/probe/temp is FAULT");
    assert.equal(view.since_epoch_ms, w0 + 10_000, "since it engaged: it never released");
    s.fx.clock.wallMs = w0 + 14_000;
    await s.read([temp(93)]); // usable again, the condition holds: told again
    s.fx.clock.wallMs = w0 + 15_000;
    await s.read([temp(25)]);
    assert.deepEqual(told().slice(2), ["true p0/probe/temp = 93 +14000", "false null +15000"]);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine tells nothing of an interlock a reload keeps blocking for the reason last told (its input bad, then usable again)", async () => {
  const yaml = HOT_INTERLOCK;
  const s = await setup(yaml);
  try {
    await s.read([temp(90)]);
    await s.read([temp(91, { quality: Q.FAULT })]);
    await s.read([temp(92)]); // usable again, the condition holds: told
    const reasons = () => interlockEvents(s.events).map((e) => `${e.blocking} ${e.reason}`);
    const warned = () => s.lines.filter((l) => l.includes("blocks for another reason")).length;
    const before = reasons();
    assert.deepEqual(before, [
      "true p0/probe/temp = 90",
      "true bad input: p0/probe/temp is FAULT",
      "true p0/probe/temp = 92",
    ]);
    const warnedBefore = warned();
    s.reload(yaml); // the same interlock, still blocking on its condition
    await s.read([temp(93)]);
    assert.deepEqual(reasons(), before, "nothing new to tell: the condition still holds");
    assert.equal(warned(), warnedBefore);
  } finally {
    await s.close();
  }
});

/** An interlock `hot` blocking p0/probe/a while temp is over 80 or mode is 'x'. */
const TEMP_OR_MODE_INTERLOCK = `
interlocks:
  - { id: hot, block: [p0/probe/a], while: "p0/probe/temp > 80 or p0/probe/mode == 'x'", message: m }
`;

/** Every device failing all along (reported UNREACHABLE, still answering). */
const FAILING: DeviceCondition = { kind: "failing", reason: "unreachable", sinceMono: 0 };

/** The reason an interlock on p0/probe/temp gives while its device is FAILING. */
const FAILING_REASON = "bad input: p0/probe/temp: device p0/probe is failing (unreachable)";

/** The interlock events told, as "blocking reason". */
function toldOf(s: Setup): string[] {
  return interlockEvents(s.events).map((e) => `${e.blocking} ${e.reason}`);
}

/** The interlock events told, as "blocking reason", a sample's age told as "N ms old". */
function toldWithAgesNamed(s: Setup): string[] {
  return interlockEvents(s.events).map((e) =>
    `${e.blocking} ${e.reason?.replace(/\d+ ms old/, "N ms old") ?? null}`
  );
}

/** The WARN lines saying an interlock blocks for another reason. */
function anotherReasonLines(s: Setup): string[] {
  return s.lines.filter((l) => l.includes("blocks for another reason"));
}

Deno.test("AlarmEngine tells a signal stale by its age once, not again when the cache marks its kept sample STALE", async () => {
  const s = await setup(HOT_INTERLOCK);
  try {
    const reasons = () => toldWithAgesNamed(s);
    await s.read([temp(90), mode("open")]);
    // The provider answers without temp (mode keeps the device answering): its sample goes stale
    // by its age, seen by the wake-up before the next poll; that poll stores it STALE.
    s.fx.clock.mono = s.fx.clock.monoMs() + 1001;
    s.timers.fireDue();
    s.fx.clock.mono = s.fx.clock.monoMs() + 200;
    await s.read([mode("open")]);
    assert.equal(s.fx.cache.device("p0", "probe")?.signals.get("temp")?.quality, "STALE");
    await s.read([mode("open")]);
    const stale =
      "true bad input: p0/probe/temp is stale: its sample is N ms old (stale after 1000 ms)";
    assert.deepEqual(reasons(), ["true p0/probe/temp = 90", stale], "stale by its age: told once");
    assert.equal(anotherReasonLines(s).length, 1);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine tells an input a provider marks STALE once while it stays bad, not again at each turn of its age and its STALE mark", async () => {
  // The stale bound (1000 ms) is shorter than the poll period (1500 ms): the runtime's age check
  // finds the sample stale before each poll (the wake-up of mode, still usable, evaluates it),
  // and each poll brings the provider's own STALE again, received fresh. One bad input, one told
  // reason while it stays bad: AGE and QUALITY of it take turns, neither is another reason.
  const s = await setup(TEMP_OR_MODE_INTERLOCK);
  try {
    const told = () => toldWithAgesNamed(s);
    s.fx.clock.mono = 1_000;
    await s.read([temp(25), mode("open")]);
    s.fx.clock.mono = 2_001;
    s.timers.fireDue(); // temp (and mode) stale by age: engaged
    const engage =
      "true bad input: p0/probe/temp is stale: its sample is N ms old (stale after 1000 ms)";
    assert.deepEqual(told(), [engage]);
    for (let poll = 2_500; poll <= 7_000; poll += 1_500) {
      s.fx.clock.mono = poll;
      await s.read([temp(25, { quality: Q.STALE }), mode("open")]);
      assert.equal(
        s.engine.interlocks()[0]!.reason,
        "bad input: p0/probe/temp is STALE",
        "GET shows the cause now: the provider's mark",
      );
      s.fx.clock.mono = poll + 1_001;
      s.timers.fireDue(); // mode goes stale: the wake-up finds temp's STALE sample old too
      assert.equal(
        s.engine.interlocks()[0]!.reason,
        "bad input: p0/probe/temp is stale: its sample is 1001 ms old (stale after 1000 ms)",
        "GET shows the cause now: its age",
      );
    }
    assert.deepEqual(told(), [engage], "one bad input: told once, at the engage");
    assert.equal(anotherReasonLines(s).length, 0);
    s.fx.clock.mono = 9_000;
    await s.read([temp(25, { quality: Q.FAULT }), mode("open")]);
    assert.deepEqual(
      told(),
      [engage, "true bad input: p0/probe/temp is FAULT"],
      "FAULT of the same input: another kind than stale, told once",
    );
    await s.read([temp(25, { quality: Q.FAULT }), mode("open")]);
    assert.equal(told().length, 2, "FAULT again: not told again");
    await s.read([temp(90), mode("open")]); // usable again, the condition holds: told
    await s.read([temp(25), mode("open")]);
    assert.deepEqual(told().slice(2), [
      'true p0/probe/temp = 90, p0/probe/mode = "open"',
      "false null",
    ]);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine tells an interlock's bad input once while it stays bad, not again at each turn of another input before it going stale and fresh", async () => {
  // The stale bound (1000 ms) is shorter than the poll period (1500 ms): temp, first in the
  // condition, is fresh at each poll and stale by age before the next, while mode stays FAULT.
  // The interlock blocks all along on mode; temp's turns are no other reason to tell (nor another
  // `engage` in the open run).
  const s = await setup(TEMP_OR_MODE_INTERLOCK);
  const dir = await Deno.makeTempDir({ prefix: "interlock_turns_run_" });
  const runs = new RunRegistry({
    dataDir: dir,
    runtimeName: "lab1",
    pollingIntervalMs: 500,
    files: journalFiles,
    clock: withRealTimers(s.fx.clock),
    logger: runsLogger,
  });
  try {
    await runs.start();
    runs.attach(s.bus);
    const { run } = await runs.open({});
    const faulty = (v: string): Sample => ({ ...mode(v), quality: Q.FAULT });
    const told = () => toldWithAgesNamed(s);
    const engage = "true bad input: p0/probe/mode is FAULT";
    s.fx.clock.mono = 1_000;
    await s.read([temp(25), faulty("open")]);
    assert.deepEqual(told(), [engage]);
    for (let poll = 2_500; poll <= 7_000; poll += 1_500) {
      s.fx.clock.mono = poll;
      await s.read([temp(25), faulty("open")]);
      s.fx.clock.mono = poll + 1_001;
      s.timers.fireDue(); // temp goes stale by age; mode is still FAULT
      assert.deepEqual(told(), [engage], "mode bad all along: told once, at the engage");
      assert.equal(
        s.engine.interlocks()[0]!.reason,
        "bad input: p0/probe/mode is FAULT",
        "GET names what was told, still true",
      );
    }
    assert.equal(anotherReasonLines(s).length, 0);
    // mode usable again while temp is stale (left out of the answer): temp is told now.
    s.fx.clock.mono = 8_600;
    await s.read([mode("open")]);
    const stale =
      "true bad input: p0/probe/temp is stale: its sample is N ms old (stale after 1000 ms)";
    assert.deepEqual(told(), [engage, stale]);
    await s.read([temp(25), mode("open")]);
    assert.deepEqual(told(), [engage, stale, "false null"]);
    const recorded = (await runs.listEvents(run.run_id, {})).events.filter((e) =>
      e.category === "interlock"
    );
    assert.deepEqual(recorded.map((e) => e.type), ["engage", "engage", "release"]);
  } finally {
    await runs.shutdown();
    await s.close();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("AlarmEngine names an interlock's input bad all along once the one told is usable, not another that flaps OK and FAULT at each poll", async () => {
  // on is FAULT at every poll; temp and mode, before it in the condition, are FAULT and OK by
  // turns (one bad while the other is usable). Once the told input is usable again the interlock
  // names the input bad the longest (on), and keeps it while it stays bad: not temp, mode, temp…
  // by turns, each one another reason told (an event, a WARN and another run engage per poll).
  const s = await setup(`
interlocks:
  - { id: hot, block: [p0/probe/a], while: "p0/probe/temp > 80 or p0/probe/mode == 'x' or p0/probe/on == true", message: m }
`);
  try {
    const told = () => interlockEvents(s.events).map((e) => `${e.blocking} ${e.reason}`);
    const faultyTemp = temp(25, { quality: Q.FAULT });
    const faultyMode: Sample = { ...mode("open"), quality: Q.FAULT };
    const faultyOn: Sample = { id: "on", type: T.BOOL, bool: false, quality: Q.FAULT };
    s.fx.clock.mono = 1_000;
    await s.read([faultyTemp, mode("open"), faultyOn]);
    const engage = "true bad input: p0/probe/temp is FAULT";
    assert.deepEqual(told(), [engage], "the first bad input at the engage");
    const steady = "true bad input: p0/probe/on is FAULT";
    for (let poll = 0; poll < 6; poll++) {
      s.fx.clock.mono += 500;
      await s.read(
        poll % 2 === 0 ? [temp(25), faultyMode, faultyOn] : [faultyTemp, mode("open"), faultyOn],
      );
      assert.deepEqual(told(), [engage, steady], `poll ${poll}: on, bad all along, named once`);
      assert.equal(s.engine.interlocks()[0]!.reason, "bad input: p0/probe/on is FAULT");
    }
    assert.equal(s.lines.filter((l) => l.includes("blocks for another reason")).length, 1);
    // on usable: the first bad input again (temp, FAULT at this poll), told once.
    s.fx.clock.mono += 500;
    await s.read([faultyTemp, mode("open"), {
      id: "on",
      type: T.BOOL,
      bool: false,
      quality: Q.OK,
    }]);
    assert.deepEqual(told(), [engage, steady, engage]);
    await s.read([temp(25), mode("open"), { id: "on", type: T.BOOL, bool: false, quality: Q.OK }]);
    assert.deepEqual(told(), [engage, steady, engage, "false null"]);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine tells an interlock's input of a device failing once while its fresh samples go stale by age between polls", async () => {
  // The stale bound (1000 ms) is shorter than the poll period (1500 ms): temp is fresh at each
  // poll and stale by age before the next, while its device is failing all along (reported
  // UNREACHABLE, still answering). Its failing is why, told once, at every turn.
  const s = await setup(HOT_INTERLOCK, { condition: () => FAILING });
  try {
    const reason = FAILING_REASON;
    s.fx.clock.mono = 1_000;
    await s.read([temp(25)]);
    const told = () => toldOf(s);
    assert.deepEqual(told(), [`true ${reason}`]);
    for (let poll = 2_500; poll <= 7_000; poll += 1_500) {
      s.fx.clock.mono = poll - 1; // stale by age, as GET /v0/interlocks finds it
      assert.equal(s.engine.interlocks()[0]!.reason, reason, `${poll - 1}: stale`);
      s.fx.clock.mono = poll;
      await s.read([temp(25)]);
      assert.equal(s.engine.interlocks()[0]!.reason, reason, `${poll}: fresh`);
    }
    assert.deepEqual(told(), [`true ${reason}`], "told once");
    assert.equal(anotherReasonLines(s).length, 0);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine tells an interlock's input of a device failing once while the cache marks its kept sample STALE at answers that leave it out", async () => {
  // The device fails all along; its answers carry temp only every other poll: an answer that
  // leaves it out marks the kept sample STALE (past its 1000 ms bound), the next carries it
  // fresh. Stale by age and the cache's STALE mark are one kind: the device's failing is why.
  const s = await setup(HOT_INTERLOCK, { condition: () => FAILING });
  try {
    const reason = FAILING_REASON;
    s.fx.clock.mono = 1_000;
    await s.read([temp(25), mode("open")]);
    const told = () => toldOf(s);
    assert.deepEqual(told(), [`true ${reason}`]);
    for (let poll = 2_500; poll <= 8_500; poll += 1_500) {
      s.fx.clock.mono = poll;
      // Every other answer leaves temp out: the cache marks it STALE for its age.
      const withTemp = (poll - 1_000) % 3_000 === 0;
      await s.read(withTemp ? [temp(25), mode("open")] : [mode("open")]);
      assert.equal(s.engine.interlocks()[0]!.reason, reason, `${poll}: temp ${withTemp}`);
    }
    assert.deepEqual(told(), [`true ${reason}`], "told once");
    assert.equal(anotherReasonLines(s).length, 0);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine publishes an interlock's engage and another reason when its logger throws on their WARN lines", async () => {
  let logFails = false;
  const s = await setup(
    HOT_INTERLOCK,
    { logFails: () => logFails },
  );
  try {
    logFails = true; // a closed stderr: the WARN lines throw
    await s.read([temp(90)]);
    await s.read([temp(91, { quality: Q.FAULT })]);
    logFails = false;
    assert.deepEqual(interlockEvents(s.events).map((e) => `${e.blocking} ${e.reason}`), [
      "true p0/probe/temp = 90",
      "true bad input: p0/probe/temp is FAULT",
    ], "each is published although its line could not be written");
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine's wake-up is never set for an instant already past while an interlock blocks on one bad input of two", async () => {
  const s = await setup(`
interlocks:
  - { id: il, block: [p0/probe/program], while: "p0/probe/temp > 80 or p0/probe/mode == 'x'", message: m }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(25), mode("open")]); // both usable: mode goes stale after 2000
    s.fx.clock.mono = 1_500;
    await s.read([temp(25, { quality: Q.FAULT }), mode("open")]); // mode fresh until 2500
    assert.deepEqual(interlockEvents(s.events).map((e) => e.blocking), [true]);
    // The wake-up fires; it must be set again for a later instant, not for one already past
    // (that would wake the engine at once, again and again, while temp stays bad).
    let wakes = 0;
    for (s.fx.clock.mono = 2_001; wakes < 5; wakes++) {
      const due = s.timers.dueTimes().filter((t) => t <= s.fx.clock.mono!);
      if (due.length === 0) break;
      s.timers.fireAll();
    }
    assert.ok(wakes <= 1, `woke ${wakes} times at the same instant`);
    assert.equal(s.engine.interlocks()[0]!.blocking, true);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine says when a shelve ends on the wall clock of now: a step of the wall clock moves it, not the shelve", async () => {
  const s = await setup(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    s.engine.shelve("hot", 60_000);
    assert.equal(s.engine.alarm("hot").shelved_until_epoch_ms, s.fx.clock.wallMs + 60_000);
    // NTP steps the wall clock a day ahead 10 s later: the shelve still ends 50 s from now.
    s.fx.clock.mono = 11_000;
    s.fx.clock.wallMs += 10_000 + 86_400_000;
    assert.equal(s.engine.alarm("hot").state, "shelved");
    assert.equal(s.engine.alarm("hot").shelved_until_epoch_ms, s.fx.clock.wallMs + 50_000);
    s.fx.clock.mono = 61_000;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("hot").state, "active");
  } finally {
    await s.close();
  }
});

/**
 * The set-up of the wall clock step tests: `setup(yaml)` with temp read hot (85) at 1 s on the
 * monotonic clock; `fn` gets it and the wall time of that read (`w0`); closed whatever `fn` does.
 */
async function hotAtOneSecond(
  yaml: string,
  fn: (s: Setup, w0: number) => Promise<void>,
): Promise<void> {
  const s = await setup(yaml);
  try {
    const w0 = s.fx.clock.wallMs;
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    await fn(s, w0);
  } finally {
    await s.close();
  }
}

/** Each alarm event's transition and its time after `w0`. */
const alarmEventTimes = (s: Setup, w0: number) =>
  alarmEvents(s.events).map((e) => [e.transition, e.timestamp_ms - w0]);

/** Each transition an alarm's view holds and its time after `w0`. */
const transitionTimes = (view: AlarmView, w0: number) =>
  view.transitions.map((t) => [t.transition, t.at_epoch_ms - w0]);

Deno.test("AlarmEngine dates an alarm's transitions no earlier than the one before it when the wall clock steps back (NTP)", async () => {
  await hotAtOneSecond(
    `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80, hysteresis: 0 }
`,
    async (s, w0) => {
      // NTP steps the wall clock back an hour 1 s after the raise.
      s.fx.clock.mono = 2_000;
      s.fx.clock.wallMs = w0 + 1_000 - 3_600_000;
      s.engine.ack("hot");
      assert.equal(s.engine.alarm("hot").since_epoch_ms, w0, "acknowledged no earlier than raised");
      s.fx.clock.mono = 3_000;
      s.fx.clock.wallMs += 1_000;
      await s.read([temp(70)]);
      s.fx.clock.mono = 4_000;
      s.fx.clock.wallMs = w0 + 5_000; // past the raise again
      await s.read([temp(90)]);
      const view = s.engine.alarm("hot");
      assert.deepEqual(
        transitionTimes(view, w0),
        [["raise", 0], ["ack", 0], ["clear", 0], ["raise", 5_000]],
        "never earlier than the transition before it; the clock's own time once it is later",
      );
      assert.equal(view.since_epoch_ms, w0 + 5_000);
      assert.deepEqual(
        alarmEventTimes(s, w0),
        [["raise", 0], ["ack", 0], ["clear", 0], ["raise", 5_000]],
        "the events carry the same times",
      );
    },
  );
});

Deno.test("AlarmEngine dates the raise of an alarm a reload changed no earlier than the clear of the alarm it replaces when the wall clock stepped back (NTP)", async () => {
  await hotAtOneSecond(
    `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
`,
    async (s, w0) => {
      // NTP steps the wall clock back an hour; then a reload lowers the limit: the alarm it
      // replaces is cleared, the changed one raises at once (its condition holds).
      s.fx.clock.mono = 2_000;
      s.fx.clock.wallMs = w0 + 1_000 - 3_600_000;
      s.reload(`
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 70 }
`);
      await s.read([temp(85)]);
      assert.deepEqual(
        alarmEventTimes(s, w0),
        [["raise", 0], ["clear", 0], ["raise", 0]],
        "never earlier than the transition before it",
      );
      assert.deepEqual(transitionTimes(s.engine.alarm("hot"), w0), [["raise", 0]]);
    },
  );
});

Deno.test("AlarmEngine dates the raise of an alarm a reload removed and a later one added back no earlier than the clear of the removed one when the wall clock stepped back (NTP)", async () => {
  const yaml = `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
`;
  await hotAtOneSecond(yaml, async (s, w0) => {
    // A reload removes the raised alarm (cleared, dated now); NTP then steps the wall clock back
    // an hour, and a later reload adds the alarm back: it raises at once (its condition holds).
    s.fx.clock.mono = 2_000;
    s.fx.clock.wallMs = w0 + 1_000;
    s.reload("alarms: []");
    s.fx.clock.mono = 3_000;
    s.fx.clock.wallMs = w0 + 2_000 - 3_600_000;
    s.reload(yaml);
    await s.read([temp(85)]);
    assert.deepEqual(
      alarmEventTimes(s, w0),
      [["raise", 0], ["clear", 1_000], ["raise", 1_000]],
      "never earlier than the transition before it under the same id",
    );
    assert.deepEqual(transitionTimes(s.engine.alarm("hot"), w0), [["raise", 1_000]]);
  });
});

Deno.test("AlarmEngine dates an interlock's engage and release no earlier than the one before it when the wall clock steps back (NTP)", async () => {
  await hotAtOneSecond(
    `
interlocks:
  - { id: il, block: [p0/probe/program], while: "p0/probe/temp > 80", message: m }
`,
    async (s, w0) => {
      // NTP steps the wall clock back 10 s, 100 ms after the engage.
      s.fx.clock.mono = 1_100;
      s.fx.clock.wallMs = w0 + 100 - 10_000;
      await s.read([temp(70)]);
      const [released] = s.engine.interlocks();
      assert.equal(released!.blocking, false);
      assert.equal(released!.since_epoch_ms, w0, "released no earlier than engaged");
      s.fx.clock.mono = 1_200;
      s.fx.clock.wallMs = w0 + 5_000; // past the engage again
      await s.read([temp(90)]);
      assert.equal(s.engine.interlocks()[0]!.since_epoch_ms, w0 + 5_000);
      // Stepped back again, then removed by a reload while it blocks: its release is dated as
      // well.
      s.fx.clock.wallMs = w0 - 60_000;
      s.reload("interlocks: []\n");
      assert.deepEqual(
        interlockEvents(s.events).map((e) => [e.blocking, e.timestamp_ms - w0]),
        [[true, 0], [false, 0], [true, 5_000], [false, 5_000]],
        "never earlier than the transition before it; the clock's own time once it is later",
      );
    },
  );
});

Deno.test("AlarmEngine dates the engage of an interlock a reload removed and a later one added back no earlier than the release of the removed one when the wall clock stepped back (NTP)", async () => {
  const yaml = `
interlocks:
  - { id: il, block: [p0/probe/program], while: "p0/probe/temp > 80", message: m }
`;
  const s = await setup(yaml);
  try {
    const w0 = s.fx.clock.wallMs;
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    // A reload removes the blocking interlock (released, dated now); NTP then steps the wall
    // clock back an hour, and a later reload adds the interlock back: it engages at once.
    s.fx.clock.mono = 2_000;
    s.fx.clock.wallMs = w0 + 1_000;
    s.reload("interlocks: []\n");
    s.fx.clock.mono = 3_000;
    s.fx.clock.wallMs = w0 + 2_000 - 3_600_000;
    await s.read([temp(85)]);
    s.reload(yaml);
    assert.deepEqual(
      interlockEvents(s.events).map((e) => [e.blocking, e.timestamp_ms - w0]),
      [[true, 0], [false, 1_000], [true, 1_000]],
      "never earlier than the transition before it under the same id",
    );
    assert.equal(s.engine.interlocks()[0]!.since_epoch_ms, w0 + 1_000);
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine keeps the date of an alarm and an interlock a reload removed past the wall clock passing it: a second step back (NTP) before they are added back does not date them before their removal", async () => {
  const yaml = `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 80 }
interlocks:
  - { id: il, block: [p0/probe/program], while: "p0/probe/temp > 80", message: m }
`;
  const s = await setup(yaml);
  try {
    const w0 = s.fx.clock.wallMs;
    s.fx.clock.mono = 1_000;
    await s.read([temp(85)]);
    // A reload removes both at w0 + 1 s (clear and release dated then).
    s.fx.clock.mono = 2_000;
    s.fx.clock.wallMs = w0 + 1_000;
    s.reload("alarms: []\ninterlocks: []\n");
    // NTP steps the wall clock back an hour; a reload meanwhile (another change).
    s.fx.clock.mono = 3_000;
    s.fx.clock.wallMs = w0 + 2_000 - 3_600_000;
    s.reload("alarms: []\ninterlocks: []\n");
    // An hour on, the clock is past the removal again; another reload.
    s.fx.clock.mono = 3_603_000;
    s.fx.clock.wallMs = w0 + 3_000;
    s.reload("alarms: []\ninterlocks: []\n");
    // NTP steps it back an hour again; a reload adds both back (their condition holds).
    s.fx.clock.mono = 3_604_000;
    s.fx.clock.wallMs = w0 + 4_000 - 3_600_000;
    await s.read([temp(85)]);
    s.reload(yaml);
    assert.deepEqual(
      alarmEvents(s.events).map((e) => [e.transition, e.timestamp_ms - w0]),
      [["raise", 0], ["clear", 1_000], ["raise", 1_000]],
      "the alarm's raise never earlier than the removal's clear",
    );
    assert.deepEqual(
      interlockEvents(s.events).map((e) => [e.blocking, e.timestamp_ms - w0]),
      [[true, 0], [false, 1_000], [true, 1_000]],
      "the interlock's engage never earlier than the removal's release",
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine records an input gone stale by age as STALE, as GET /v0/state reads it, not the OK it was stored with", async () => {
  const s = await setup(`
alarms:
  - { id: stale, signal: p0/probe/temp, hi: 80 }
`);
  try {
    await s.read([temp(25)]);
    // Nothing answers temp any more: its OK sample ages past the bound (1000 ms here).
    s.fx.clock.mono = s.fx.clock.monoMs() + 1001;
    s.timers.fireDue();
    const raise = alarmEvents(s.events).find((e) => e.alarm_id === "stale");
    assert.equal(raise?.transition, "raise");
    assert.equal(raise?.quality, "STALE", "the raise's quality");
    assert.equal(s.engine.alarm("stale").quality, "STALE", "the alarm's view");
    assert.ok(
      s.lines.some((l) =>
        /alarm stale raised MAJOR \(bad input\): p0\/probe\/temp is stale: its sample is 1001 ms old \(stale after 1000 ms\); last value 25 \(STALE\)$/
          .test(l)
      ),
      s.lines.join("\n"),
    );
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine: an alarm a reload adds on an input already bad runs its delay from when the input went bad, and a reload does not restart a pending delay", async () => {
  const s = await setup(`
alarms:
  - { id: watch, signal: p0/probe/temp, hi: 80, on_bad_quality: ignore }
  - { id: guard, signal: p0/probe/temp, hi: 80, delay_ms: 3000 }
`);
  try {
    s.fx.clock.mono = 1_000;
    await s.read([temp(25, { quality: Q.FAULT })]); // bad from 1000 on
    s.fx.clock.mono = 3_000;
    await s.fx.cache.pollDevice("p0", "probe");
    assert.equal(s.engine.alarm("guard").state, "normal", "2000 ms of 3000");
    // A reload adds an alarm on the same input and changes an unrelated message.
    s.reload(`
alarms:
  - { id: watch, signal: p0/probe/temp, hi: 80, on_bad_quality: ignore, message: changed }
  - { id: guard, signal: p0/probe/temp, hi: 80, delay_ms: 3000 }
  - { id: added, signal: p0/probe/temp, hi: 80, delay_ms: 1500 }
`);
    assert.equal(s.engine.alarm("added").state, "active", "bad for 2000 ms > its 1500 ms delay");
    s.fx.clock.mono = 4_000;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "active", "3000 ms after the input went bad");
  } finally {
    await s.close();
  }
});

Deno.test("AlarmEngine: a reload that tightens the stale bound runs a delayed alarm's delay from the reload, not from when the sample would have gone stale under the new bound", async () => {
  const s = await setup(`
alarms:
  - { id: guard, signal: p0/probe/temp, hi: 80, delay_ms: 500, action: estop }
`);
  try {
    s.fx.clock.mono = 10_000;
    await s.read([temp(25)]);
    // 800 ms later the sample is fresh under the bound in force (1000 ms).
    s.fx.clock.mono = 10_800;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").bad_input, null);
    // A reload tightens health.staleness to 300 ms (applied at once, also in AUTO): the sample is
    // stale from now on. It was usable until now, so the delay runs from now (10800), not from
    // 10300, when it would have gone stale had the new bound been in force.
    s.fx.cache.setStaleness({ warnAfterMs: 0, staleAfterMs: 300 });
    s.engine.evaluateAll(); // as the kernel's health section does
    assert.match(s.engine.alarm("guard").bad_input ?? "", /is stale/);
    assert.equal(s.engine.alarm("guard").state, "normal", "500 ms delay not run yet");
    assert.deepEqual(s.actions, []);
    // The next poll, 200 ms later, answers: fresh again, nothing raised, no e-stop.
    s.fx.clock.mono = 11_000;
    s.timers.fireDue();
    await s.read([temp(25)]);
    assert.deepEqual(alarmEvents(s.events).map((e) => e.transition), []);
    assert.deepEqual(s.actions, []);
    // Unanswered, it raises 500 ms after the bound made it stale (the reload), on time.
    s.fx.clock.mono = 11_300;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "normal", "stale since 11300: 0 ms of 500");
    s.fx.clock.mono = 11_799;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "normal");
    s.fx.clock.mono = 11_801;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "active");
  } finally {
    await s.close();
  }
});

/**
 * A temperature sample received at 10000 and usable at 10800 (the 1000 ms bound); then each of
 * `tightenings` (monotonic time, new health.staleness bound) applied and judged at once, as the
 * kernel's health section does; then a reload adds a delayed e-stop alarm on the temperature,
 * which nothing read before. The sample was usable until the first tightening (10800): the delay
 * (500 ms) runs from then, not from received + a bound, before it.
 */
async function alarmAddedAfterTightenings(tightenings: readonly [number, number][]) {
  const s = await setup(`
alarms:
  - { id: count_watch, signal: p0/probe/count, hi: 100 }
`);
  try {
    s.fx.clock.mono = 10_000;
    await s.read([temp(25)]);
    for (const [at, staleAfterMs] of tightenings) {
      s.fx.clock.mono = at;
      s.timers.fireDue();
      s.fx.cache.setStaleness({ warnAfterMs: 0, staleAfterMs });
      s.engine.evaluateAll();
    }
    s.reload(`
alarms:
  - { id: count_watch, signal: p0/probe/count, hi: 100 }
  - { id: guard, signal: p0/probe/temp, hi: 80, delay_ms: 500, action: estop }
`);
    assert.match(s.engine.alarm("guard").bad_input ?? "", /is stale/);
    assert.equal(s.engine.alarm("guard").state, "normal", "500 ms delay not run yet");
    assert.deepEqual(s.actions, []);
    s.fx.clock.mono = 11_299;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "normal", "stale since 10800: 499 ms of 500");
    assert.deepEqual(s.actions, []);
    s.fx.clock.mono = 11_301;
    s.timers.fireDue();
    assert.equal(s.engine.alarm("guard").state, "active");
  } finally {
    await s.close();
  }
}

Deno.test("AlarmEngine: an alarm the same reload adds on a signal nothing read runs its delay from the reload when that reload tightened the stale bound: the sample was usable until then", async () => {
  // One reload: 1000 -> 300 ms (applied first, kernel.ts), then the alarm added: stale from the
  // reload (10800), not from 10300.
  await alarmAddedAfterTightenings([[10_800, 300]]);
});

Deno.test("AlarmEngine: after two reloads that tighten the stale bound, an alarm the second adds dates a sample the first made stale from the first, not from before it", async () => {
  // 1000 -> 600 ms at 10800 (the sample, 800 ms old, stale from then), 600 -> 300 ms at 10900
  // with the alarm added: stale since 10800, not 10600 (received + 600, before that reload).
  await alarmAddedAfterTightenings([[10_800, 600], [10_900, 300]]);
});

Deno.test("AlarmEngine's interlock input bad_input blames the signal of a comparison whose declared type it cannot take, not the other side", async () => {
  // Nothing polled yet: no sample of either. '>' compares numbers: temp (a double) fits it, mode
  // (declared a string) does not; '==' of two signals of different kinds blames neither alone.
  const fx = await startProgrammable({
    devices: {
      probe: { signals: [{ id: "temp", type: T.DOUBLE }] },
      panel: { signals: [{ id: "mode", type: T.STRING }] },
    },
  }, { inProcess: true });
  const { alarms, interlocks } = configOf(`
interlocks:
  - { id: over, block: [p0/probe/a], while: "p0/probe/temp > p0/panel/mode", message: m }
  - { id: same, block: [p0/probe/b], while: "p0/probe/temp == p0/panel/mode", message: m }
`);
  const engine = new AlarmEngine({
    alarms,
    interlocks,
    cache: fx.cache,
    inventory: new InventoryPort(fx.registry),
    bus: new EventBus(),
    clock: fx.clock,
    log: capturingLogger({ now: () => 0, lines: [] }).log,
    actions: { fault: () => Promise.resolve(), estop: () => Promise.resolve() },
  });
  try {
    engine.start();
    const inputs = (id: string) =>
      engine.interlocks().find((v) => v.id === id)!.inputs.map((i) => [i.signal, i.bad_input]);
    const over = "column 15 of the condition: '>' cannot compare p0/probe/temp (double) with " +
      "p0/panel/mode (string)";
    assert.deepEqual(inputs("over"), [
      ["p0/probe/temp", "p0/probe/temp: no sample in the cache"],
      ["p0/panel/mode", `p0/panel/mode is declared string; ${over}`],
    ]);
    // Why it blocks: mode, whose type stays wrong once samples come, not temp's first sample.
    assert.equal(
      engine.interlocks().find((v) => v.id === "over")!.reason,
      `bad input: p0/panel/mode is declared string; ${over}`,
    );
    const same = "column 15 of the condition: '==' cannot compare p0/probe/temp (double) with " +
      "p0/panel/mode (string)";
    assert.deepEqual(inputs("same"), [
      ["p0/probe/temp", `p0/probe/temp is declared double; ${same}`],
      ["p0/panel/mode", `p0/panel/mode is declared string; ${same}`],
    ]);
  } finally {
    engine.stop();
    await fx.close();
  }
});
