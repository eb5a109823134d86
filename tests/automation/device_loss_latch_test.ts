/**
 * DeviceLossLatch on its own, with fakes for the device outages and the modes: what a "down"
 * latches, the router gate's refusal (automated calls to a latched device only), the release on
 * entering AUTO, the forced FAULT in AUTO and its reset, and dispose.
 */
import assert from "node:assert/strict";
import { deviceCapabilities } from "../helpers/capabilities.ts";
import type { Clock, DeviceCapabilities, FunctionSpec, Logger } from "../../src/common/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import type { RuntimeMode } from "../../src/config/mod.ts";
import {
  DeviceLossLatch,
  MAX_KEPT_LINES_PER_PROVIDER,
  MAX_LATCHED_DEVICES_PER_PROVIDER,
} from "../../src/automation/mod.ts";
import type { AuditOrigin, CallOrigin } from "../../src/control/mod.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import type { DeviceConditionChange, DeviceConditionListener } from "../../src/state/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";

const WALL_MS = 1_767_000_000_000;

function rig(
  o: { mode?: RuntimeMode; dependsOn?: string[]; failFault?: boolean; log?: Logger } = {},
) {
  const listeners = new Set<DeviceConditionListener>();
  const faults: Array<[string, AuditOrigin | undefined]> = [];
  let mode: RuntimeMode = o.mode ?? "AUTO";
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  let wall = WALL_MS + 5;
  const clock: Clock = {
    nowMs: () => wall,
    monoMs: () => 0,
    setTimer: () => 0,
    clearTimer: () => {},
  };
  const latch = new DeviceLossLatch({
    outages: {
      condition: () => ({ kind: "up", reason: "", sinceMono: null }),
      onChange: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
    },
    modes: {
      current: () => mode,
      forceFault: (reason, source) => {
        faults.push([reason, source]);
        mode = "FAULT";
        return o.failFault ? Promise.reject(new Error("hooks failed")) : Promise.resolve(true);
      },
    },
    bus,
    clock,
    log: o.log ?? testLogger(),
    treeDependsOn: (h) => (o.dependsOn ?? []).includes(h),
  });
  const lose = (deviceId: string, atWallMs = WALL_MS, kind: "down" | "failing" = "down") => {
    const change: DeviceConditionChange = {
      providerId: "sim0",
      deviceId,
      previous: "up",
      condition: { kind, reason: "its reads fail", sinceMono: 0 },
      atWallMs,
    };
    for (const l of [...listeners]) l(change);
  };
  const latchEvents = () =>
    events.filter((e) => e.kind === "device_loss_latch").map((e) =>
      e.kind === "device_loss_latch" && [e.device_id, e.latched, e.reason, e.timestamp_ms]
    );
  return {
    latch,
    lose,
    faults,
    latchEvents,
    listeners,
    setMode: (m: RuntimeMode) => (mode = m),
    /** Sets the wall clock (a step back: NTP). */
    setWall: (ms: number) => (wall = ms),
  };
}

const FN: FunctionSpec = {
  functionId: 1,
  name: "set_motor_duty",
  description: "",
  category: "ACTUATE",
  actuating: true,
  args: [],
};

function ctx(deviceId: string, origin: CallOrigin) {
  const device: DeviceCapabilities = deviceCapabilities("sim0", deviceId);
  return { fn: FN, device, origin };
}

Deno.test("DeviceLossLatch latches each device once when it goes down, not when it is failing", () => {
  const r = rig({ mode: "MANUAL" });
  r.lose("motorctl0", WALL_MS, "failing");
  assert.deepEqual(r.latch.latched(), []);
  r.lose("motorctl0", WALL_MS);
  r.lose("tempctl0", WALL_MS + 1);
  r.lose("motorctl0", WALL_MS + 2); // down again while latched: nothing new
  assert.deepEqual(r.latch.latched(), ["sim0/motorctl0", "sim0/tempctl0"]);
  assert.deepEqual(r.latch.entries(), [
    { providerId: "sim0", deviceId: "motorctl0", atMs: WALL_MS, reason: "its reads fail" },
    { providerId: "sim0", deviceId: "tempctl0", atMs: WALL_MS + 1, reason: "its reads fail" },
  ]);
  assert.deepEqual(r.latchEvents(), [
    ["motorctl0", true, "its reads fail", WALL_MS],
    ["tempctl0", true, "its reads fail", WALL_MS + 1],
  ]);
  assert.deepEqual(r.faults, [], "outside AUTO nothing is forced");
  assert.equal(r.latch.forcedFault, null);
});

Deno.test("DeviceLossLatch: a device latched as a reload took its provider out to restart it says why it stays lost once the restart failed", () => {
  const r = rig({ mode: "MANUAL" });
  const tell = (change: Omit<DeviceConditionChange, "providerId" | "deviceId">) => {
    for (const l of [...r.listeners]) l({ providerId: "sim0", deviceId: "motorctl0", ...change });
  };
  const restarting = "provider sim0 is being restarted by a configuration reload";
  tell({
    previous: "up",
    condition: { kind: "down", reason: restarting, sinceMono: 0, reloading: true },
    atWallMs: WALL_MS,
  });
  const failed = "provider sim0 failed to start at a configuration reload (no such file)";
  tell({
    previous: "down",
    previousReloading: true,
    condition: { kind: "down", reason: failed, sinceMono: 0 },
    atWallMs: WALL_MS + 500,
  });
  // Latched at the take-out, dated so; its reason is the failure's (status, the gate's refusal).
  assert.deepEqual(r.latch.entries(), [
    { providerId: "sim0", deviceId: "motorctl0", atMs: WALL_MS, reason: failed },
  ]);
  assert.match(r.latch.gate(ctx("motorctl0", "automated"))!.message, /failed to start at a/);
  assert.deepEqual(r.latchEvents(), [["motorctl0", true, restarting, WALL_MS]], "latched once");
});

Deno.test("DeviceLossLatch gate refuses automated calls to a latched device only, naming it and the function", () => {
  const r = rig({ mode: "MANUAL" });
  assert.equal(r.latch.gate(ctx("motorctl0", "automated")), null, "nothing latched");
  r.lose("motorctl0");
  const refused = r.latch.gate(ctx("motorctl0", "automated"));
  assert.equal(refused?.code, "FAILED_PRECONDITION");
  assert.equal(
    refused?.message,
    "Device-loss latch: sim0/motorctl0 was lost (its reads fail at " +
      `${new Date(WALL_MS).toISOString()}); automation may not command it until an operator ` +
      "enters AUTO again (set_motor_duty refused)",
  );
  assert.equal(r.latch.gate(ctx("tempctl0", "automated")), null, "another device");
  for (const origin of ["manual", "hook", "safety"] as const) {
    assert.equal(r.latch.gate(ctx("motorctl0", origin)), null, origin);
  }
});

Deno.test("DeviceLossLatch releases every latch when AUTO is entered, not on other changes", () => {
  const r = rig({ mode: "MANUAL" });
  r.lose("motorctl0");
  r.latch.onModeChange({ previous: "IDLE", current: "MANUAL" });
  r.latch.onModeChange({ previous: "AUTO", current: "AUTO" });
  assert.deepEqual(r.latch.latched(), ["sim0/motorctl0"]);
  r.latch.onModeChange({ previous: "MANUAL", current: "AUTO" });
  assert.deepEqual(r.latch.latched(), []);
  assert.equal(r.latch.gate(ctx("motorctl0", "automated")), null);
  assert.deepEqual(r.latchEvents(), [
    ["motorctl0", true, "its reads fail", WALL_MS],
    ["motorctl0", false, "AUTO entered again", WALL_MS + 5],
  ]);
});

Deno.test("DeviceLossLatch dates a device's latch and release no earlier than the one before it when the wall clock steps back (NTP)", () => {
  const r = rig({ mode: "MANUAL" });
  r.lose("motorctl0", WALL_MS);
  // NTP steps the wall clock back 10 s: entering AUTO releases it no earlier than its latch.
  r.setWall(WALL_MS - 10_000);
  r.latch.onModeChange({ previous: "MANUAL", current: "AUTO" });
  // Lost again, then another device: the first's latch no earlier than its release, the
  // other's at its own time (it has no transition before it).
  r.lose("motorctl0", WALL_MS - 9_000);
  r.lose("tempctl0", WALL_MS - 9_000);
  assert.deepEqual(r.latch.entries().map((e) => [e.deviceId, e.atMs - WALL_MS]), [
    ["motorctl0", 0],
    ["tempctl0", -9_000],
  ]);
  assert.match(
    r.latch.gate(ctx("motorctl0", "automated"))?.message ?? "",
    new RegExp(`at ${new Date(WALL_MS).toISOString()}`),
    "the refusal names the latch's date",
  );
  r.setWall(WALL_MS + 1_000); // past them again: the clock's own time
  r.latch.onModeChange({ previous: "MANUAL", current: "AUTO" });
  // Latched, stepped back, removed with its provider: the release is dated as well; a provider
  // configured again under the id brings a new device, dated no earlier than that release (its
  // events follow under the same handle).
  r.lose("motorctl0", WALL_MS + 2_000);
  r.setWall(WALL_MS - 20_000);
  r.latch.forgetProvider("sim0");
  r.lose("motorctl0", WALL_MS - 20_000);
  assert.deepEqual(
    r.latchEvents().map((e) => e && [e[0], e[1], (e[3] as number) - WALL_MS]),
    [
      ["motorctl0", true, 0],
      ["motorctl0", false, 0],
      ["motorctl0", true, 0],
      ["tempctl0", true, -9_000],
      ["motorctl0", false, 1_000],
      ["tempctl0", false, 1_000],
      ["motorctl0", true, 2_000],
      ["motorctl0", false, 2_000],
      ["motorctl0", true, 2_000],
    ],
    "never earlier than the device's transition before it; the clock's own time once later",
  );
});

Deno.test("DeviceLossLatch forces FAULT for a device the tree depends on in AUTO, and forgets it once FAULT is left", async () => {
  const r = rig({ mode: "AUTO", dependsOn: ["sim0/motorctl0"] });
  r.lose("tempctl0"); // not in the tree: latched, no FAULT
  assert.deepEqual(r.faults, []);
  r.lose("motorctl0");
  assert.deepEqual(r.faults, [[
    "device-loss latch: sim0/motorctl0 is down (its reads fail)",
    { kind: "device_loss", device_handle: "sim0/motorctl0" },
  ]]);
  assert.equal(r.latch.forcedFault, "sim0/motorctl0");
  r.latch.onModeChange({ previous: "AUTO", current: "FAULT" });
  assert.equal(r.latch.forcedFault, "sim0/motorctl0");
  r.latch.onModeChange({ previous: "FAULT", current: "MANUAL" });
  assert.equal(r.latch.forcedFault, null);
  await Promise.resolve();
});

Deno.test("DeviceLossLatch keeps the latch when forcing FAULT fails (the rejection is handled)", async () => {
  const r = rig({ mode: "AUTO", dependsOn: ["sim0/motorctl0"], failFault: true });
  r.lose("motorctl0");
  await new Promise((res) => setTimeout(res, 0));
  assert.deepEqual(r.latch.latched(), ["sim0/motorctl0"]);
  assert.equal(r.faults.length, 1);
});

Deno.test("DeviceLossLatch.dispose stops following outages", () => {
  const r = rig({ mode: "MANUAL" });
  assert.equal(r.listeners.size, 1);
  r.latch.dispose();
  assert.equal(r.listeners.size, 0);
  r.lose("motorctl0");
  assert.deepEqual(r.latch.latched(), []);
});

Deno.test("DeviceLossLatch forces FAULT and announces the latch when its logger throws on every WARN and ERROR line", () => {
  const thrown: string[] = [];
  const r = rig({
    dependsOn: ["sim0/motorctl0"],
    log: new LineLogger({
      level: "debug",
      journald: false,
      now: () => 0,
      write: (line, level) => {
        if (level === "warn" || level === "error") {
          thrown.push(line);
          throw new Error("stderr is closed");
        }
      },
    }),
  });
  try {
    r.lose("motorctl0");
  } catch { /* DeviceOutages contains a listener that throws: what it did not do is lost */ }
  assert.ok(thrown.some((l) => l.includes('latched "sim0/motorctl0"')), "the WARN line threw");
  assert.deepEqual(
    r.faults.map(([reason]) => reason),
    ["device-loss latch: sim0/motorctl0 is down (its reads fail)"],
    "a device the tree depends on lost in AUTO forces FAULT, whatever the logger does",
  );
  assert.deepEqual(r.latchEvents(), [["motorctl0", true, "its reads fail", WALL_MS]]);
});

Deno.test("DeviceLossLatch quotes a provider-sent device id in its log lines, cut to 64 characters", () => {
  const forged = 'm"0\nERROR forged';
  const long = "L".repeat(10_000);
  const { log, lines } = capturingLogger({ now: () => 0 });
  const r = rig({ dependsOn: [`sim0/${forged}`], log });
  r.lose(forged);
  r.lose(long);
  r.setMode("MANUAL");
  r.latch.onModeChange({ previous: "MANUAL", current: "AUTO" } as never);
  const cut = `"sim0/${"L".repeat(64)}\u2026"`;
  assert.deepEqual(lines.map((l) => `${l.slice(0, 5)} ${l.split("[device-loss] ")[1]}`), [
    `WARN  latched "sim0/m\\"0\\nERROR forged": its reads fail; automation may not command it ` +
    "until AUTO is entered again",
    `ERROR device-loss latch: "sim0/m\\"0\\nERROR forged" is down (its reads fail): forcing FAULT; ` +
    "the tree is halted until an operator re-arms",
    `WARN  latched ${cut}: its reads fail; automation may not command it until AUTO is entered again`,
    `INFO  released "sim0/m\\"0\\nERROR forged": AUTO entered again`,
    `INFO  released ${cut}: AUTO entered again`,
  ]);
  assert.deepEqual(r.latch.latched(), [], "the ids themselves are kept as sent");
  assert.deepEqual(r.faults.map(([reason]) => reason), [
    `device-loss latch: sim0/${forged} is down (its reads fail)`,
  ]);
});

/**
 * A provider that renames its one device at each restart (`dev<n>`): the device of each process
 * before is never listed again, so it stays down, and latched. The latch's own state, with the
 * device conditions of such a provider: `listed` are up (failing if also `failing`: reads fail, not
 * for the bound yet), every other device is down (not listed).
 */
function renamingRig(o: { devicesOf?: boolean } = {}) {
  const listeners = new Set<DeviceConditionListener>();
  const listed = new Set<string>();
  /** Listed devices whose reads fail (not for the bound yet: failing, not down, not lost). */
  const failing = new Set<string>();
  /** Told at a (re)discovery of sim0 (the inventory's `changed` / `unchanged`). */
  const listedListeners = new Set<(providerId: string) => void>();
  /** Whether a reload removed sim0 (its devices are then unconfigured). */
  let removed = false;
  let wall = WALL_MS;
  let mode: RuntimeMode = "MANUAL";
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe((e) => events.push(e.event));
  /** Every line, as `LEVEL message`. */
  const lines: string[] = [];
  const logger: Logger = {
    debug: (m) => lines.push(`DEBUG ${m}`),
    info: (m) => lines.push(`INFO ${m}`),
    warn: (m) => lines.push(`WARN ${m}`),
    error: (m) => lines.push(`ERROR ${m}`),
    child: () => logger,
  };
  const latch = new DeviceLossLatch({
    outages: {
      condition: (_p, d) =>
        removed
          ? {
            kind: "down",
            reason: "provider sim0 is not configured",
            sinceMono: 0,
            unconfigured: true,
          }
          : listed.has(d) && failing.has(d)
          ? { kind: "failing", reason: "its reads fail", sinceMono: 0 }
          : listed.has(d)
          ? { kind: "up", reason: "", sinceMono: null }
          : { kind: "down", reason: "not in the inventory of provider sim0", sinceMono: 0 },
      onChange: (l) => {
        listeners.add(l);
        return () => listeners.delete(l);
      },
    },
    modes: {
      current: () => mode,
      forceFault: () => Promise.resolve(true),
    },
    ...(o.devicesOf === false ? {} : { devicesOf: () => [...listed] }),
    onListed: (l) => {
      listedListeners.add(l);
      return () => listedListeners.delete(l);
    },
    bus,
    clock: { nowMs: () => wall, monoMs: () => 0, setTimer: () => 0, clearTimer: () => {} },
    log: logger,
    treeDependsOn: () => false,
  });
  const down = (deviceId: string, reason: string) => {
    const change: DeviceConditionChange = {
      providerId: "sim0",
      deviceId,
      previous: "up",
      condition: { kind: "down", reason, sinceMono: 0 },
      atWallMs: wall,
    };
    for (const l of [...listeners]) l(change);
  };
  /** Restart n: the process before (listing dev<n-1>) goes, the new one lists dev<n>. */
  const restart = (n: number) => {
    listed.clear();
    down(`dev${n - 1}`, "provider sim0 is unavailable (RESTARTING)");
    listed.add(`dev${n}`);
  };
  const enterAuto = () => {
    mode = "AUTO";
    latch.onModeChange({ previous: "MANUAL", current: "AUTO" });
    mode = "MANUAL";
    latch.onModeChange({ previous: "AUTO", current: "MANUAL" });
  };
  /** The device_loss_latch events: `device latched|released (reason)[ provider_wide] @time`. */
  const latchEvents = () =>
    events.flatMap((e) =>
      e.kind === "device_loss_latch"
        ? [
          `${e.device_id} ${e.latched ? "latched" : "released"} (${e.reason})${
            e.provider_wide ? " provider_wide" : ""
          } @${e.timestamp_ms - WALL_MS}`,
        ]
        : []
    );
  /** sim0 is (re)discovered, listing `listed`. */
  const rediscover = () => {
    for (const l of [...listedListeners]) l("sim0");
  };
  return {
    latch,
    listed,
    failing,
    rediscover,
    lines,
    restart,
    enterAuto,
    down,
    latchEvents,
    /** A reload removes sim0: its devices are unconfigured from now on. */
    remove: () => (removed = true),
    /** A later reload configures sim0 again (new devices, listed as `listed` says). */
    configureAgain: () => (removed = false),
    /** Sets the wall clock (a step back: NTP). */
    setWall: (ms: number) => (wall = ms),
  };
}

Deno.test("DeviceLossLatch holds a provider renaming its devices at each restart in bounded state, refusing every lost device, with a bounded WARN at each AUTO entry", () => {
  const r = renamingRig();
  r.listed.add("dev0");
  const RESTARTS = 1000;
  const warnsAtEntries: number[] = [];
  for (let n = 1; n <= RESTARTS; n++) {
    r.restart(n);
    if (n % 100 === 0) {
      const before = r.lines.length;
      r.enterAuto();
      warnsAtEntries.push(r.lines.slice(before).filter((l) => l.startsWith("WARN")).length);
    }
  }
  // Every device lost is down (never listed again): none may be released, yet what the latch
  // holds one by one is bounded -- the cap (64) per provider, the rest as one provider entry.
  const held = r.latch.entries().length;
  assert.ok(held <= 64, `the latch names ${held} devices of one provider`);
  for (const warns of warnsAtEntries) {
    assert.ok(warns <= 5, `${warns} WARN lines at one entry into AUTO`);
  }
  // Nothing is released: the first device lost, the latest, and one in between are refused.
  for (const id of ["dev0", "dev500", `dev${RESTARTS - 1}`]) {
    const refused = r.latch.gate(ctx(id, "automated"));
    assert.equal(refused?.code, "FAILED_PRECONDITION", `${id}: ${refused?.message}`);
  }
  // The device listed now is up, and was up at the last entry into AUTO: it may be commanded.
  assert.equal(r.latch.gate(ctx(`dev${RESTARTS}`, "automated")), null);
});

Deno.test("DeviceLossLatch's provider-wide entry: counted in status, refuses a held device that comes back until AUTO is entered while it is up, and one lost again", () => {
  const r = renamingRig();
  r.listed.add("dev0");
  for (let n = 1; n <= MAX_LATCHED_DEVICES_PER_PROVIDER + 10; n++) r.restart(n);
  assert.equal(r.latch.entries().length, MAX_LATCHED_DEVICES_PER_PROVIDER);
  const [wide] = r.latch.providerEntries();
  assert.equal(wide?.providerId, "sim0");
  assert.equal(wide?.losses, 10);
  assert.equal(wide?.lastDeviceId, `dev${MAX_LATCHED_DEVICES_PER_PROVIDER + 9}`);
  assert.equal(wide?.exempt, 0);
  // Before any entry into AUTO, even the device listed now (never lost) may be one held.
  assert.equal(r.latch.gate(ctx("dev74", "automated"))?.code, "FAILED_PRECONDITION");
  assert.equal(r.latch.gate(ctx("dev74", "manual")), null, "manual calls are exempt");
  r.enterAuto();
  assert.equal(r.latch.providerEntries()[0]?.exempt, 1);
  assert.equal(r.latch.gate(ctx("dev74", "automated")), null, "up at the entry");
  // A held device back after the entry (listed again) stays refused until the next entry.
  r.listed.add("dev70");
  const refused = r.latch.gate(ctx("dev70", "automated"));
  assert.match(
    refused?.message ?? "",
    new RegExp(
      `^Device-loss latch: more than ${MAX_LATCHED_DEVICES_PER_PROVIDER} devices of sim0 ` +
        "were lost \\(10 held as one entry, the latest sim0/dev73: provider sim0 is " +
        "unavailable \\(RESTARTING\\) at .*\\) and sim0/dev70 was not listed and up when " +
        "the entry was made or AUTO was last entered, or was lost since: it may be one of " +
        "them; .* \\(set_motor_duty refused\\)$",
    ),
  );
  r.enterAuto();
  assert.equal(r.latch.gate(ctx("dev70", "automated")), null);
  // Lost again: held again (one more loss), refused again.
  r.listed.delete("dev70");
  r.down("dev70", "its reads fail");
  assert.equal(r.latch.providerEntries()[0]?.losses, 11);
  assert.equal(r.latch.gate(ctx("dev70", "automated"))?.code, "FAILED_PRECONDITION");
  // Without the listing, an entry into AUTO exempts nothing.
  const blind = renamingRig({ devicesOf: false });
  blind.listed.add("dev0");
  for (let n = 1; n <= MAX_LATCHED_DEVICES_PER_PROVIDER + 1; n++) blind.restart(n);
  blind.enterAuto();
  assert.equal(blind.latch.gate(ctx("dev65", "automated"))?.code, "FAILED_PRECONDITION");
});

Deno.test("DeviceLossLatch's WARN at an entry into AUTO: one per device kept up to a few per provider, then one line for the provider", () => {
  const few = renamingRig();
  few.listed.add("dev0");
  for (let n = 1; n <= MAX_KEPT_LINES_PER_PROVIDER; n++) few.restart(n);
  few.enterAuto();
  assert.deepEqual(
    few.lines.filter((l) => l.includes("kept")),
    ["dev0", "dev1", "dev2"].map((d) =>
      `WARN kept "sim0/${d}" latched: AUTO entered while it is still down`
    ),
  );
  const many = renamingRig();
  many.listed.add("dev0");
  for (let n = 1; n <= 10; n++) many.restart(n);
  many.enterAuto();
  const kept = many.lines.filter((l) => l.includes("kept"));
  assert.equal(kept.length, 1, kept.join("\n"));
  assert.match(
    kept[0]!,
    /^WARN kept 10 devices of provider sim0 latched: AUTO entered while they are still down \("sim0\/dev0", "sim0\/dev1", "sim0\/dev2" and 7 more\)$/,
  );
});

/** The renaming provider past the bound: dev0..dev63 latched by name, dev64..dev73 held. */
function pastTheBound() {
  const r = renamingRig();
  r.listed.add("dev0");
  for (let n = 1; n <= MAX_LATCHED_DEVICES_PER_PROVIDER + 10; n++) r.restart(n);
  return r;
}

Deno.test("DeviceLossLatch announces the end of its provider-wide entry when a reload removes the provider, as a named device's release", () => {
  const LAST = `dev${MAX_LATCHED_DEVICES_PER_PROVIDER + 9}`;
  for (const how of ["forgetProvider", "unconfigured"] as const) {
    const r = pastTheBound();
    const latches = r.latchEvents();
    assert.equal(latches.length, MAX_LATCHED_DEVICES_PER_PROVIDER + 10);
    assert.equal(
      latches.at(-1),
      `${LAST} latched (provider sim0 is unavailable (RESTARTING)) provider_wide @0`,
    );
    assert.equal(latches[0], "dev0 latched (provider sim0 is unavailable (RESTARTING)) @0");
    const before = latches.length;
    // The wall clock stepped back (NTP): the release is dated no earlier than the latches.
    r.setWall(WALL_MS - 60_000);
    r.remove();
    if (how === "forgetProvider") r.latch.forgetProvider("sim0");
    else assert.deepEqual(r.latch.providerEntries(), [], "a status read lets it go");
    const released = r.latchEvents().slice(before);
    assert.equal(
      released.length,
      MAX_LATCHED_DEVICES_PER_PROVIDER + 1,
      `${how}: ${released.join("\n")}`,
    );
    assert.equal(released[0], "dev0 released (its provider is no longer configured) @0", how);
    // Every device the entry held ends with it: one release, provider-wide, naming the latest.
    assert.equal(
      released.at(-1),
      `${LAST} released (its provider is no longer configured) provider_wide @0`,
      how,
    );
    assert.ok(
      r.lines.includes(
        `INFO released the provider-wide latch of "sim0/${LAST}" and 9 more lost device(s) of ` +
          "its provider: its provider is no longer configured",
      ),
      r.lines.filter((l) => l.startsWith("INFO")).join("\n"),
    );
    assert.deepEqual(r.latch.providerEntries(), []);
  }
});

Deno.test("DeviceLossLatch announces the release of each device an entry into AUTO exempts from a provider-wide entry, once", () => {
  const r = pastTheBound();
  const before = r.latchEvents().length;
  r.enterAuto();
  // The one device up (never lost, but refused since the entry was made) is exempted: released.
  // Of the named ones none is back (each stays latched).
  assert.deepEqual(r.latchEvents().slice(before), ["dev74 released (AUTO entered again) @0"]);
  assert.ok(
    r.lines.includes(
      'INFO released "sim0/dev74" from its provider\'s provider-wide latch: AUTO entered again',
    ),
    r.lines.join("\n"),
  );
  // A held device back, and one more device listed: both released at the next entry; dev74,
  // exempt already, is not announced again.
  r.listed.add("dev70");
  r.listed.add("dev99");
  const second = r.latchEvents().length;
  r.enterAuto();
  assert.deepEqual(r.latchEvents().slice(second), [
    "dev70 released (AUTO entered again) @0",
    "dev99 released (AUTO entered again) @0",
  ]);
  assert.equal(r.latch.gate(ctx("dev70", "automated")), null);
  // Lost again: held again, and its latch is announced again, dated no earlier than its release
  // (the wall clock stepped back: NTP).
  r.setWall(WALL_MS - 60_000);
  r.listed.delete("dev70");
  const third = r.latchEvents().length;
  r.down("dev70", "its reads fail");
  assert.deepEqual(r.latchEvents().slice(third), [
    "dev70 latched (its reads fail) provider_wide @0",
  ]);
  // Past a few devices exempted anew, one line for the provider.
  for (let i = 0; i < 5; i++) r.listed.add(`new${i}`);
  r.listed.add("dev70");
  const fourth = r.lines.length;
  r.enterAuto();
  const infos = r.lines.slice(fourth).filter((l) => l.startsWith("INFO released"));
  assert.deepEqual(infos.length, 1, infos.join("\n"));
  assert.match(
    infos[0]!,
    /^INFO released 6 devices of provider sim0 from its provider-wide latch: AUTO entered again while they are up \("sim0\/new0", "sim0\/new1", "sim0\/new2" and 3 more\)$/,
  );
});

Deno.test("DeviceLossLatch's provider-wide entry keeps exempt a device failing (not lost) at an entry into AUTO, and releases a held device back but failing, as a named latch would", () => {
  const r = pastTheBound();
  r.enterAuto();
  assert.equal(r.latch.gate(ctx("dev74", "automated")), null, "up at the entry");
  // dev74's reads fail, not for the bound yet: failing is no loss. A named latch would not latch
  // it, and would release a latched device failing at an entry into AUTO (it is back).
  r.failing.add("dev74");
  // A held device back, its reads failing too.
  r.listed.add("dev70");
  r.failing.add("dev70");
  const before = r.latchEvents().length;
  r.enterAuto();
  assert.equal(
    r.latch.gate(ctx("dev74", "automated")),
    null,
    "failing at the entry: still exempt, as it was never lost",
  );
  assert.equal(r.latch.gate(ctx("dev70", "automated")), null, "back (failing) at the entry");
  assert.deepEqual(r.latchEvents().slice(before), ["dev70 released (AUTO entered again) @0"]);
  assert.deepEqual(r.latch.providerEntries()[0]?.exemptDeviceIds, ["dev74", "dev70"]);
  // Lost (down) it is refused again, and that is announced.
  r.listed.delete("dev74");
  const third = r.latchEvents().length;
  r.down("dev74", "its reads fail");
  assert.equal(r.latch.gate(ctx("dev74", "automated"))?.code, "FAILED_PRECONDITION");
  assert.deepEqual(r.latchEvents().slice(third), [
    "dev74 latched (its reads fail) provider_wide @0",
  ]);
  assert.deepEqual(r.latch.providerEntries()[0]?.exemptDeviceIds, ["dev70"]);
});

Deno.test("DeviceLossLatch's provider-wide entry, when made, refuses only the device it holds: the provider's devices listed and not down stay exempt", () => {
  const r = renamingRig();
  r.listed.add("dev0");
  for (let n = 1; n <= MAX_LATCHED_DEVICES_PER_PROVIDER; n++) r.restart(n);
  assert.deepEqual(r.latch.providerEntries(), []);
  // The provider lists two more devices, one of them failing (not lost).
  r.listed.add("pump");
  r.listed.add("valve");
  r.failing.add("valve");
  const before = r.latchEvents().length;
  const held = `dev${MAX_LATCHED_DEVICES_PER_PROVIDER}`;
  r.listed.delete(held);
  r.down(held, "its reads fail");
  assert.deepEqual(r.latchEvents().slice(before), [
    `${held} latched (its reads fail) provider_wide @0`,
  ]);
  // Neither was lost, and no event said they are: automation may command them.
  assert.equal(r.latch.gate(ctx("pump", "automated")), null, "pump");
  assert.equal(r.latch.gate(ctx("valve", "automated")), null, "valve");
  assert.equal(r.latch.gate(ctx(held, "automated"))?.code, "FAILED_PRECONDITION");
  const [wide] = r.latch.providerEntries();
  assert.equal(wide?.exempt, 2);
  assert.deepEqual(wide?.exemptDeviceIds, ["pump", "valve"]);
});

Deno.test("DeviceLossLatch announces one release for a device an entry into AUTO releases by name while its provider has a provider-wide entry", () => {
  const r = pastTheBound();
  // Three devices latched by name are back.
  for (const d of ["dev0", "dev1", "dev2"]) r.listed.add(d);
  const before = r.latchEvents().length;
  r.enterAuto();
  assert.deepEqual(r.latchEvents().slice(before), [
    "dev0 released (AUTO entered again) @0",
    "dev1 released (AUTO entered again) @0",
    "dev2 released (AUTO entered again) @0",
    "dev74 released (AUTO entered again) @0",
  ]);
  for (const d of ["dev0", "dev1", "dev2", "dev74"]) {
    assert.equal(r.latch.gate(ctx(d, "automated")), null, d);
  }
  // dev1 lost again: latched by name (the provider has 62 named now), no longer exempt.
  r.listed.delete("dev1");
  r.down("dev1", "its reads fail");
  assert.equal(r.latch.entries().length, MAX_LATCHED_DEVICES_PER_PROVIDER - 2);
  assert.deepEqual(r.latch.providerEntries()[0]?.exemptDeviceIds, ["dev74", "dev0", "dev2"]);
  // Back, released by name at the next entry, once.
  r.listed.add("dev1");
  const second = r.latchEvents().length;
  r.enterAuto();
  assert.deepEqual(r.latchEvents().slice(second), ["dev1 released (AUTO entered again) @0"]);
});

Deno.test("DeviceLossLatch announces a device its provider-wide entry refuses when its provider lists it anew (new, or one held back), once", () => {
  const r = pastTheBound();
  // dev74 was listed after the entry was made (dev64 held, nothing listed then): it may be a held
  // device back under its name, so it is refused -- and that refusal is announced.
  assert.equal(r.latch.gate(ctx("dev74", "automated"))?.code, "FAILED_PRECONDITION");
  const before = r.latchEvents().length;
  r.rediscover();
  const reason = "listed while its provider's provider-wide entry holds devices it does not " +
    "name: it may be one of them, back";
  assert.deepEqual(r.latchEvents().slice(before), [`dev74 latched (${reason}) provider_wide @0`]);
  assert.ok(
    r.lines.includes(
      `WARN latched "sim0/dev74": ${reason}; automation may not command it until AUTO is ` +
        "entered again while it is up",
    ),
    r.lines.join("\n"),
  );
  // Rediscovered the same: nothing new is refused, nothing announced.
  r.rediscover();
  assert.equal(r.latchEvents().length, before + 1);
  // A held device back and a new one: each announced once; a device latched by name that is
  // back (dev0) is refused by its own latch, announced at its loss.
  r.listed.add("dev70");
  r.listed.add("new0");
  r.listed.add("dev0");
  r.rediscover();
  assert.deepEqual(r.latchEvents().slice(before + 1), [
    `dev70 latched (${reason}) provider_wide @0`,
    `new0 latched (${reason}) provider_wide @0`,
  ]);
  // Entering AUTO releases them (and dev0 by name); a rediscovery then announces nothing.
  const entry = r.latchEvents().length;
  r.enterAuto();
  assert.deepEqual(r.latchEvents().slice(entry), [
    "dev0 released (AUTO entered again) @0",
    "dev74 released (AUTO entered again) @0",
    "dev70 released (AUTO entered again) @0",
    "new0 released (AUTO entered again) @0",
  ]);
  r.rediscover();
  assert.equal(r.latchEvents().length, entry + 4);
  // A device lost while listed (its reads fail for the bound) is announced by its loss -- latched
  // by name (dev0's release made room) -- and a rediscovery listing it announces nothing more.
  r.down("new0", "its reads fail");
  r.rediscover();
  assert.deepEqual(r.latchEvents().slice(entry + 4), ["new0 latched (its reads fail) @0"]);
  // Past the bound again, a device held while listed: announced by its hold, once.
  r.down("new1", "its reads fail");
  r.listed.add("new1");
  r.rediscover();
  assert.deepEqual(r.latchEvents().slice(entry + 5), [
    "new1 latched (its reads fail) provider_wide @0",
  ]);
});

Deno.test("DeviceLossLatch dates a device's latch by name no earlier than its provider-wide entry's refusal of it when the wall clock stepped back (NTP)", () => {
  const r = pastTheBound();
  // dev0 and dev1 (latched by name) are back at an entry into AUTO: released, which leaves room
  // for two latches by name; dev70, held by the provider-wide entry, is still down.
  r.listed.add("dev0");
  r.listed.add("dev1");
  r.enterAuto();
  // A device listed since: refused by the entry, and announced so.
  r.setWall(WALL_MS + 1_000);
  r.listed.add("new0");
  r.rediscover();
  // The wall clock steps back (NTP); dev70 is back (listed again: announced again).
  r.setWall(WALL_MS - 60_000);
  r.listed.add("dev70");
  r.rediscover();
  const reason = "listed while its provider's provider-wide entry holds devices it does not " +
    "name: it may be one of them, back";
  const before = r.latchEvents().length;
  assert.deepEqual(r.latchEvents().slice(before - 2), [
    `new0 latched (${reason}) provider_wide @1000`,
    `dev70 latched (${reason}) provider_wide @1000`,
  ]);
  // Both lost before any entry into AUTO: latched by name now (there is room), each dated no
  // earlier than the entry's announcement of it -- not by the clock, a minute before it.
  for (const d of ["new0", "dev70"]) {
    r.listed.delete(d);
    r.down(d, "its reads fail");
  }
  assert.deepEqual(r.latchEvents().slice(before), [
    "new0 latched (its reads fail) @1000",
    "dev70 latched (its reads fail) @1000",
  ]);
  assert.equal(r.latch.entries().length, MAX_LATCHED_DEVICES_PER_PROVIDER);
  // Back at the next entry: released by name, no earlier than their latches.
  r.listed.add("new0");
  r.listed.add("dev70");
  const second = r.latchEvents().length;
  r.enterAuto();
  assert.deepEqual(r.latchEvents().slice(second), [
    "new0 released (AUTO entered again) @1000",
    "dev70 released (AUTO entered again) @1000",
  ]);
});

Deno.test("DeviceLossLatch dates the latches of a provider configured again no earlier than the releases of its removal, across steps back of the wall clock (NTP) between reloads", () => {
  for (const how of ["forgetProvider", "unconfigured"] as const) {
    const r = renamingRig();
    const removeSim0 = () => {
      r.remove();
      if (how === "forgetProvider") r.latch.forgetProvider("sim0");
      else r.latch.latched(); // a status read lets the removed provider's latches go
    };
    // dev0 lost (latched), then a reload removes sim0: released, dated by the clock.
    r.listed.add("dev0");
    r.restart(1);
    r.setWall(WALL_MS + 1_000);
    removeSim0();
    assert.deepEqual(r.latchEvents(), [
      "dev0 latched (provider sim0 is unavailable (RESTARTING)) @0",
      "dev0 released (its provider is no longer configured) @1000",
    ], how);
    // The wall clock steps back a minute (NTP); a later reload configures sim0 again, listing
    // dev0, which is lost: its latch follows that release under the same handle.
    r.setWall(WALL_MS - 60_000);
    r.configureAgain();
    r.listed.clear();
    r.listed.add("dev0");
    r.restart(1);
    assert.deepEqual(r.latchEvents().slice(2), [
      "dev0 latched (provider sim0 is unavailable (RESTARTING)) @1000",
    ], how);
    // Removed again, a second step back, configured again: no earlier than the last removal.
    removeSim0();
    r.setWall(WALL_MS - 120_000);
    r.configureAgain();
    r.listed.clear();
    r.listed.add("dev0");
    r.restart(1);
    assert.deepEqual(r.latchEvents().slice(3), [
      "dev0 released (its provider is no longer configured) @1000",
      "dev0 latched (provider sim0 is unavailable (RESTARTING)) @1000",
    ], how);
  }
});
