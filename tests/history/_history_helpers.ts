/**
 * A runtime over the programmable provider (exact values) with a wall clock the test sets, served
 * on loopback: each test polls by hand (`poll`) at the times it chooses, so every sample of the
 * history is known. polling.interval_ms is a minute: no poll comes but the priming one and these.
 */
import type { Config } from "../../src/config/mod.ts";
import type { Kernel, KernelHost } from "../../src/app/kernel.ts";
import { startServing, tempDir } from "../helpers/kernel.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import {
  type Inventory,
  programmableProvider,
  type Sample,
  T,
  TestClock,
} from "../helpers/programmable_provider.ts";
import { testConfig } from "../helpers/sim_config.ts";

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
}

/** A file holding the probe inventory (removed by the caller's temp folder). */
export async function probeFile(dir: string, inventory: Inventory = PROBE): Promise<string> {
  const file = `${dir}/probe.json`;
  await Deno.writeTextFile(file, JSON.stringify(inventory));
  return file;
}

/** Starts a runtime over the probe; the caller stops `rig.rt`. */
export async function startRig(o: {
  history?: Partial<Config["history"]>;
  dataDir?: string;
  clock?: TestClock;
  host?: Partial<KernelHost>;
  inventoryFile?: string;
  sparkplug?: Partial<Config["sparkplug"]>;
  alarms?: Config["alarms"];
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
  };
  return rig;
}
