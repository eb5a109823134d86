/**
 * A provider that crash-restarts declaring another unit for a signal (the same type): the value
 * the cache kept from before was polled in the old unit. GET /v0/state labels each value with the
 * unit the signal declares now, so the old value must not be served under the new one (GET
 * /v0/history says that sample was in `unit_before`); a value whose unit held is kept as before.
 * Over real HTTP, the programmable provider as a child process its supervisor restarts.
 */
import assert from "node:assert/strict";
import {
  HOT,
  probeFile,
  probeTempIn,
  restartDeclaringTempIn,
  startRig,
  T0,
} from "../history/_history_helpers.ts";
import { type Inventory, T } from "../helpers/programmable_provider.ts";
import { tempDir, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { alarmsConfig } from "../scenarios/alarms_helpers.ts";
import type { SafeStateExpectation } from "../../src/config/mod.ts";
import { MAX_UNIT_CHANGE_LINES } from "../../src/app/protection_units.ts";

const inventory = (tempUnit: string): Inventory => ({
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE, unit: tempUnit },
        { id: "count", type: T.INT64, unit: "pcs" },
      ],
      values: [],
    },
  },
});

interface StateValue {
  signal_id: string;
  value: unknown;
  unit?: string;
}

Deno.test("a value kept across a rediscovery that changed its signal's unit is not served under the new unit", async () => {
  const dataDir = tempDir("state-unit-change-");
  const file = await probeFile(dataDir, inventory("degF"));
  const rig = await startRig({ dataDir, inventoryFile: file, restart: true });
  try {
    await rig.poll(T0 + 1_000, [
      { id: "temp", type: T.DOUBLE, double: 77, quality: 1 },
      { id: "count", type: T.INT64, int64: "5", quality: 1 },
    ]);
    const before = await rig.json("/v0/state/p0/probe");
    assert.deepEqual(
      before.values.map((v: StateValue) => [v.signal_id, v.value, v.unit]),
      [
        ["temp", { type: "double", double: 77 }, "degF"],
        ["count", { type: "int64", int64: 5 }, "pcs"],
      ],
    );
    // temp is declared in degC now: the provider restarts (function 3 exits) and describes it so.
    // The new process answers no value yet (its answer lists none): nothing replaces the kept one.
    await probeFile(dataDir, inventory("degC"));
    const host = rig.rt.registry.host("p0")!;
    const pid = host.session!.pid;
    await host.request("call", { device_id: "probe", function_id: 3, args: {} });
    await waitFor("rediscovered", () => host.available && host.session!.pid !== pid);
    rig.clock.wallMs = T0 + 2_000;
    await rig.rt.cache.pollDevice("p0", "probe");

    // History: the 77 was recorded in degF (the change to degC came after it).
    const history = await rig.json(`/v0/history/p0/probe?signal_id=temp&since_ms=${T0}`);
    assert.equal(history.signals[0].unit, "degC");
    assert.deepEqual(
      history.signals[0].unit_changes.map((c: { unit_before: string; unit: string }) => [
        c.unit_before,
        c.unit,
      ]),
      [["degF", "degC"]],
    );

    const after = await rig.json("/v0/state/p0/probe");
    const temp = after.values.find((v: StateValue) => v.signal_id === "temp");
    assert.ok(
      temp === undefined || (temp.value as { type: string }).type === "unknown",
      `temp's degF value is not served as degC: ${JSON.stringify(temp)}`,
    );
    // A signal whose unit held keeps its last value (its quality the outage's).
    const count = after.values.find((v: StateValue) => v.signal_id === "count");
    assert.deepEqual([count.value, count.unit], [{ type: "int64", int64: 5 }, "pcs"]);
    assert.equal(rig.rt.cache.signal("p0", "probe", "temp"), undefined);
  } finally {
    await rig.rt.stop();
  }
});

/**
 * The protections on the probe, through the real loader (their lines and columns noted): an alarm
 * and an interlock comparing temp with numbers, an alarm on count (whose unit holds), an interlock
 * comparing temp with count only, and one comparing it with both a number and count.
 */
const PROTECTIONS = alarmsConfig(
  `
alarms:
  - { id: hot, signal: p0/probe/temp, hi: 50 }
  - { id: many, signal: p0/probe/count, hi: 100 }
interlocks:
  - id: cool_first
    block: [p0/probe/*]
    while: 'p0/probe/temp > 80 or bad(p0/probe/count)'
    message: the probe cools first
  - id: count_leads
    block: [p0/probe/*]
    while: 'p0/probe/temp > p0/probe/count'
    message: the count leads the temperature
  - id: both_sides
    block: [p0/probe/*]
    while: 'p0/probe/temp > 90 and p0/probe/count < p0/probe/temp'
    message: hot and behind
`,
  ["p0"],
);

/** An expectation built in code: no position in a file. */
const TEMP_AT_MOST_100: SafeStateExpectation = {
  signal: "p0/probe/temp",
  providerId: "p0",
  deviceId: "probe",
  signalId: "temp",
  min: 0,
  max: 100,
  path: "safety.safe_state.expect[0]",
};

const UNIT_CHANGED = "declared unit changed";

/** The text of a WARN line (its level and time cut). */
function warnText(line: string): string {
  const m = /^WARN +\S+ (.*)$/.exec(line);
  assert.ok(m, `a WARN line: ${line}`);
  return m[1]!;
}

/** The line ProtectionUnits writes for one protection comparing temp with `compared`. */
function unitLine(
  what: string,
  before: string,
  now: string,
  cause: string,
  compared = "numbers of the file",
): string {
  return `${what} compares p0/probe/temp with ${compared}, and its declared unit changed ` +
    `from "${before}" to "${now}" (${cause}): they now compare in "${now}"; check them`;
}

/** The lines for the PROTECTIONS and TEMP_AT_MOST_100 of a change of temp's unit. */
function protectionLines(before: string, now: string, cause: string): string[] {
  return [
    unitLine("alarms[0] (line 4:5): alarm hot", before, now, cause),
    unitLine("interlocks[0] (line 7:5): interlock cool_first", before, now, cause),
    // Compared with another signal, not with numbers: the line says which.
    unitLine(
      "interlocks[1] (line 11:5): interlock count_leads",
      before,
      now,
      cause,
      "signal p0/probe/count",
    ),
    unitLine(
      "interlocks[2] (line 15:5): interlock both_sides",
      before,
      now,
      cause,
      "numbers of the file and with signal p0/probe/count",
    ),
    unitLine("safety.safe_state.expect[0]: expectation", before, now, cause),
  ];
}

Deno.test("Kernel warns once per protection comparing a signal a rediscovery declares in another unit, naming what it compares it with (numbers of the file, another signal); start-up and an unchanged restart say nothing", async () => {
  const dataDir = tempDir("protection-unit-change-");
  const file = await probeFile(dataDir, inventory("degF"));
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = await startRig({
    dataDir,
    inventoryFile: file,
    restart: true,
    host: { log },
    alarms: PROTECTIONS.alarms,
    interlocks: PROTECTIONS.interlocks,
    safety: { expect: [TEMP_AT_MOST_100] },
  });
  const said = () => lines.filter((l) => l.includes(UNIT_CHANGED)).map(warnText);
  try {
    assert.deepEqual(said(), [], "start-up says nothing");
    const host = rig.rt.registry.host("p0")!;
    /** p0 exits (function 3) with temp declared in `unit` in its file; its supervisor restarts it. */
    const restart = async (unit: string) => {
      await probeFile(dataDir, inventory(unit));
      const pid = host.session!.pid;
      await host.request("call", { device_id: "probe", function_id: 3, args: {} });
      await waitFor(`rediscovered (${unit})`, () => host.available && host.session!.pid !== pid);
    };
    const cause = "inventory of p0 changed";

    const perChange = protectionLines("degF", "degC", cause).length;
    await restart("degC");
    await waitFor("the unit change said", () => said().length >= perChange);
    assert.deepEqual(said(), protectionLines("degF", "degC", cause));

    // The same unit again says nothing; the way back is a change of its own.
    await restart("degC");
    await restart("degF");
    await waitFor("the way back said", () => said().length >= 2 * perChange);
    assert.deepEqual(said().slice(perChange), protectionLines("degC", "degF", cause));
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("Kernel names at most MAX_UNIT_CHANGE_LINES protections per unit change, the rest counted; a unit declared for the first time (a reload restarting the provider) is a change", async () => {
  const dataDir = tempDir("protection-unit-many-");
  const inventoryFile = await probeFile(dataDir, probeTempIn(""));
  const alarms = Array.from(
    { length: MAX_UNIT_CHANGE_LINES + 1 },
    (_, i) => ({ ...HOT, id: `hot${i}`, path: `alarms[${i}]` }),
  );
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = await startRig({ dataDir, inventoryFile, host: { log }, alarms });
  const said = () => lines.filter((l) => l.includes(UNIT_CHANGED)).map(warnText);
  try {
    await restartDeclaringTempIn(rig, probeTempIn("degC"), "degC");
    await waitFor("the unit change said", () => said().length >= MAX_UNIT_CHANGE_LINES + 1);
    const all = said();
    assert.equal(all.length, MAX_UNIT_CHANGE_LINES + 1, all.join("\n"));
    // Said at the reload's end, or by the rediscovery after it: once either way.
    const cause = /\((configuration reload|inventory of p0 changed)\)/.exec(all[0]!)![1]!;
    assert.deepEqual(
      all.slice(0, MAX_UNIT_CHANGE_LINES),
      alarms.slice(0, MAX_UNIT_CHANGE_LINES).map((a) =>
        unitLine(`${a.path}: alarm ${a.id}`, "", "degC", cause)
      ),
    );
    assert.equal(
      all[MAX_UNIT_CHANGE_LINES],
      `and 1 more protection(s) compare a signal whose declared unit changed (${cause}); ` +
        `named up to ${MAX_UNIT_CHANGE_LINES} (MAX_UNIT_CHANGE_LINES)`,
    );
  } finally {
    await rig.rt.stop();
  }
});

Deno.test("Kernel warns for an alarm a reload moves to a signal that the same reload's provider restart declares in another unit: its numbers were written against the unit declared before", async () => {
  const dataDir = tempDir("protection-unit-retarget-");
  const inventoryFile = await probeFile(dataDir, inventory("degF"));
  // hot compares count (pcs) at start; temp (degF) is compared by no protection.
  const onCount: typeof HOT = {
    ...HOT,
    signal: "p0/probe/count",
    signalId: "count",
    limits: { hi: 100 },
  };
  const { log, lines } = capturingLogger({ level: "info" });
  const rig = await startRig({ dataDir, inventoryFile, host: { log }, alarms: [onCount] });
  const said = () => lines.filter((l) => l.includes(UNIT_CHANGED)).map(warnText);
  try {
    // One reload: hot moved to temp (its limit read off the degF the runtime declares now) and
    // p0 restarted, its file now declaring temp in degC.
    await probeFile(dataDir, inventory("degC"));
    const config = rig.rt.config;
    const p0 = config.providers[0]!;
    const report = await rig.rt.reload({
      ...config,
      providers: [{ ...p0, args: [...p0.args, "--restarted"] }],
      alarms: [HOT],
    });
    assert.deepEqual(report.providers.restarted, ["p0"]);
    assert.ok(report.applied.includes("alarms"), JSON.stringify(report));
    await waitFor(
      "temp declared in degC",
      () =>
        rig.rt.inventory.capabilities("p0", "probe")?.signals.find((s) => s.signalId === "temp")
          ?.unit === "degC",
    );
    await waitFor("the unit change said", () => said().length >= 1, 3000).catch(() => {});
    const all = said();
    assert.equal(all.length, 1, `one line for alarm hot, said: ${JSON.stringify(all)}`);
    // Said at the reload's end, or by the rediscovery after it: once either way.
    const cause = /\((configuration reload|inventory of p0 changed)\)/.exec(all[0]!)![1]!;
    assert.deepEqual(all, [unitLine("alarms[0]: alarm hot", "degF", "degC", cause)]);
  } finally {
    await rig.rt.stop();
  }
});
