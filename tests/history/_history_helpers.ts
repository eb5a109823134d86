/**
 * A runtime over the programmable provider (exact values) with a wall clock the test sets, served
 * on loopback: each test polls by hand (`poll`) at the times it chooses, so every sample of the
 * history is known. polling.interval_ms is a minute: no poll comes but the priming one and these.
 */
import assert from "node:assert/strict";
import type { AlarmConfig, Config } from "../../src/config/mod.ts";
import type { Kernel, KernelHost } from "../../src/app/kernel.ts";
import { startServing, tempDir, waitFor } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  type Inventory,
  programmableProvider,
  type Sample,
  T,
  TestClock,
} from "../helpers/programmable_provider.ts";
import { testConfig, type TestConfigOptions } from "../helpers/sim_config.ts";

/** Start of the tests' wall clock: a multiple of every step they use. */
export const T0 = 1_700_000_000_000;

/** The probe device: a double, an int64 and a string. */
export const PROBE: Inventory = {
  devices: {
    probe: {
      signals: [
        { id: "temp", type: T.DOUBLE },
        { id: "count", type: T.INT64 },
        { id: "label", type: T.STRING },
      ],
      values: [],
    },
  },
};

/** The probe's samples for temp, count and label. */
export function probeValues(temp: number, count: number, label = "run"): Sample[] {
  return [
    { id: "temp", type: T.DOUBLE, double: temp, quality: 1 },
    { id: "count", type: T.INT64, int64: String(count), quality: 1 },
    { id: "label", type: T.STRING, string: label, quality: 1 },
  ];
}

export interface HistoryRig {
  readonly rt: Kernel;
  readonly clock: TestClock;
  readonly base: string;
  readonly dataDir: string;
  /** Sets the provider's answer, the wall clock, and polls the probe once. */
  poll(atMs: number, values: readonly Sample[]): Promise<void>;
  get(path: string, headers?: Record<string, string>): Promise<Response>;
  // deno-lint-ignore no-explicit-any
  json(path: string): Promise<any>;
  /** POST /v0/estop (with `reason` when given); asserts it answered 200. */
  estop(reason?: string): Promise<void>;
  /** The newest incident of GET /v0/incidents, once one is listed. */
  // deno-lint-ignore no-explicit-any
  incident(): Promise<any>;
}

/** probe's temp above 50 raises it (no action: an e-stop is the operator's). */
export const HOT: AlarmConfig = {
  id: "hot",
  signal: "p0/probe/temp",
  providerId: "p0",
  deviceId: "probe",
  signalId: "temp",
  limits: { hi: 50 },
  level: "MAJOR",
  hysteresis: 0,
  delayMs: 0,
  onBadQuality: "ignore",
  action: "none",
  message: "too hot",
  path: "alarms[0]",
};

/** A file holding the probe inventory (removed by the caller's temp folder). */
export async function probeFile(dir: string, inventory: Inventory = PROBE): Promise<string> {
  const file = `${dir}/probe.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  return file;
}

/** The probe with one signal, temp (a double), declared in `unit`. */
export function probeTempIn(unit: string): Inventory {
  return {
    devices: {
      probe: { signals: [{ id: "temp", type: T.DOUBLE, unit }], values: [] },
    },
  };
}

/**
 * A reload that restarts the rig's provider p0 (its command line changed: a new process, which
 * reads its inventory file again); asserts the reload says so.
 */
export async function reloadRestartingP0(rig: HistoryRig): Promise<void> {
  const config = rig.rt.config;
  const p0 = config.providers[0]!;
  const report = await rig.rt.reload({
    ...config,
    providers: [{ ...p0, args: [...p0.args, "--restarted"] }],
  });
  assert.deepEqual(report.providers.restarted, ["p0"]);
}

/**
 * The probe's inventory file rewritten to `inventory`, in which temp is declared in `unit`; p0
 * restarted by a reload (reloadRestartingP0); waits until the runtime has temp declared in `unit`.
 */
export async function restartDeclaringTempIn(
  rig: HistoryRig,
  inventory: Inventory,
  unit: string,
): Promise<void> {
  const declared = () =>
    rig.rt.inventory.capabilities("p0", "probe")?.signals.find((s) => s.signalId === "temp")
      ?.unit === unit;
  // The restarted provider's polls as it comes up are waited for too -- the reload's own (each
  // device of a provider it started is polled before it ends) and its poll loop's, woken as it
  // comes up (StateCache: a provider back is asked at once), on a timer that may fire after the
  // reload's poll, or be folded into it: one still to come when the caller's next poll programs
  // its answer would read that answer as well, a second point at the caller's time. So: one told,
  // none in flight, and none for RESTART_POLLS_SETTLE_MS since the last (a timer due at once has
  // fired by then).
  let lastPollAt: number | null = null;
  const off = rig.rt.cache.onDevicePolled((d) => {
    if (d.providerId === "p0" && d.deviceId === "probe" && declared()) {
      lastPollAt = performance.now();
    }
  });
  try {
    await probeFile(rig.dataDir, inventory);
    await reloadRestartingP0(rig);
    await waitFor(`temp declared in ${unit}`, declared);
    await waitFor(
      "the restarted provider's polls as it came up, then none in flight",
      () =>
        lastPollAt !== null && performance.now() - lastPollAt >= RESTART_POLLS_SETTLE_MS &&
        rig.rt.cache.pollsInFlight().length === 0,
    );
  } finally {
    off();
  }
}

/** restartDeclaringTempIn: how long no poll of the restarted provider means none is to come. */
const RESTART_POLLS_SETTLE_MS = 100;

/** Starts a runtime over the probe; the caller stops `rig.rt`. */
export async function startRig(o: {
  history?: Partial<Config["history"]>;
  dataDir?: string;
  clock?: TestClock;
  host?: Partial<KernelHost>;
  inventoryFile?: string;
  sparkplug?: Partial<Config["sparkplug"]>;
  alarms?: Config["alarms"];
  interlocks?: Config["interlocks"];
  safety?: TestConfigOptions["safety"];
  /** Restart the provider when it exits (it reads its inventory file again: a rediscovery). */
  restart?: boolean;
} = {}): Promise<HistoryRig> {
  const dataDir = o.dataDir ?? tempDir("history-data-");
  const clock = o.clock ?? new TestClock();
  if (o.clock === undefined) clock.wallMs = T0;
  const file = o.inventoryFile ?? await probeFile(dataDir);
  const config = testConfig({
    providers: [programmableProvider("p0", file, o.restart ? { restart: {} } : {})],
    pollingIntervalMs: 60_000,
    runtime: { dataDir },
    ...(o.history ? { history: o.history } : {}),
    ...(o.sparkplug ? { sparkplug: o.sparkplug } : {}),
    ...(o.alarms ? { alarms: o.alarms } : {}),
    ...(o.interlocks ? { interlocks: o.interlocks } : {}),
    ...(o.safety ? { safety: o.safety } : {}),
  });
  const rt = await startServing(config, { clock, ...o.host });
  const base = `http://127.0.0.1:${rt.http!.port}`;
  const rig: HistoryRig = {
    rt,
    clock,
    base,
    dataDir,
    async poll(atMs, values) {
      await rt.registry.host("p0")!.request("call", {
        device_id: "probe",
        function_id: 1,
        args: {
          answer: { type: T.STRING, string_value: JSON.stringify({ read: { values } }) },
        },
      });
      clock.wallMs = atMs;
      await rt.cache.pollDevice("p0", "probe");
    },
    get: (path, headers = {}) => apiFetch(`${base}${path}`, { headers }),
    async json(path) {
      return await (await apiFetch(`${base}${path}`)).json();
    },
    async estop(reason) {
      const res = await apiFetch(`${base}/v0/estop`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(reason === undefined ? {} : { reason }),
      });
      assert.equal(res.status, 200);
      await res.body?.cancel();
    },
    incident: () =>
      waitFor("the incident record", async () => (await rig.json("/v0/incidents")).incidents[0]),
  };
  return rig;
}

/**
 * A runtime's e-stop incident (every probe signal) on `dataDir`: polls at T0 + 5..20 s, the e-stop,
 * a poll after it; the incident's header as listed once written. The runtime is stopped after.
 */
export async function recordEstopIncident(o: {
  history: Partial<Config["history"]>;
  dataDir: string;
  clock: TestClock;
  inventoryFile: string;
  // deno-lint-ignore no-explicit-any
}): Promise<any> {
  const rig = await startRig(o);
  try {
    for (let i = 5; i <= 20; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
    await rig.estop();
    await rig.poll(T0 + 20_500, probeValues(99, 99, "after"));
    return await rig.incident();
  } finally {
    await rig.rt.stop();
  }
}

/**
 * An alarm's incident an e-stop joins: the probe polled at T0 + 5..19 s, then hot at `alarmAt`
 * (HOT raises, its incident waits); the e-stop (`reason` when given) `laterMs` after it on both
 * clocks, which joins that incident; then the rest of the window (`afterS`) passes on the
 * monotonic clock and the probe is polled once more. The rig's runtime has HOT among its alarms.
 */
export async function alarmThenJoiningEstop(
  rig: HistoryRig,
  o: { alarmAt: number; laterMs: number; afterS: number; reason?: string },
): Promise<void> {
  const { clock } = rig;
  for (let i = 5; i < 20; i++) await rig.poll(T0 + i * 1000, probeValues(i, i));
  const mono = performance.now();
  clock.mono = mono;
  await rig.poll(o.alarmAt, probeValues(60, 20));
  assert.equal(rig.rt.incidents!.status().pending, 1, "the alarm's incident waits");
  clock.mono = mono + o.laterMs;
  clock.wallMs = o.alarmAt + o.laterMs;
  await rig.estop(o.reason);
  assert.equal(rig.rt.incidents!.status().pending, 1, "the e-stop joined the alarm's incident");
  clock.mono = mono + o.afterS * 1000;
  await rig.poll(o.alarmAt + o.laterMs + 500, probeValues(99, 21, "after"));
}
