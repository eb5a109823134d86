/**
 * DeviceOutages: what counts as "device down" (docs/safety.md), table-driven over the programmable
 * provider (served in-process) and a real StateCache. Polls happen when the test asks; the
 * monotonic clock stands still unless the test moves it, and the monitor's timers are fired by
 * hand.
 */
import assert from "node:assert/strict";
import type { Clock } from "../../src/common/mod.ts";
import {
  DEVICE_RETURN_MIN_INTERVAL_MS,
  type DeviceConditionChange,
  type DeviceConditionKind,
  deviceDownAfterMs,
  DeviceOutages,
  HOST_UNMET_SUFFIX,
} from "../../src/state/mod.ts";
import { StatusCode, WireDeviceState } from "../../src/adpp/mod.ts";
import {
  dbl,
  HOST_UNMET_I2C1,
  type Inventory,
  programFake,
  type ProgrammableFixture,
  programmableProvider,
  Q,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { EventBus } from "../../src/events/mod.ts";
import type { ProviderHost, ProviderRegistry } from "../../src/providers/mod.ts";
import { StateCache } from "../../src/state/mod.ts";
import { QUOTED_PROVIDER_ID_CHARS } from "../../src/common/mod.ts";
import { failedStartText } from "../../src/providers/mod.ts";

const DOWN_AFTER_MS = 500;

const INVENTORY: Inventory = {
  devices: {
    pump: {
      signals: [{ id: "flow", type: T.DOUBLE }, { id: "temp", type: T.DOUBLE }],
      values: [dbl("flow", 1), dbl("temp", 20)],
    },
    // Declares a signal without a poll hint: nothing is read, so nothing to judge reads by.
    switch: { signals: [{ id: "state", type: T.DOUBLE, hint: 0 }] },
  },
};

/** The monitor's timers, fired by hand when the fixture's monotonic time has come. */
class Timers {
  readonly pending = new Map<number, { fn: () => void; due: number }>();
  #next = 1;
  constructor(readonly fx: ProgrammableFixture) {}
  readonly clock: Clock = {
    nowMs: () => this.fx.clock.nowMs(),
    monoMs: () => this.fx.clock.monoMs(),
    setTimer: (fn, ms) => {
      const id = this.#next++;
      this.pending.set(id, { fn, due: this.fx.clock.monoMs() + ms });
      return id;
    },
    clearTimer: (id) => void this.pending.delete(id as number),
  };
  /** Moves the monotonic clock by `ms` and fires what fell due. */
  advance(ms: number): void {
    this.fx.clock.mono = this.fx.clock.monoMs() + ms;
    for (const [id, t] of [...this.pending]) {
      if (t.due > this.fx.clock.monoMs()) continue;
      this.pending.delete(id);
      t.fn();
    }
  }
}

interface Rig {
  fx: ProgrammableFixture;
  outages: DeviceOutages;
  timers: Timers;
  changes: DeviceConditionChange[];
  kind(device: string): DeviceConditionKind;
  poll(device: string): Promise<void>;
  close(): Promise<void>;
}

/** A monitor over `fx` with DOWN_AFTER_MS as its bound. */
function monitorOn(
  fx: ProgrammableFixture,
  clock: Clock,
  more: Partial<ConstructorParameters<typeof DeviceOutages>[0]> = {},
): DeviceOutages {
  return new DeviceOutages({
    registry: fx.registry,
    cache: fx.cache,
    clock,
    downAfterMs: DOWN_AFTER_MS,
    ...more,
  });
}

/**
 * A provider started with `inventory` and a monitor on hand-fired timers, with the changes it
 * tells (of the device `only`, if given) from its start on. Nothing is polled yet.
 */
async function monitor(
  inventory: Inventory,
  options: Parameters<typeof startProgrammable>[1],
  only?: string,
): Promise<{
  fx: ProgrammableFixture;
  timers: Timers;
  outages: DeviceOutages;
  changes: DeviceConditionChange[];
}> {
  const fx = await startProgrammable(inventory, options);
  const timers = new Timers(fx);
  const outages = monitorOn(fx, timers.clock);
  const changes: DeviceConditionChange[] = [];
  outages.onChange((c) => (only === undefined || c.deviceId === only) && changes.push(c));
  return { fx, timers, outages, changes };
}

/** Kills the provider's process and waits for its restart policy to bring a new one up. */
async function restarted(fx: ProgrammableFixture, what: string): Promise<void> {
  const pid = fx.kill();
  await waitFor(what, () => fx.host.available && fx.host.session!.pid !== pid);
}

/** The pump's reads answer both its signals OK. */
async function answerPump(fx: ProgrammableFixture): Promise<void> {
  await fx.program("pump", { read: { values: [dbl("flow", 1), dbl("temp", 20)] } });
}

/** A call the provider exits on (the programmable provider's function 3); waits, bounded, for it. */
async function crashByCall(r: Rig): Promise<void> {
  await r.fx.host.request("call", { device_id: "pump", function_id: 3 }).catch(() => {});
  for (let i = 0; i < 200 && r.fx.host.available; i++) {
    await new Promise((res) => setTimeout(res, 10));
  }
}

/** The provider in-process, restarted when it dies, its monotonic clock at 10 s. */
const RESTARTING = { mono: 10_000, inProcess: true, restart: {} } as const;

/** The device returns `outages` tells, as "provider/device", and the unsubscribe. */
function returnsOf(outages: DeviceOutages): { returned: string[]; off: () => void } {
  const returned: string[] = [];
  const off = outages.onDeviceReturn((p, d) => returned.push(`${p}/${d}`));
  return { returned, off };
}

async function rig(): Promise<Rig> {
  const { fx, timers, outages, changes } = await monitor(INVENTORY, {
    mono: 10_000,
    inProcess: true,
  });
  await fx.cache.pollDevice("p0", "pump");
  // Before its first answer the pump was failing ("has not answered a read yet"); now up.
  assert.deepEqual(changes.map((c) => [c.deviceId, c.previous, c.condition.kind]), [
    ["pump", "failing", "up"],
  ]);
  changes.length = 0;
  return {
    fx,
    outages,
    timers,
    changes,
    kind: (device) => outages.condition("p0", device).kind,
    poll: (device) => fx.cache.pollDevice("p0", device),
    async close() {
      outages.stop();
      await fx.close();
    },
  };
}

Deno.test("deviceDownAfterMs: at least DEVICE_DOWN_AFTER_POLLS intervals and never under 500 ms", () => {
  assert.equal(deviceDownAfterMs(100), 500);
  assert.equal(deviceDownAfterMs(1000), 3000);
});

/** One row: what the provider does, then the condition after a poll, then past the bound. */
interface Row {
  readonly name: string;
  /** Makes the device's reads go bad (or not); the test polls after it. */
  readonly act: (r: Rig) => Promise<unknown>;
  readonly device: string;
  readonly afterPoll: DeviceConditionKind;
  readonly pastBound: DeviceConditionKind;
  readonly reason: RegExp | "";
}

/** A row's act: the pump's reads answer `values`. */
function pumpReads(values: ReturnType<typeof dbl>[]): Row["act"] {
  return (r) => r.fx.program("pump", { read: { values } });
}

/** A row's verdicts for the pump: up, and still up past the bound. */
const pumpStaysUp = { device: "pump", afterPoll: "up", pastBound: "up", reason: "" } as const;

/** A row's verdicts for the pump: failing after the poll, down past the bound, for `reason`. */
function pumpFailingThenDown(reason: RegExp) {
  return { device: "pump", afterPoll: "failing", pastBound: "down", reason } as const;
}

const ROWS: Row[] = [
  {
    name: "reads answer OK",
    act: async () => {},
    ...pumpStaysUp,
  },
  {
    name: "some signals FAULT, one OK",
    act: pumpReads([dbl("flow", 1, { quality: Q.FAULT }), dbl("temp", 20)]),
    ...pumpStaysUp,
  },
  {
    name: "every polled signal FAULT or UNAVAILABLE",
    act: pumpReads([dbl("flow", 1, { quality: Q.FAULT }), dbl("temp", 2, { quality: Q.UNKNOWN })]),
    ...pumpFailingThenDown(/every polled signal is STALE, UNAVAILABLE or FAULT/),
  },
  {
    name: "every polled signal STALE as the provider itself reports it",
    act: pumpReads([dbl("flow", 1, { quality: Q.STALE }), dbl("temp", 20, { quality: Q.STALE })]),
    ...pumpFailingThenDown(/every polled signal is STALE, UNAVAILABLE or FAULT/),
  },
  {
    name: "one signal STALE as the provider reports it, one FAULT",
    act: pumpReads([dbl("flow", 1, { quality: Q.STALE }), dbl("temp", 20, { quality: Q.FAULT })]),
    ...pumpFailingThenDown(/every polled signal is STALE, UNAVAILABLE or FAULT/),
  },
  {
    name: "one signal STALE as the provider reports it, one OK",
    act: pumpReads([dbl("flow", 1, { quality: Q.STALE }), dbl("temp", 20)]),
    ...pumpStaysUp,
  },
  {
    name: "the read fails with a status (the provider says the device is gone)",
    act: (r) => r.fx.program("pump", { read: { error: { code: StatusCode.NOT_FOUND } } }),
    ...pumpFailingThenDown(/its reads fail/),
  },
  {
    name: "the provider's health reports it UNREACHABLE while its reads answer",
    act: async (r) => {
      await r.fx.program("pump", {
        health: { devices: [{ device_id: "pump", state: WireDeviceState.UNREACHABLE }] },
      });
      await r.fx.cache.fetchReportedHealth(r.fx.host);
    },
    ...pumpFailingThenDown(/reports it UNREACHABLE/),
  },
  {
    name: "no polled signal: nothing to judge reads by",
    act: async () => {},
    device: "switch",
    afterPoll: "up",
    pastBound: "up",
    reason: "",
  },
];

for (const row of ROWS) {
  Deno.test(`DeviceOutages: ${row.name} -> ${row.afterPoll}, past the bound ${row.pastBound}`, async () => {
    const r = await rig();
    try {
      await row.act(r);
      await r.poll(row.device);
      assert.equal(r.kind(row.device), row.afterPoll, "after the poll");
      // Nothing polls any more: the monitor's own timer decides the bound.
      r.timers.advance(DOWN_AFTER_MS - 1);
      assert.equal(r.kind(row.device), row.afterPoll, "1 ms before the bound");
      r.timers.advance(1);
      const c = r.outages.condition("p0", row.device);
      assert.equal(c.kind, row.pastBound, "at the bound");
      if (row.reason === "") assert.equal(c.reason, "");
      else assert.match(c.reason, row.reason);
      const told = r.changes.filter((ch) => ch.deviceId === row.device).map((ch) =>
        ch.condition.kind
      );
      const expected = [row.afterPoll, row.pastBound].filter((k, i, a) =>
        k !== "up" && a.indexOf(k) === i
      );
      assert.deepEqual(told, expected, "each change told once, when it happened");
      if (row.pastBound === "down") {
        // Answering again: up at once.
        await answerPump(r.fx);
        await r.fx.program("pump", { health: {} });
        await r.fx.cache.fetchReportedHealth(r.fx.host);
        await r.poll(row.device);
        assert.equal(r.kind(row.device), "up");
        assert.equal(r.changes.at(-1)?.condition.kind, "up");
      }
    } finally {
      await r.close();
    }
  });
}

Deno.test("DeviceOutages: a provider that goes down makes every device down at once, with its reason", async () => {
  const r = await rig();
  try {
    await crashByCall(r);
    for (const device of ["pump", "switch"]) {
      const c = r.outages.condition("p0", device);
      assert.equal(c.kind, "down", device);
      assert.match(c.reason, /^provider p0 is unavailable/);
    }
    assert.deepEqual(
      r.changes.map((c) => [c.deviceId, c.previous, c.condition.kind]),
      [["pump", "up", "down"], ["switch", "up", "down"]],
    );
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages: a device the provider does not list, or a provider not configured, is down", async () => {
  const r = await rig();
  try {
    assert.deepEqual(r.outages.condition("p0", "ghost"), {
      kind: "down",
      reason: "not in the inventory of provider p0",
      sinceMono: null,
    });
    assert.equal(r.outages.condition("p9", "pump").kind, "down");
    assert.match(r.outages.condition("p9", "pump").reason, /provider p9 is not configured/);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages: a device its provider leaves out, up again with its host check unmet, is down saying so; listed again once the host is fixed", async () => {
  // A real child: the in-process twin does not answer WaitReady's diagnostics.
  const { fx, outages, changes } = await monitor(INVENTORY, { restart: {} }, "pump");
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    changes.length = 0;
    await fx.setInventory({ ...HOST_UNMET_I2C1, devices: {} });
    await restarted(fx, "p0 up again, its host check unmet");
    assert.equal(fx.host.hostCheck()?.status, "unmet");
    const unlisted = `not in the inventory of provider p0${HOST_UNMET_SUFFIX}`;
    assert.equal(HOST_UNMET_SUFFIX, "; its host check is unmet");
    // Said where AUTO's refusal reads it (blocked_devices: the condition now). Down since its
    // provider went down: no change of kind, so nothing more is told.
    assert.equal(outages.condition("p0", "pump").kind, "down");
    assert.equal(outages.condition("p0", "pump").reason, unlisted);
    assert.deepEqual(changes.map((c) => [c.previous, c.condition.kind]), [["up", "down"]]);
    // The host fixed: listed again, its reads answered, up.
    await fx.setInventory(INVENTORY);
    await restarted(fx, "p0 up again with its devices");
    assert.equal(fx.host.hostCheck(), null);
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    // A device a provider with its host check met does not list says only that.
    assert.equal(outages.condition("p0", "ghost").reason, "not in the inventory of provider p0");
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages names a provider id of 10 kB with control characters cut to QUOTED_PROVIDER_ID_CHARS: not listed, not configured, unavailable", async () => {
  // The config bounds a provider id neither in length nor in characters.
  const id = `p\u0007\n${"x".repeat(10_000)}`;
  const cut = `${id.slice(0, QUOTED_PROVIDER_ID_CHARS)}\u2026`;
  const { fx, outages } = await monitor(INVENTORY, { mono: 10_000, providerId: id });
  try {
    assert.equal(outages.condition(id, "ghost").reason, `not in the inventory of provider ${cut}`);
    assert.equal(
      outages.condition(`${id}9`, "pump").reason,
      `provider ${cut} is not configured`,
    );
    await fx.host.stop(1000); // stopped, no restart policy: unavailable (STOPPED)
    assert.match(
      outages.condition(id, "pump").reason,
      new RegExp(`^provider ${cut} is unavailable`),
    );
  } finally {
    outages.stop();
    await fx.close();
  }
});

/** Makes the pump's reads fail (status NOT_FOUND) and polls it: failing from now. */
async function failPump(r: Rig): Promise<void> {
  await r.fx.program("pump", { read: { error: { code: StatusCode.NOT_FOUND } } });
  await r.poll("pump");
}

Deno.test("DeviceOutages: a device answering again before the bound is never told down (its timer is cleared)", async () => {
  const r = await rig();
  try {
    await failPump(r);
    assert.equal(r.timers.pending.size, 1, "the bound's timer");
    r.timers.advance(DOWN_AFTER_MS - 100);
    await answerPump(r.fx);
    await r.poll("pump");
    assert.equal(r.timers.pending.size, 0);
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.kind("pump"), "up");
    assert.deepEqual(r.changes.map((c) => [c.previous, c.condition.kind]), [
      ["up", "failing"],
      ["failing", "up"],
    ]);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages.stop clears every timer and tells nothing after", async () => {
  const r = await rig();
  try {
    await failPump(r);
    assert.equal(r.timers.pending.size, 1);
    r.outages.stop();
    assert.equal(r.timers.pending.size, 0);
    r.timers.advance(DOWN_AFTER_MS);
    await r.poll("pump");
    assert.deepEqual(r.changes.map((c) => c.condition.kind), ["failing"]);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages.onChange returns an unsubscribe that removes that listener only, once", async () => {
  const r = await rig();
  try {
    // A monitor of its own, so that the first listener is the one removed.
    const outages = monitorOn(r.fx, r.timers.clock);
    const a: string[] = [];
    const b: string[] = [];
    try {
      const offA = outages.onChange((c) => a.push(c.condition.kind));
      outages.onChange((c) => b.push(c.condition.kind));
      offA();
      offA(); // a second call removes nothing else
      await failPump(r);
      assert.deepEqual(a, []);
      assert.deepEqual(b, ["failing"]);
      assert.deepEqual(r.changes.map((c) => c.condition.kind), ["failing"]);
    } finally {
      outages.stop();
    }
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages.setDownAfterMs re-judges every device at once with the new bound", async () => {
  const r = await rig();
  try {
    await failPump(r);
    r.timers.advance(100);
    assert.equal(r.kind("pump"), "failing");
    r.outages.setDownAfterMs(100);
    assert.equal(r.outages.downAfterMs, 100);
    assert.deepEqual(r.changes.map((c) => c.condition.kind), ["failing", "down"]);
    assert.equal(r.outages.condition("p0", "pump").sinceMono, 10_000);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages: a provider gone down gives its devices the time it went down as sinceMono", async () => {
  const r = await rig();
  try {
    r.fx.clock.mono = 12_345;
    await crashByCall(r);
    assert.equal(r.outages.condition("p0", "pump").sinceMono, 12_345);
    // Told with that date: a listener keeps what it is told (the automation engine dates a
    // blocked device from it, the incident recorder a device loss), nothing tells it later.
    assert.deepEqual(
      r.changes.map((c) => [c.deviceId, c.previous, c.condition.kind, c.condition.sinceMono]),
      [["pump", "up", "down", 12_345], ["switch", "up", "down", 12_345]],
    );
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages arms the bound's timer for the moment the device started failing plus the bound", async () => {
  const r = await rig();
  try {
    r.fx.clock.mono = 10_200;
    await failPump(r);
    assert.deepEqual([...r.timers.pending.values()].map((t) => t.due), [10_200 + DOWN_AFTER_MS]);
    r.timers.advance(100);
    await r.poll("pump"); // still failing: the same bound, counted from the first failure
    assert.deepEqual([...r.timers.pending.values()].map((t) => t.due), [10_200 + DOWN_AFTER_MS]);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages counts a new failure from its own start, not from one that recovered", async () => {
  const r = await rig();
  try {
    await failPump(r);
    r.timers.advance(100);
    await answerPump(r.fx);
    await r.poll("pump");
    r.timers.advance(DOWN_AFTER_MS);
    await failPump(r);
    const c = r.outages.condition("p0", "pump");
    assert.equal(c.kind, "failing");
    assert.equal(c.sinceMono, 10_000 + 100 + DOWN_AFTER_MS);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages reads the provider's health entry of the device itself, not another's, and none is no verdict", async () => {
  const r = await rig();
  try {
    await r.fx.program("pump", {
      health: {
        devices: [
          { device_id: "switch", state: WireDeviceState.OK },
          { device_id: "pump", state: WireDeviceState.UNREACHABLE },
        ],
      },
    });
    await r.fx.cache.fetchReportedHealth(r.fx.host);
    await r.poll("pump");
    assert.equal(r.kind("pump"), "failing");
    assert.match(r.outages.condition("p0", "pump").reason, /reports it UNREACHABLE/);
    // A health report that leaves the pump out says nothing against it.
    await r.fx.program("pump", {
      health: { devices: [{ device_id: "switch", state: WireDeviceState.UNREACHABLE }] },
    });
    await r.fx.cache.fetchReportedHealth(r.fx.host);
    await r.poll("pump");
    assert.equal(r.kind("pump"), "up");
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages: a provider removed from the configuration makes its devices down at once, told with the time of removal", async () => {
  const r = await rig();
  const host = r.fx.host;
  try {
    r.fx.clock.mono = 11_000;
    assert.equal(r.fx.registry.remove("p0"), host);
    assert.deepEqual(
      r.changes.map((c) => [c.deviceId, c.previous, c.condition.kind, c.condition.sinceMono]),
      [["pump", "up", "down", 11_000], ["switch", "up", "down", 11_000]],
    );
    for (const c of r.changes) assert.match(c.condition.reason, /^provider p0 is not configured/);
    // Nothing of it is followed any more: no change is told twice.
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.changes.length, 2);
    assert.equal(r.outages.condition("p0", "pump").sinceMono, null);
  } finally {
    await host.stop(2000);
    await r.close();
  }
});

/**
 * What condition("p0", "pump") answers as a reload restarts p0: at the take-out ("no host") and
 * at its successor's registration, the monotonic clock a second on at each.
 */
function pumpDuringRestart(r: Rig): [string, number | null][] {
  const seen: [string, number | null][] = [];
  const note = (what: string) => {
    r.fx.clock.mono = r.fx.clock.monoMs() + 1000;
    seen.push([what, r.outages.condition("p0", "pump").sinceMono]);
  };
  r.fx.registry.onHostRemoved(() => note("no host"));
  r.fx.registry.eachHost((h) => {
    if (h !== r.fx.host) note(`successor up: ${h.available}`);
  });
  return seen;
}

/** A reload restarting p0 (its entry changed), asserted restarted. */
async function reloadRestartingP0(r: Rig): Promise<void> {
  const p0 = r.fx.host.config;
  const report = await r.fx.registry.reconcile([p0], [{ ...p0, timeoutMs: p0.timeoutMs + 1 }], {
    holdRemovals: false,
    stopBudgetMs: 2000,
    startBudgetMs: 30_000,
    stopping: () => false,
  });
  assert.deepEqual(report.restarted, ["p0"]);
}

Deno.test("DeviceOutages: a provider a reload restarts keeps its devices down since the take-out, as told, while no host is registered and while its successor starts", async () => {
  const r = await rig();
  // What condition() answers during the restart (the take-out told, the successor registered).
  const seen = pumpDuringRestart(r);
  try {
    r.fx.clock.mono = 11_000;
    await reloadRestartingP0(r);
    assert.deepEqual(
      r.changes.filter((c) => c.deviceId === "pump").slice(0, 1)
        .map((c) => [c.previous, c.condition.kind, c.condition.sinceMono, c.condition.reloading]),
      [["up", "down", 11_000, true]],
    );
    // Not undated while no host is registered, nor dated from its successor's registration.
    assert.deepEqual(seen, [["no host", 11_000], ["successor up: false", 11_000]]);
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: while a reload's successor starts, a device it restarts is down on purpose in the reload's words, as while no host is registered", async () => {
  const r = await rig();
  const seen: [string, string, true | undefined][] = [];
  const note = (what: string) => {
    const c = r.outages.condition("p0", "pump");
    seen.push([what, c.reason, c.reloading]);
  };
  r.fx.registry.onHostRemoved(() => note("no host"));
  r.fx.registry.eachHost((h) => {
    if (h !== r.fx.host) note(`successor up: ${h.available}`);
  });
  try {
    await reloadRestartingP0(r);
    const restarting = "provider p0 is being restarted by a configuration reload";
    // Before: "provider p0 is unavailable (DOWN)", not on purpose, once the successor was
    // registered (status, blocked_devices and the latch said the device was lost).
    assert.deepEqual(seen, [
      ["no host", restarting, true],
      ["successor up: false", restarting, true],
    ]);
    assert.equal(r.outages.condition("p0", "pump").kind, "failing", "listed, not read yet");
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: while a reload starts a provider it adds, its devices are down in the reload's words, whether its host is registered yet or not", async () => {
  const r = await rig();
  const p0 = r.fx.host.config;
  const p1 = { ...p0, id: "p1" };
  const seen: [string, string][] = [];
  const note = (what: string) => seen.push([what, r.outages.condition("p1", "pump").reason]);
  r.fx.registry.onStarting((id) => {
    if (id === "p1") note("no host");
  });
  r.fx.registry.eachHost((h) => {
    if (h.id === "p1") note(`registered, up: ${h.available}`);
  });
  try {
    const report = await r.fx.registry.reconcile([p0], [p0, p1], {
      holdRemovals: false,
      stopBudgetMs: 2000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(report.added, ["p1"]);
    const starting = "provider p1 is being started by a configuration reload";
    // Before: "provider p1 is unavailable (DOWN)" once its host was registered (status,
    // blocked_devices), though it was being started all the same.
    assert.deepEqual(seen, [["no host", starting], ["registered, up: false", starting]]);
    assert.equal(r.fx.registry.host("p1")?.available, true, "started");
  } finally {
    await r.fx.registry.host("p1")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a device a reload's restart took out and its new process leaves out is told down no longer on purpose, dated from the take-out", async () => {
  const r = await rig();
  try {
    await r.fx.setInventory({ devices: { switch: INVENTORY.devices.switch! } });
    r.fx.clock.mono = 11_000;
    await reloadRestartingP0(r);
    const pump = r.changes.filter((c) => c.deviceId === "pump");
    // Before: told only "being restarted by a configuration reload" (on purpose), nothing once
    // the new process was up without it; the latch kept that reason, the incident recorder
    // recorded no loss.
    assert.deepEqual(
      pump.map((c) => [c.previous, c.previousReloading, c.condition.kind, c.condition.reloading]),
      [["up", undefined, "down", true], ["down", true, "down", undefined]],
    );
    assert.equal(pump[1]!.condition.reason, "not in the inventory of provider p0");
    assert.equal(pump[1]!.condition.sinceMono, 11_000, "dated from the take-out");
    assert.deepEqual(r.outages.condition("p0", "pump"), pump[1]!.condition);
    // The switch, listed again, is told its change from down; nothing else of the pump is told.
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.changes.filter((c) => c.deviceId === "pump").length, 2, "told once");
    // Told once, as listed again (#restartLeftOut leaves it to that): not a second change from
    // down on purpose as well.
    assert.deepEqual(
      r.changes.filter((c) => c.deviceId === "switch")
        .map((c) => [c.previous, c.previousReloading, c.condition.kind]),
      [["up", undefined, "down"], ["down", undefined, "up"]],
    );
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a provider down when a reload restarts it keeps its devices down since it went down, while its successor starts", async () => {
  const r = await rig(); // no restart policy: once killed, it stays down
  const seen = pumpDuringRestart(r);
  try {
    r.fx.clock.mono = 11_000;
    r.fx.kill();
    await waitFor("down", () => !r.fx.host.available);
    assert.equal(r.outages.condition("p0", "pump").sinceMono, 11_000);
    r.fx.clock.mono = 20_000;
    await reloadRestartingP0(r);
    // Its outage goes on: not re-dated at the take-out, nor at its successor's registration.
    assert.deepEqual(seen, [["no host", 11_000], ["successor up: false", 11_000]]);
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a provider added by a reload is down, since the moment it was added, while it is not up", async () => {
  const r = await rig();
  try {
    r.fx.clock.mono = 11_000;
    const added = r.fx.registry.add({ ...r.fx.host.config, id: "p1" }); // not started
    assert.equal(added.available, false);
    r.fx.clock.mono = 12_000;
    assert.deepEqual(r.outages.condition("p1", "pump"), {
      kind: "down",
      reason: "provider p1 is unavailable (DOWN)",
      sinceMono: 11_000,
    });
  } finally {
    r.fx.registry.remove("p1");
    await r.close();
  }
});

Deno.test("DeviceOutages: the old host of a provider replaced by a reload, going down afterwards, changes nothing of its successor's", async () => {
  const r = await rig();
  const old = r.fx.host;
  try {
    r.fx.clock.mono = 11_000;
    assert.equal(r.fx.registry.remove("p0"), old);
    const successor = r.fx.registry.add(old.config); // not started yet
    assert.equal(successor.available, false);
    r.changes.length = 0;
    r.fx.clock.mono = 12_000;
    await old.stop(2000);
    const c = r.outages.condition("p0", "pump");
    assert.equal(c.kind, "down");
    assert.equal(
      c.sinceMono,
      11_000,
      "down since the successor was added, not since the old one stopped",
    );
    assert.deepEqual(r.changes, []);
  } finally {
    await old.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a device that has not answered a read yet is failing from no known moment: never down by time alone", async () => {
  const { fx, timers, outages, changes } = await monitor(INVENTORY, { mono: 10_000 });
  try {
    assert.deepEqual(outages.condition("p0", "pump"), {
      kind: "failing",
      reason: "it has not answered a read yet",
      sinceMono: null,
    });
    assert.equal(timers.pending.size, 0, "nothing to wait for: no start to count the bound from");
    timers.advance(10 * DOWN_AFTER_MS);
    assert.equal(outages.condition("p0", "pump").kind, "failing");
    assert.equal(changes.length, 0, "nothing told");
    await fx.cache.pollDevice("p0", "pump");
    assert.deepEqual(changes.map((c) => c.condition.kind), ["up"]);
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages.condition says what the listeners were told: past the bound, down once its timer has fired", async () => {
  const r = await rig();
  try {
    await failPump(r);
    // The clock passes the bound, but the timer has not fired yet (a loaded machine).
    r.fx.clock.mono = 10_000 + DOWN_AFTER_MS + 50;
    assert.equal(r.kind("pump"), "failing");
    assert.deepEqual(r.changes.map((c) => c.condition.kind), ["failing"]);
    r.timers.advance(0);
    assert.equal(r.kind("pump"), "down");
    assert.deepEqual(r.changes.map((c) => c.condition.kind), ["failing", "down"]);
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages follows the device of a provider that lists only one, and judges it by the signals it sends", async () => {
  // The pump never sends temp: judged by flow alone.
  const pump = { ...INVENTORY.devices.pump!, values: [dbl("flow", 1)] };
  const { fx, timers, outages } = await monitor({ devices: { pump } }, { mono: 10_000 });
  const told: string[] = [];
  outages.onChange((c) => told.push(`${c.deviceId} ${c.condition.kind}`));
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    await fx.program("pump", { read: { error: { code: StatusCode.NOT_FOUND } } });
    await fx.cache.pollDevice("p0", "pump");
    timers.advance(DOWN_AFTER_MS);
    assert.deepEqual(told, ["pump up", "pump failing", "pump down"]);
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages does not judge a restarted provider's device by the health its previous process reported", async () => {
  const fx = await startProgrammable(INVENTORY, { inProcess: true, restart: {} });
  const outages = monitorOn(fx, fx.clock);
  try {
    await fx.program("pump", {
      health: { devices: [{ device_id: "pump", state: WireDeviceState.UNREACHABLE }] },
    });
    await fx.cache.fetchReportedHealth(fx.host);
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "failing");
    // The process dies; the new one answers the pump's reads and has reported nothing yet.
    await restarted(fx, "restarted");
    await fx.cache.pollDevice("p0", "pump");
    assert.deepEqual(outages.condition("p0", "pump"), { kind: "up", reason: "", sinceMono: null });
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a signal never answered does not vouch for its device: the answered ones all FAULT, or none answered, is failing", async () => {
  // The pump never sends temp: judged by the signals it sends (flow), as above.
  const pump = { ...INVENTORY.devices.pump!, values: [dbl("flow", 1)] };
  const { fx, timers, outages } = await monitor({ devices: { pump } }, {
    mono: 10_000,
    inProcess: true,
  });
  const told: string[] = [];
  outages.onChange((c) => told.push(`${c.deviceId} ${c.condition.kind}`));
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    // Every signal it sends is FAULT; temp, never answered, is no good reading either.
    await fx.program("pump", { read: { values: [dbl("flow", 1, { quality: Q.FAULT })] } });
    await fx.cache.pollDevice("p0", "pump");
    const c = outages.condition("p0", "pump");
    assert.equal(c.kind, "failing", "flow FAULT and temp never answered");
    assert.match(c.reason, /every polled signal is STALE, UNAVAILABLE or FAULT/);
    timers.advance(DOWN_AFTER_MS);
    assert.deepEqual(told, ["pump up", "pump failing", "pump down"]);
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device whose reads answer none of its polled signals is failing, then down", async () => {
  const pump = { ...INVENTORY.devices.pump!, values: [] };
  const { fx, timers, outages } = await monitor({ devices: { pump } }, {
    mono: 10_000,
    inProcess: true,
  });
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(fx.cache.device("p0", "pump")?.available, true, "the read was answered");
    const c = outages.condition("p0", "pump");
    assert.equal(c.kind, "failing", "an answer without any polled signal");
    assert.match(c.reason, /none of its polled signals answered/);
    timers.advance(DOWN_AFTER_MS);
    assert.equal(outages.condition("p0", "pump").kind, "down");
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device whose reads stop carrying any of its polled signals is failing, then down, as one that never carried them", async () => {
  const { fx, timers, outages } = await monitor(INVENTORY, { mono: 10_000, inProcess: true });
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    // From now on its reads are answered empty: its samples are only kept ones.
    await fx.program("pump", { read: { values: [] } });
    timers.advance(100);
    await fx.cache.pollDevice("p0", "pump");
    const c = outages.condition("p0", "pump");
    assert.equal(c.kind, "failing", "an answer carrying none of its polled signals");
    assert.match(c.reason, /none of its polled signals answered/);
    timers.advance(DOWN_AFTER_MS);
    assert.equal(outages.condition("p0", "pump").kind, "down");
    // Past their stale bound the cache keeps its samples as STALE (for their age): still none
    // answered -- the provider reported nothing STALE.
    timers.advance(fx.cache.staleAfterMs("p0", "pump", "flow") + 1);
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(fx.cache.signal("p0", "pump", "flow")?.quality, "STALE");
    assert.match(
      outages.condition("p0", "pump").reason,
      /none of its polled signals answered/,
      "the samples the cache aged are no answer",
    );
    // One signal answered again: up.
    await fx.program("pump", { read: { values: [dbl("flow", 1)] } });
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages tells every listener though one throws, and hands the error to onListenerError", async () => {
  const r = await rig();
  try {
    const errors: string[] = [];
    const outages = monitorOn(r.fx, r.timers.clock, {
      onListenerError: (err) => errors.push(String(err)),
    });
    const told: string[] = [];
    try {
      // A peripheral listener with a bug, subscribed before the e-stop's and the mode manager's.
      outages.onChange(() => {
        throw new Error("listener bug");
      });
      outages.onChange((c) => told.push(c.condition.kind));
      await failPump(r);
      assert.deepEqual(told, ["failing"], "a throwing listener kept the next one from being told");
      assert.deepEqual(errors, ["Error: listener bug"]);
    } finally {
      outages.stop();
    }
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages.onDeviceReturn tells a device that answers again with its provider up, once; a provider's own outage tells nothing", async () => {
  const r = await rig();
  const { returned, off } = returnsOf(r.outages);
  try {
    await failPump(r);
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.kind("pump"), "down");
    assert.deepEqual(returned, [], "told while still out");
    await answerPump(r.fx);
    await r.poll("pump");
    assert.deepEqual(returned, ["p0/pump"]);
    await r.poll("pump");
    assert.deepEqual(returned, ["p0/pump"], "told again while it stayed up");
    // A device down because its provider went down is left to the provider's own return.
    await failPump(r);
    await crashByCall(r);
    assert.equal(r.kind("switch"), "down");
    assert.deepEqual(returned, ["p0/pump"], "a provider going down told a device return");
  } finally {
    off();
    await r.close();
  }
});

Deno.test("DeviceOutages.onDeviceReturn tells a device whose reads failed after its provider came back once it answers, before the bound too; one that answers at once is not told", async () => {
  const { fx, timers, outages } = await monitor(INVENTORY, RESTARTING);
  const { returned, off } = returnsOf(outages);
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    // The process dies; the new one's pump does not answer its first reads (it powers up slowly):
    // the calls its provider's return brought (the e-stop's ladder, the hooks into FAULT) found
    // it out, as a device that stops answering while its provider stays up.
    await restarted(fx, "restarted");
    await fx.program("pump", { read: { error: { code: StatusCode.UNAVAILABLE } } });
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "failing");
    // It answers within the bound (never down): told all the same, once.
    timers.advance(DOWN_AFTER_MS - 100);
    await answerPump(fx);
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    assert.deepEqual(returned, ["p0/pump"], "a device out since its provider's return");
    // A restart whose pump answers its first read: its provider's return is whole, no device's.
    await restarted(fx, "restarted again");
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    assert.deepEqual(returned, ["p0/pump"], "no device return for a device that answered");
  } finally {
    off();
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages tells the date a device failing as its provider comes back gets at its first failed read: failing, now from then", async () => {
  const { fx, timers, outages, changes } = await monitor(INVENTORY, RESTARTING, "pump");
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    changes.length = 0;
    fx.clock.mono = 11_000;
    await restarted(fx, "restarted");
    // Back, not read since: failing from no known moment.
    assert.deepEqual(outages.condition("p0", "pump"), {
      kind: "failing",
      reason: "it has not answered a read since its provider came back",
      sinceMono: null,
    });
    fx.clock.mono = 12_000;
    await fx.program("pump", { read: { error: { code: StatusCode.UNAVAILABLE } } });
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").sinceMono, 12_000);
    assert.deepEqual(
      changes.map((c) => [c.previous, c.condition.kind, c.condition.sinceMono]),
      [["up", "down", 11_000], ["down", "failing", null], ["failing", "failing", 12_000]],
    );
    // Told once: a further failed read tells nothing; past the bound, down again -- dated from
    // its provider's crash, the first moment of that outage (it has not been up since).
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(changes.length, 3);
    timers.advance(DOWN_AFTER_MS);
    assert.deepEqual(
      changes.slice(3).map((c) => [c.previous, c.condition.kind, c.condition.sinceMono]),
      [["failing", "down", 11_000]],
    );
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages.onDeviceReturn tells a provider's returns at most once per DEVICE_RETURN_MIN_INTERVAL_MS: one within it at its end, if still up; the provider's own outage forgets it", async () => {
  const r = await rig();
  const { returned, off } = returnsOf(r.outages);
  const answer = async () => {
    await answerPump(r.fx);
    await r.poll("pump");
  };
  try {
    await failPump(r);
    await answer();
    assert.deepEqual(returned, ["p0/pump"], "the first return: at once");
    // One failed read and its answer within the interval: told at the interval's end.
    r.timers.advance(100);
    await failPump(r);
    await answer();
    assert.deepEqual(returned, ["p0/pump"], "told within the interval");
    r.timers.advance(DEVICE_RETURN_MIN_INTERVAL_MS - 101);
    assert.deepEqual(returned, ["p0/pump"], "told before the interval's end");
    r.timers.advance(1);
    assert.deepEqual(returned, ["p0/pump", "p0/pump"], "at the interval's end");
    // Within the next: its return is pending, but it is out again at the interval's end (told at
    // its next answer, also pending then: the timer fires once).
    r.timers.advance(100);
    await failPump(r);
    await answer();
    await failPump(r);
    r.timers.advance(DEVICE_RETURN_MIN_INTERVAL_MS - 100);
    assert.equal(r.kind("pump"), "down");
    assert.deepEqual(returned.length, 2, "a device out again at the interval's end was told");
    await answer();
    assert.deepEqual(returned.length, 3, "its next answer past the interval: at once");
    // A return pending when its provider goes down is forgotten (the provider's return is whole).
    await failPump(r);
    await answer();
    assert.equal(r.timers.pending.size, 1, "the interval's timer");
    await crashByCall(r);
    assert.equal(r.fx.host.available, false);
    assert.equal(r.timers.pending.size, 0, "the interval's timer is cleared");
    assert.equal(returned.length, 3);
  } finally {
    off();
    await r.close();
  }
});

Deno.test("DeviceOutages: a device already down whose provider a reload removes is told unconfigured, once", async () => {
  const r = await rig();
  const host = r.fx.host;
  try {
    await failPump(r);
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.kind("pump"), "down");
    r.changes.length = 0;
    r.fx.clock.mono = 20_000;
    assert.equal(r.fx.registry.remove("p0"), host);
    // Down -> down, but gone now: the device-loss latch releases it on this change.
    assert.deepEqual(
      r.changes.map((c) => [c.deviceId, c.previous, c.condition.kind, c.condition.unconfigured]),
      [["pump", "down", "down", true], ["switch", "up", "down", true]],
    );
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.changes.length, 2, "told once");
  } finally {
    await host.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a device its provider's health reports UNREACHABLE as the provider came back is out: its answer is told a return", async () => {
  const { fx, outages } = await monitor(INVENTORY, RESTARTING);
  const { returned, off } = returnsOf(outages);
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    await restarted(fx, "restarted");
    assert.equal(outages.condition("p0", "pump").sinceMono, null, "not read since it came back");
    // Its provider's health, not a read, finds it out: dated then, and out.
    fx.clock.mono = 12_000;
    await fx.program("pump", {
      health: { devices: [{ device_id: "pump", state: WireDeviceState.UNREACHABLE }] },
    });
    await fx.cache.fetchReportedHealth(fx.host);
    assert.deepEqual(outages.condition("p0", "pump"), {
      kind: "failing",
      reason: "its provider reports it UNREACHABLE",
      sinceMono: 12_000,
    });
    await fx.program("pump", { health: { devices: [] } });
    await fx.cache.fetchReportedHealth(fx.host);
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    assert.deepEqual(returned, ["p0/pump"], "its return after its provider's health found it out");
  } finally {
    off();
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device failing as its provider came back says it has not answered since, not that its reads fail; another's health report does not date it", async () => {
  const { fx, outages } = await monitor(INVENTORY, RESTARTING);
  try {
    await fx.cache.pollDevice("p0", "pump");
    await restarted(fx, "restarted");
    const c = outages.condition("p0", "pump");
    assert.equal(c.kind, "failing");
    assert.equal(c.sinceMono, null);
    assert.doesNotMatch(c.reason, /reads fail/, "no read has failed");
    assert.match(c.reason, /not answered a read since its provider came back/);
    // A health report that calls another device UNREACHABLE is no failed read of the pump.
    fx.clock.mono = 12_000;
    await fx.program("pump", {
      health: { devices: [{ device_id: "switch", state: WireDeviceState.UNREACHABLE }] },
    });
    await fx.cache.fetchReportedHealth(fx.host);
    assert.equal(outages.condition("p0", "pump").sinceMono, null, "dated by another's health");
    fx.clock.mono = 13_000;
    await fx.program("pump", { read: { error: { code: StatusCode.UNAVAILABLE } } });
    await fx.cache.pollDevice("p0", "pump");
    assert.deepEqual(outages.condition("p0", "pump"), {
      kind: "failing",
      reason: "its reads fail",
      sinceMono: 13_000,
    });
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device a restart left out, whose provider a reload then removes, is told unconfigured, once", async () => {
  const { fx, timers, outages, changes } = await monitor(INVENTORY, RESTARTING);
  const host = fx.host;
  try {
    await fx.cache.pollDevice("p0", "pump");
    await fx.setInventory({ devices: { switch: INVENTORY.devices.switch! } });
    await restarted(fx, "restarted");
    assert.match(outages.condition("p0", "pump").reason, /not in the inventory/);
    changes.length = 0;
    assert.equal(fx.registry.remove("p0"), host);
    assert.deepEqual(
      changes.map((c) => [c.deviceId, c.previous, c.condition.kind, c.condition.unconfigured]),
      [["switch", "up", "down", true], ["pump", "down", "down", true]],
    );
    timers.advance(DOWN_AFTER_MS);
    assert.equal(changes.length, 2, "told once");
  } finally {
    outages.stop();
    await host.stop(2000);
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device a restart left out, listed again by the next, is told its change from down, not taken as first seen", async () => {
  const { fx, outages, changes } = await monitor(INVENTORY, RESTARTING, "pump");
  try {
    await fx.cache.pollDevice("p0", "pump");
    changes.length = 0;
    await fx.setInventory({ devices: { switch: INVENTORY.devices.switch! } });
    await restarted(fx, "restarted without it");
    assert.match(outages.condition("p0", "pump").reason, /not in the inventory/);
    await fx.setInventory(INVENTORY);
    await restarted(fx, "restarted with it");
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    // Each change follows the one told before it (the device-loss latch's return, the incident's
    // failing spell read `previous`).
    assert.deepEqual(changes.map((c) => [c.previous, c.condition.kind]), [
      ["up", "down"],
      ["down", "failing"],
      ["failing", "up"],
    ]);
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device its provider's health reports UNREACHABLE before its first answer says so: that report dates it, and it is lost for it", async () => {
  // A provider just up (started, added or restarted by a reload: its devices not read yet).
  const { fx, timers, outages, changes } = await monitor(INVENTORY, {
    mono: 10_000,
    inProcess: true,
  }, "pump");
  try {
    assert.equal(outages.condition("p0", "pump").reason, "it has not answered a read yet");
    fx.clock.mono = 11_000;
    await fx.program("pump", {
      health: { devices: [{ device_id: "pump", state: WireDeviceState.UNREACHABLE }] },
    });
    await fx.cache.fetchReportedHealth(fx.host);
    const unreachable = "its provider reports it UNREACHABLE";
    assert.deepEqual(outages.condition("p0", "pump"), {
      kind: "failing",
      reason: unreachable,
      sinceMono: 11_000,
    });
    // Down by time from that report: not "it has not answered a read yet" (never down by time).
    timers.advance(DOWN_AFTER_MS);
    assert.deepEqual(
      changes.map((c) => [c.previous, c.condition.kind, c.condition.sinceMono, c.condition.reason]),
      [["failing", "failing", 11_000, unreachable], ["failing", "down", 11_000, unreachable]],
    );
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device down by its reads whose provider then goes down keeps the date of its loss; the reason changes", async () => {
  const r = await rig(); // no restart policy: once killed, it stays down
  try {
    await failPump(r); // failing from 10_000
    r.timers.advance(DOWN_AFTER_MS);
    assert.deepEqual([r.kind("pump"), r.outages.condition("p0", "pump").sinceMono], [
      "down",
      10_000,
    ]);
    r.changes.length = 0;
    r.fx.clock.mono = 12_000;
    r.fx.kill();
    await waitFor("down", () => !r.fx.host.available);
    const c = r.outages.condition("p0", "pump");
    assert.match(c.reason, /^provider p0 is unavailable/);
    // Before: 12_000, untold (status and blocked_devices showed a date later than the loss).
    assert.equal(c.sinceMono, 10_000, "down since its loss, not since its provider went down");
    assert.deepEqual(r.changes.filter((ch) => ch.deviceId === "pump"), [], "nothing to tell");
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages: a device down by its reads whose provider a reload restarts keeps the date of its loss, also once the new process is up without it", async () => {
  const r = await rig();
  const seen = pumpDuringRestart(r);
  try {
    await failPump(r); // failing from 10_000
    r.timers.advance(DOWN_AFTER_MS);
    assert.equal(r.kind("pump"), "down");
    r.changes.length = 0;
    await r.fx.setInventory({ devices: { switch: INVENTORY.devices.switch! } });
    r.fx.clock.mono = 20_000;
    await reloadRestartingP0(r);
    // Before: 21_000 at the take-out, and 20_000 (the take-out) once the new process was up.
    assert.deepEqual(seen, [["no host", 10_000], ["successor up: false", 10_000]]);
    const c = r.outages.condition("p0", "pump");
    assert.deepEqual([c.kind, c.reason, c.sinceMono], [
      "down",
      "not in the inventory of provider p0",
      10_000,
    ]);
    // Lost already: not lost again (nothing told of it), and its date never told otherwise.
    assert.deepEqual(r.changes.filter((ch) => ch.deviceId === "pump"), []);
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a device down by its reads whose provider a reload removes is told unconfigured with the date of its loss", async () => {
  const r = await rig();
  const host = r.fx.host;
  try {
    await failPump(r); // failing from 10_000
    r.timers.advance(DOWN_AFTER_MS);
    r.changes.length = 0;
    r.fx.clock.mono = 20_000;
    assert.equal(r.fx.registry.remove("p0"), host);
    // Before: told with 20_000, the removal.
    assert.deepEqual(
      r.changes.map((c) => [c.deviceId, c.condition.unconfigured, c.condition.sinceMono]),
      [["pump", true, 10_000], ["switch", true, 20_000]],
    );
  } finally {
    await host.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages: a device a restart left out keeps its date through its provider's next crash and return", async () => {
  const { fx, outages, changes } = await monitor(INVENTORY, RESTARTING, "pump");
  // The pump's date each time its provider goes down (this listener runs after the monitor's).
  const whenDown: (number | null)[] = [];
  fx.host.onAvailability((up) => {
    if (!up) whenDown.push(outages.condition("p0", "pump").sinceMono);
  });
  try {
    await fx.cache.pollDevice("p0", "pump");
    await fx.setInventory({ devices: { switch: INVENTORY.devices.switch! } });
    fx.clock.mono = 11_000;
    await restarted(fx, "restarted without it");
    assert.equal(outages.condition("p0", "pump").sinceMono, 11_000);
    changes.length = 0;
    fx.clock.mono = 13_000;
    await restarted(fx, "restarted again");
    // Before: 13_000 while its provider was down (then 11_000 again), untold both ways.
    assert.deepEqual(whenDown, [11_000, 11_000]);
    const c = outages.condition("p0", "pump");
    assert.deepEqual([c.kind, c.reason, c.sinceMono], [
      "down",
      "not in the inventory of provider p0",
      11_000,
    ]);
    assert.deepEqual(changes, [], "nothing to tell");
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device failing by its reads whose provider then goes down is down since it began failing, as a loss at the bound would be", async () => {
  const r = await rig(); // no restart policy: once killed, it stays down
  try {
    await failPump(r); // failing from 10_000
    assert.deepEqual([r.kind("pump"), r.outages.condition("p0", "pump").sinceMono], [
      "failing",
      10_000,
    ]);
    r.changes.length = 0;
    r.fx.clock.mono = 10_200; // within the bound: not down by its reads yet
    r.fx.kill();
    await waitFor("down", () => !r.fx.host.available);
    const c = r.outages.condition("p0", "pump");
    assert.match(c.reason, /^provider p0 is unavailable/);
    // Before: 10_200 (its provider's outage), told so: blocked_devices' date moved later within
    // one outage, and the incident (dated from its first failed read) disagreed with the status.
    assert.equal(c.sinceMono, 10_000, "down since its reads began failing");
    assert.deepEqual(
      r.changes.filter((ch) => ch.deviceId === "pump")
        .map((ch) => [ch.previous, ch.condition.kind, ch.condition.sinceMono]),
      [["failing", "down", 10_000]],
    );
  } finally {
    await r.close();
  }
});

Deno.test("DeviceOutages: a device lost by its reads whose provider (a real child) crashes and comes back with it failing still is down again since its loss, not since its later failed reads", async () => {
  // A real child process with a restart policy: the provider crashes and is started again while
  // the device's reads fail throughout (docs/safety.md: a device down stays down since the first
  // moment of that outage until it is up again).
  const fx = await startProgrammable(INVENTORY, { mono: 10_000, restart: {} });
  const timers = new Timers(fx);
  const outages = new DeviceOutages({
    registry: fx.registry,
    cache: fx.cache,
    clock: timers.clock,
    downAfterMs: DOWN_AFTER_MS,
  });
  const changes: DeviceConditionChange[] = [];
  outages.onChange((c) => c.deviceId === "pump" && changes.push(c));
  try {
    await fx.cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    changes.length = 0;
    await fx.program("pump", { read: { error: { code: StatusCode.NOT_FOUND } } });
    await fx.cache.pollDevice("p0", "pump"); // failing from 10_000
    timers.advance(DOWN_AFTER_MS);
    assert.deepEqual(
      [outages.condition("p0", "pump").kind, outages.condition("p0", "pump").sinceMono],
      ["down", 10_000],
    );
    fx.clock.mono = 12_000;
    const pid = fx.kill();
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    // The new process: the device fails still (programmed before any read of it).
    await fx.program("pump", { read: { error: { code: StatusCode.NOT_FOUND } } });
    const seen: [string, number | null][] = [];
    const note = () => {
      const c = outages.condition("p0", "pump");
      seen.push([c.kind, c.sinceMono]);
    };
    note(); // back, not read since
    fx.clock.mono = 13_000;
    await fx.cache.pollDevice("p0", "pump"); // its first failed read since
    note();
    timers.advance(DOWN_AFTER_MS);
    note();
    // Failing as its provider came back (undated until its first failed read since, as
    // documented); down again, it is the same outage (never up in between): dated from its loss.
    // Before: ["down", 13_000] -- blocked_devices.since_epoch_ms moved past the loss.
    assert.deepEqual(seen, [["failing", null], ["failing", 13_000], ["down", 10_000]]);
    assert.deepEqual(
      changes.map((c) => [c.previous, c.condition.kind, c.condition.sinceMono]),
      [
        ["up", "failing", 10_000],
        ["failing", "down", 10_000],
        ["down", "failing", null],
        ["failing", "failing", 13_000],
        ["failing", "down", 10_000],
      ],
    );
  } finally {
    outages.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a device a reload's restart took out (on purpose), listed again and then lost by its reads, is down since its first failed read, not since the take-out", async () => {
  const r = await rig();
  try {
    r.fx.clock.mono = 11_000;
    await reloadRestartingP0(r); // the pump up, taken out on purpose: no outage of its own
    await waitFor("successor up", () => r.fx.registry.host("p0")?.available === true);
    // The successor's process (fx.program reaches the first host's): the pump's reads fail.
    const fake = r.fx.fakes!.process(r.fx.registry.host("p0")!.session!.pid)!.handler;
    programFake(fake as FakeProvider, "pump", { read: { error: { code: StatusCode.NOT_FOUND } } });
    r.fx.clock.mono = 13_000;
    await r.poll("pump"); // its first failed read since the reload
    r.timers.advance(DOWN_AFTER_MS);
    const c = r.outages.condition("p0", "pump");
    // Before: down since 11_000 -- the operator's take-out dated as the start of its loss.
    assert.deepEqual([c.kind, c.sinceMono, c.reloading], ["down", 13_000, undefined]);
    assert.deepEqual(
      r.changes.filter((ch) => ch.deviceId === "pump").slice(-1)
        .map((ch) => [ch.previous, ch.condition.kind, ch.condition.sinceMono]),
      [["failing", "down", 13_000]],
    );
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
  }
});

Deno.test("DeviceOutages judges a new inventory by the cache's entries whether the cache hears it before or after the monitor", async () => {
  const fx = await startProgrammable(INVENTORY, RESTARTING);
  const timers = new Timers(fx);
  // A cache of its own whose host listeners are registered after the monitor's: each host tells
  // the monitor its inventory first (the kernel builds the cache first: the other order).
  const held: ((host: ProviderHost) => void)[] = [];
  const registry = fx.registry;
  const view = {
    eachHost: (l: (host: ProviderHost) => void) => void held.push(l),
    host: (id: string) => registry.host(id),
    get hosts() {
      return registry.hosts;
    },
    onHostRemoved: (l: (host: ProviderHost) => void) => registry.onHostRemoved(l),
    onUnconfigured: (l: (id: string) => void) => registry.onUnconfigured(l),
  } as unknown as ProviderRegistry;
  const cache = new StateCache({
    registry: view,
    bus: new EventBus(),
    clock: fx.clock,
    log: testLogger(),
    intervalMs: 60_000,
  });
  const outages = monitorOn({ ...fx, cache }, timers.clock);
  for (const l of held) registry.eachHost(l);
  const changes: DeviceConditionChange[] = [];
  outages.onChange((c) => changes.push(c));
  try {
    await cache.pollDevice("p0", "pump");
    assert.equal(outages.condition("p0", "pump").kind, "up");
    // Before: the switch (no polled signal), judged before the cache held it, was down ("not in
    // the inventory") for good.
    assert.equal(outages.condition("p0", "switch").kind, "up");
    changes.length = 0;
    // The next process lists the switch and a new valve, not the pump.
    await fx.setInventory({
      devices: { switch: INVENTORY.devices.switch!, valve: INVENTORY.devices.switch! },
    });
    await restarted(fx, "restarted");
    // Before (with the switch's start above left aside): the pump, judged by the cache's entry of
    // the old inventory, was told down -> failing ("not answered since its provider came back"),
    // then forgotten so; the valve, not in the cache yet, taken as down at first sight, was told
    // down -> up.
    assert.deepEqual(
      changes.map((c) => [c.deviceId, c.previous, c.condition.kind, c.condition.reason]),
      [
        ["pump", "up", "down", "provider p0 is unavailable (RESTARTING)"],
        ["switch", "up", "down", "provider p0 is unavailable (RESTARTING)"],
        ["switch", "down", "up", ""],
      ],
    );
    assert.match(outages.condition("p0", "pump").reason, /^not in the inventory of provider p0$/);
    assert.equal(outages.condition("p0", "valve").kind, "up");
  } finally {
    outages.stop();
    await cache.stop();
    await fx.close();
  }
});

Deno.test("DeviceOutages: a provider a reload adds that is up and then crashes while the reload still starts another is lost in its own words, not 'being started'", async () => {
  const r = await rig();
  // Two providers the reload adds: p2 answers, p1's Hello is never answered (the reload goes on
  // until the test ends p1's start).
  const hangFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(hangFile, JSON.stringify({ ...INVENTORY, hello: { hang: true } }));
  const upFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(upFile, JSON.stringify(INVENTORY));
  const p0 = r.fx.host.config;
  const p1 = programmableProvider("p1", hangFile);
  const p2 = programmableProvider("p2", upFile);
  try {
    let reloaded = false;
    const reload = r.fx.registry.reconcile([p0], [p0, p1, p2], {
      holdRemovals: false,
      stopBudgetMs: 2000,
      startBudgetMs: 30_000,
      stopping: () => false,
    }).finally(() => reloaded = true);
    const added = await waitFor("p2 up", () => {
      const h = r.fx.registry.host("p2");
      return h !== undefined && h.available ? h : undefined;
    });
    const addedPid = added.session!.pid;
    const p1Process = await waitFor(
      "p1's process",
      () =>
        r.fx.fakes!.running().find((p) => p.pid !== addedPid && p.pid !== r.fx.host.session!.pid),
    );
    // p2's process dies while the reload waits for p1 (no restart policy: it stays down).
    r.fx.fakes!.process(addedPid)!.kill("SIGKILL");
    await waitFor("p2 down", () => !added.available);
    assert.equal(reloaded, false, "the reload is still running");
    const pump = r.outages.condition("p2", "pump");
    // Before: "provider p2 is being started by a configuration reload" -- a crash of the process
    // the reload had started and seen up, said as its start.
    assert.equal(pump.kind, "down");
    assert.equal(pump.reloading, undefined);
    assert.match(pump.reason, /^provider p2 is unavailable \(/);
    p1Process.kill("SIGKILL");
    await reload;
  } finally {
    await r.fx.registry.host("p1")?.stop(2000);
    await r.fx.registry.host("p2")?.stop(2000);
    await r.close();
    await Deno.remove(hangFile).catch(() => {});
    await Deno.remove(upFile).catch(() => {});
  }
});

Deno.test("DeviceOutages: a provider a reload adds, registered and not up, reads as stopping once the runtime stops it, not 'being started'", async () => {
  const r = await rig();
  // The provider the reload adds: its Hello is never answered (registered, not up) until the
  // runtime's stop ends its start.
  const hangFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(hangFile, JSON.stringify({ ...INVENTORY, hello: { hang: true } }));
  const p0 = r.fx.host.config;
  const p1 = programmableProvider("p1", hangFile);
  let stopping = false;
  try {
    const reload = r.fx.registry.reconcile([p0], [p0, p1], {
      holdRemovals: false,
      stopBudgetMs: 2000,
      startBudgetMs: 30_000,
      stopping: () => stopping,
    });
    await waitFor(
      "p1 registered, its process spawned",
      () => r.fx.registry.host("p1") !== undefined && r.fx.fakes!.running().length === 2,
    );
    assert.equal(
      r.outages.condition("p1", "pump").reason,
      "provider p1 is being started by a configuration reload",
    );
    // The runtime stops (Kernel.stop: stopping, then stopAll) while the reload starts p1.
    stopping = true;
    const stopped = r.fx.registry.stopAll(2000);
    assert.equal(r.fx.registry.host("p1")?.available, false, "p1 is still registered");
    // Before: "provider p1 is being started by a configuration reload" until the reload ended.
    assert.equal(r.outages.condition("p1", "pump").reason, "provider p1 is unavailable (DOWN)");
    assert.equal(r.fx.registry.startingText("p1"), null);
    await stopped;
    const report = await reload;
    assert.deepEqual(report.added, []);
    // The stop cut its start (its host stopped under its Hello): not started, the stop's doing.
    assert.deepEqual(report.failed, [{ id: "p1", why: "the runtime is stopping" }]);
  } finally {
    await r.fx.registry.host("p1")?.stop(2000);
    await r.close();
    await Deno.remove(hangFile).catch(() => {});
  }
});

Deno.test("DeviceOutages: a provider a reload restarts, its successor registered and not up, reads as stopping once the runtime stops it, not 'being restarted' on purpose", async () => {
  const r = await rig();
  // p0's changed entry: its new process never answers Hello (registered, not up) until the
  // runtime's stop ends its start.
  const hangFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(hangFile, JSON.stringify({ ...INVENTORY, hello: { hang: true } }));
  const p0 = r.fx.host.config;
  let stopping = false;
  try {
    const reload = r.fx.registry.reconcile([p0], [programmableProvider("p0", hangFile)], {
      holdRemovals: false,
      stopBudgetMs: 2000,
      startBudgetMs: 30_000,
      stopping: () => stopping,
    });
    await waitFor("p0's successor registered, its process spawned", () => {
      const h = r.fx.registry.host("p0");
      return h !== undefined && h !== r.fx.host && r.fx.fakes!.running().length === 1;
    });
    const restarting = r.outages.condition("p0", "pump");
    assert.deepEqual(
      [restarting.reason, restarting.reloading],
      ["provider p0 is being restarted by a configuration reload", true],
    );
    // The runtime stops (Kernel.stop: stopping, then stopAll) while the reload restarts p0.
    stopping = true;
    const told = r.changes.length;
    const stopped = r.fx.registry.stopAll(2000);
    assert.equal(r.fx.registry.host("p0")?.available, false, "p0's successor is still registered");
    // Before: "provider p0 is being restarted by a configuration reload", reloading: true, until
    // the reload ended.
    const pump = r.outages.condition("p0", "pump");
    assert.deepEqual([pump.kind, pump.reason, pump.reloading], [
      "down",
      "provider p0 is unavailable (DOWN)",
      undefined,
    ]);
    assert.equal(r.fx.registry.restartingText("p0"), null);
    assert.equal(r.fx.registry.reloadStart("p0"), null);
    await stopped;
    const report = await reload;
    assert.deepEqual(report.restarted, []);
    // The stop cut its start (its host stopped under its Hello): not started, the stop's doing.
    assert.deepEqual(report.failed, [{ id: "p0", why: "the runtime is stopping" }]);
    // Nothing told the pump lost meanwhile (the take-out told it down on purpose; the stop tells
    // nothing of a device its successor never listed).
    assert.deepEqual(r.changes.slice(told), []);
  } finally {
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
    await Deno.remove(hangFile).catch(() => {});
  }
});

Deno.test("DeviceOutages: a provider a reload adds, not registered yet when the runtime stops, no longer reads as being started", async () => {
  const r = await rig();
  const p0 = r.fx.host.config;
  const p1 = { ...p0, id: "p1" };
  // p0's entry changes: the reload waits for p0's let-go (beforeStop) before it registers p1.
  let letGo!: () => void;
  const held = new Promise<void>((res) => letGo = res);
  let askedToLetGo = false;
  let stopping = false;
  try {
    const reload = r.fx.registry.reconcile([p0], [{ ...p0, timeoutMs: p0.timeoutMs + 1 }, p1], {
      holdRemovals: false,
      stopBudgetMs: 2000,
      startBudgetMs: 30_000,
      stopping: () => stopping,
      beforeStop: () => {
        askedToLetGo = true;
        return held;
      },
    });
    await waitFor("the reload waits for p0's let-go", () => askedToLetGo);
    const starting = "provider p1 is being started by a configuration reload";
    assert.equal(r.outages.condition("p1", "pump").reason, starting);
    assert.equal(r.fx.registry.whyNotRunning("p1"), starting);
    // The runtime stops (Kernel.stop: stopping, then stopAll) while the reload waits.
    stopping = true;
    const stopped = r.fx.registry.stopAll(2000);
    // Before: "being started by a configuration reload" (GET /v0/providers/health, the device
    // conditions) until the reload got past p0's let-go, though nothing would start p1 any more;
    // p0, still registered and stopping, read "being restarted".
    const notStarted = "provider p1 is not running: a configuration reload failed to start it";
    assert.equal(r.outages.condition("p1", "pump").reason, notStarted);
    assert.equal(r.fx.registry.whyNotRunning("p1"), notStarted);
    assert.equal(r.fx.registry.restartingText("p0"), null);
    assert.doesNotMatch(r.outages.condition("p0", "pump").reason, /configuration reload/);
    await stopped;
    letGo();
    const report = await reload;
    assert.deepEqual([report.added, report.restarted], [[], []]);
    assert.deepEqual(report.failed.map(failedStartText).sort(), [
      "p0: the runtime is stopping",
      "p1: the runtime is stopping",
    ]);
    assert.equal(r.fx.registry.host("p1"), undefined, "p1 never registered");
  } finally {
    letGo();
    await r.close();
  }
});

Deno.test("DeviceOutages: a reload's successor that is up and then crashes while the reload still starts another provider is lost, not down on purpose", async () => {
  const r = await rig();
  // A provider the same reload adds, whose Hello is never answered: the reload goes on until the
  // test ends its start (kills its process).
  const hangFile = await Deno.makeTempFile({ prefix: "programmable-", suffix: ".json" });
  await Deno.writeTextFile(hangFile, JSON.stringify({ ...INVENTORY, hello: { hang: true } }));
  const p0 = r.fx.host.config;
  const p1 = programmableProvider("p1", hangFile);
  try {
    let reloaded = false;
    const reload = r.fx.registry.reconcile([p0], [{ ...p0, timeoutMs: p0.timeoutMs + 1 }, p1], {
      holdRemovals: false,
      stopBudgetMs: 2000,
      startBudgetMs: 30_000,
      stopping: () => false,
    }).finally(() => reloaded = true);
    await waitFor("p0's successor up", () => {
      const h = r.fx.registry.host("p0");
      return h !== undefined && h !== r.fx.host && h.available;
    });
    const successor = r.fx.registry.host("p0")!;
    const successorPid = successor.session!.pid;
    // p1's process, spawned once its turn in the spawn queue came.
    const p1Process = await waitFor(
      "p1's process",
      () => r.fx.fakes!.running().find((p) => p.pid !== successorPid),
    );
    // The successor's process dies while the reload waits for p1 (no restart policy: it stays
    // down).
    r.fx.fakes!.process(successorPid)!.kill("SIGKILL");
    await waitFor("p0's successor down", () => !successor.available);
    assert.equal(reloaded, false, "the reload is still running");
    const pump = r.outages.condition("p0", "pump");
    // Before: "provider p0 is being restarted by a configuration reload", reloading: true -- a
    // crash of the process the reload had started, called on purpose (no incident, the latch's
    // reason the reload's).
    assert.equal(pump.kind, "down");
    assert.equal(pump.reloading, undefined);
    assert.match(pump.reason, /^provider p0 is unavailable \(/);
    const told = r.changes.filter((c) => c.deviceId === "pump").at(-1)!;
    assert.deepEqual([told.condition.kind, told.condition.reloading], ["down", undefined]);
    p1Process.kill("SIGKILL");
    const report = await reload;
    assert.deepEqual(report.restarted, ["p0"]);
  } finally {
    await r.fx.registry.host("p1")?.stop(2000);
    await r.fx.registry.host("p0")?.stop(2000);
    await r.close();
    await Deno.remove(hangFile).catch(() => {});
  }
});
