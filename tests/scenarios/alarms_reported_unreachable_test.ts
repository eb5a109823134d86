/**
 * A device its provider's own health (GetHealth) reports UNREACHABLE is failing from that answer
 * on (docs/safety.md, "A device that drops out"), not from its next poll: for alarms (a bad
 * input), interlocks and the device-loss latch alike. A device whose signals hint slowly is polled
 * seldom (here every 100 s): its next poll may be far off. An input with no sample of a failing
 * device says why the device fails, not that the cache has no sample. The runtime in process over
 * the programmable provider as a child process.
 */
import assert from "node:assert/strict";
import { WireDeviceState } from "../../src/adpp/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import {
  dbl,
  type Inventory,
  programmableProvider,
  Q,
  T,
} from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { alarmsConfig, program } from "./alarms_helpers.ts";

/**
 * The runtime in process over the programmable provider (p0, a child process, listing
 * `inventory`), polling every 100 ms, with the alarms and interlocks of `yaml`; close() stops it
 * and removes the inventory's file.
 */
async function startProbe(
  inventory: Inventory,
  yaml: string,
  staleAfterMs = 0,
): Promise<{ rt: Kernel; close: () => Promise<void> }> {
  const file = await Deno.makeTempFile({ prefix: "probe-", suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  const rt = await startRuntime(testConfig({
    providers: [programmableProvider("p0", file)],
    pollingIntervalMs: 100,
    // 0: the stale bound derived from each device's poll cycle.
    health: { staleness: { warnAfterMs: 0, staleAfterMs } },
    ...alarmsConfig(yaml, ["p0"]),
  }));
  return {
    rt,
    async close() {
      await rt.stop();
      await Deno.remove(file);
    },
  };
}

/** p0 reports the probe UNREACHABLE in its health, and the runtime asked for it (as the poll loop asks). */
async function reportUnreachable(rt: Kernel): Promise<void> {
  await program(rt, "p0", "probe", {
    health: { devices: [{ device_id: "probe", state: WireDeviceState.UNREACHABLE }] },
  });
  assert.notEqual(await rt.cache.fetchReportedHealth(rt.registry.host("p0")!), null);
}

/**
 * A probe whose mode answers (the device is up) and whose temp, declared `tempType`, is polled
 * but has no value: no sample of it is cached.
 */
function probeWithMode(tempType: typeof T.DOUBLE | typeof T.STRING): Inventory["devices"][string] {
  return {
    signals: [{ id: "temp", type: tempType, hint: 0.01 }, {
      id: "mode",
      type: T.STRING,
      hint: 0.01,
    }],
    values: [{ id: "mode", type: T.STRING, string: "open", quality: Q.OK }],
  };
}

/** An interlock probe_il blocking p0/probe/program while the probe's temp is over 80. */
const PROBE_INTERLOCK = `
interlocks:
  - { id: probe_il, block: [p0/probe/program], while: "p0/probe/temp > 80", message: m }
`;

/** Waits for the probe's mode to be polled, and asserts the probe up. */
async function modePolledUp(rt: Kernel): Promise<void> {
  await waitFor("mode polled", () => rt.cache.signal("p0", "probe", "mode")?.quality === "OK");
  assert.equal(rt.outages.condition("p0", "probe").kind, "up");
}

/** The interlock events among `events`, as "blocking reason". */
function interlocksTold(events: readonly RuntimeEvent[]): string[] {
  return events.flatMap((e) => e.kind === "interlock" ? [`${e.blocking} ${e.reason}`] : []);
}

Deno.test("A device its provider reports UNREACHABLE is failing at once, and an alarm reading it raises, before its next poll", async () => {
  const inventory: Inventory = {
    devices: {
      // 0.01 Hz: polled every 100 s, once at start.
      probe: { signals: [{ id: "temp", type: T.DOUBLE, hint: 0.01 }], values: [dbl("temp", 25)] },
    },
  };
  const { rt, close } = await startProbe(
    inventory,
    `
alarms:
  - { id: probe_hot, signal: p0/probe/temp, hi: 80 }
`,
  );
  try {
    const host = rt.registry.host("p0")!;
    await waitFor("temp polled", () => rt.cache.signal("p0", "probe", "temp")?.quality === "OK");
    assert.equal(rt.cache.pollPeriodMs("p0", "probe"), 100_000);
    assert.equal(rt.outages.condition("p0", "probe").kind, "up");
    assert.equal(rt.alarms.alarm("probe_hot").state, "normal");

    await reportUnreachable(rt);
    const c = rt.outages.condition("p0", "probe");
    assert.equal(c.kind, "failing", "failing from the report on");
    assert.match(c.reason, /reports it UNREACHABLE/);
    assert.equal(rt.alarms.alarm("probe_hot").state, "active", "its alarm's input is bad");

    // Reported reachable again: up at once, the alarm's input good again.
    await program(rt, "p0", "probe", { health: {} });
    await rt.cache.fetchReportedHealth(host);
    assert.equal(rt.outages.condition("p0", "probe").kind, "up");
  } finally {
    await close();
  }
});

Deno.test("An alarm's and an interlock's input with no sample of a device failing (its reads answered without it, or reported UNREACHABLE) says so, not 'no sample in the cache'", async () => {
  const inventory: Inventory = {
    // temp is declared and polled, but the provider has no value for it: no sample is cached.
    devices: { probe: { signals: [{ id: "temp", type: T.DOUBLE, hint: 0.01 }] } },
  };
  const { rt, close } = await startProbe(
    inventory,
    `
alarms:
  - { id: probe_hot, signal: p0/probe/temp, hi: 80 }
interlocks:
  - { id: probe_il, block: [p0/probe/program], while: "p0/probe/temp > 80", message: m }
`,
  );
  try {
    assert.equal(rt.cache.signal("p0", "probe", "temp"), undefined, "no sample");
    // Its reads are answered without the signal: failing already, as its conditions say.
    const c = rt.outages.condition("p0", "probe");
    assert.equal(c.kind, "failing");
    const failing = `p0/probe/temp: device p0/probe is failing (${c.reason})`;
    assert.equal(rt.alarms.alarm("probe_hot").bad_input, failing);
    assert.equal(rt.alarms.interlocks()[0]!.reason, `bad input: ${failing}`);
    assert.equal(rt.alarms.interlocks()[0]!.inputs[0]!.bad_input, failing);

    // Reported UNREACHABLE by its provider: the reason follows the device's condition.
    await reportUnreachable(rt);
    const u = rt.outages.condition("p0", "probe");
    assert.match(u.reason, /reports it UNREACHABLE/);
    assert.equal(
      rt.alarms.alarm("probe_hot").bad_input,
      `p0/probe/temp: device p0/probe is ${u.kind} (${u.reason})`,
    );
  } finally {
    await close();
  }
});

Deno.test("An interlock blocking on an input with no sample of a device up tells the device's failing once it is reported UNREACHABLE", async () => {
  const inventory: Inventory = {
    devices: {
      // mode answers (the device is up); temp is polled but has no value: no sample is cached.
      probe: probeWithMode(T.DOUBLE),
    },
  };
  const { rt, close } = await startProbe(inventory, PROBE_INTERLOCK);
  const rec = recordEvents(rt);
  try {
    await modePolledUp(rt);
    assert.equal(
      rt.alarms.interlocks()[0]!.reason,
      "bad input: p0/probe/temp: no sample in the cache",
    );

    await reportUnreachable(rt);
    const c = rt.outages.condition("p0", "probe");
    assert.equal(c.kind, "failing");
    const reason = `bad input: p0/probe/temp: device p0/probe is failing (${c.reason})`;
    assert.equal(rt.alarms.interlocks()[0]!.reason, reason);
    const told = interlocksTold(rec.events);
    assert.deepEqual(told, [`true ${reason}`], "what GET says is told, once");
  } finally {
    rec.stop();
    await close();
  }
});

Deno.test("An interlock blocking on a declared type its comparison cannot take tells nothing more when the device with no sample is reported UNREACHABLE", async () => {
  const inventory: Inventory = {
    devices: {
      // temp is declared a string that '>' cannot compare and has no value: no sample is cached,
      // and why it stays bad once samples come is its declared type, whether the device is up.
      probe: probeWithMode(T.STRING),
    },
  };
  const { rt, close } = await startProbe(inventory, PROBE_INTERLOCK);
  const rec = recordEvents(rt);
  try {
    await modePolledUp(rt);
    const reason = rt.alarms.interlocks()[0]!.reason!;
    assert.match(reason, /^bad input: p0\/probe\/temp is declared string; /);
    const engaged = rec.events.length; // the engage is told by now (or before the recording)

    await reportUnreachable(rt);
    assert.equal(rt.outages.condition("p0", "probe").kind, "failing");
    assert.equal(rt.alarms.interlocks()[0]!.reason, reason, "its declared type is still why");
    const told = interlocksTold(rec.events.slice(engaged));
    assert.deepEqual(told, [], "the same reason is not told again");
  } finally {
    rec.stop();
    await close();
  }
});

Deno.test("An interlock on a device reported UNREACHABLE that still answers fresh values tells its failing once, not again each time the value goes stale between polls", async () => {
  const inventory: Inventory = {
    // Polled every 100 ms (the polling interval), each answer fresh and OK; a stale bound of
    // 50 ms (shorter than the interval, as the configuration warns): stale before each next poll.
    devices: {
      probe: { signals: [{ id: "temp", type: T.DOUBLE, hint: 10 }], values: [dbl("temp", 25)] },
    },
  };
  const staleAfterMs = 50;
  const { rt, close } = await startProbe(inventory, PROBE_INTERLOCK, staleAfterMs);
  const rec = recordEvents(rt);
  try {
    await waitFor("temp polled", () => rt.cache.signal("p0", "probe", "temp")?.quality === "OK");
    const period = rt.cache.pollPeriodMs("p0", "probe") ?? 0;
    assert.ok(period > staleAfterMs, `poll period ${period} ms, longer than the stale bound`);

    await reportUnreachable(rt);
    const c = rt.outages.condition("p0", "probe");
    assert.equal(c.kind, "failing");
    const reason = `bad input: p0/probe/temp: device p0/probe is failing (${c.reason})`;
    // Up to now it may have engaged and released with each turn of the sample (the configuration
    // warns of such a bound); from the report on it blocks on the device's failing.
    assert.equal(rt.alarms.interlocks()[0]!.reason, reason);
    const told = interlocksTold(rec.events);
    assert.equal(told.at(-1), `true ${reason}`, "the device's failing told");
    // Asked (GET /v0/interlocks, as a console does) fresh after each poll and stale before the
    // next, over several periods: the device is failing all along, nothing more to tell.
    let fresh = 0;
    let stale = 0;
    const seen = new Set<string>();
    const ask = () => {
      const s = rt.cache.signal("p0", "probe", "temp");
      const age = s === undefined ? 0 : rt.cache.ageMs(s);
      const view = rt.alarms.interlocks()[0]!;
      seen.add(`${view.blocking} ${view.reason}`);
      if (age > staleAfterMs) stale++;
      else fresh++;
    };
    // Fresh turns asked right as each poll lands (a loaded machine's timers could miss them).
    const off = rt.cache.onDevicePolled((d) => {
      if (d.providerId === "p0" && d.deviceId === "probe") ask();
    });
    try {
      await waitFor("fresh and stale turns seen", async () => {
        ask();
        await new Promise((r) => setTimeout(r, 15));
        return fresh >= 3 && stale >= 3 && rt.outages.condition("p0", "probe").kind === "failing";
      }, 10_000);
    } finally {
      off();
    }
    assert.deepEqual(interlocksTold(rec.events).slice(told.length), [], "told once");
    assert.deepEqual([...seen], [`true ${reason}`], "GET names what was told, fresh or stale");
  } finally {
    rec.stop();
    await close();
  }
});
