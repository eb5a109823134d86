/**
 * The provider contract (_provider_contract.ts) against the in-process fake and real child
 * processes: the plant (tests/helpers/fake_provider.ts, a FakeProvider) in-process and as a child,
 * and the simulated provider (examples/providers/sim) as a child and in-process. The same provider
 * entry runs both ways; only the SpawnFn differs.
 */
import assert from "node:assert/strict";
import { AdppClient, type WireValue, WireValueType } from "../../src/adpp/mod.ts";
import { ADPP_PROTOCOL_VERSION } from "../../src/common/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { inProcessSpawn } from "../helpers/in_process_provider.ts";
import { TEST_PROGRAMS } from "../helpers/programs.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";
import { plantProvider } from "../safety/_fixture.ts";
import { type ContractSubject, providerContract } from "./_provider_contract.ts";

const bool = (v: boolean): WireValue => ({ type: WireValueType.BOOL, bool_value: v });
const double = (v: number): WireValue => ({ type: WireValueType.DOUBLE, double_value: v });
const string = (v: string): WireValue => ({ type: WireValueType.STRING, string_value: v });

const inProcess = inProcessSpawn(TEST_PROGRAMS).spawn;

const plant = {
  config: plantProvider("plant"),
  device: "plant0",
  signal: { id: "fan_duty", type: "double" },
  call: { functionId: 2, args: { duty: double(0.5) } },
  refused: { functionId: 2, args: { duty: double(5) } },
} as const;

const sim = {
  config: simProvider("sim0", { yaml: SIM_INERT_YAML }),
  device: "relayio0",
  signal: { id: "relay_ch1_state", type: "bool" },
  call: { functionId: 1, args: { enabled: bool(true) } },
  refused: { functionId: 1, args: { enabled: string("yes") } },
} as const;

const SUBJECTS: ContractSubject[] = [
  { name: "fake provider (plant, in-process)", spawn: inProcess, ...plant },
  { name: "plant (real child)", spawn: spawnProcess, ...plant },
  { name: "simulated provider (real child)", spawn: spawnProcess, ...sim },
  { name: "simulated provider (in-process)", spawn: inProcess, ...sim },
];

for (const s of SUBJECTS) providerContract(s);

Deno.test("the simulated provider answers discovery, reads and health in-process exactly as its child does", async () => {
  /** ListDevices, each DescribeDevice, a read of each (without timestamps) and GetHealth. */
  const transcript = async (spawn: typeof inProcess) => {
    const cfg = sim.config;
    const proc = spawn({ command: cfg.command, args: cfg.args, cwd: Deno.cwd() });
    const client = new AdppClient(proc.stdout, proc.stdin, { clock: systemClock });
    const stderr = new Response(proc.stderr).text();
    try {
      const out: unknown[] = [];
      out.push(await client.request("hello", { protocol_version: ADPP_PROTOCOL_VERSION }, 10_000));
      const list = await client.request("list_devices", {}, 10_000);
      out.push(list);
      for (const d of list.devices ?? []) {
        out.push(await client.request("describe_device", { device_id: d.device_id! }, 10_000));
        const read = await client.request("read_signals", { device_id: d.device_id! }, 10_000);
        out.push((read.values ?? []).map(({ timestamp: _, ...v }) => v));
      }
      out.push(await client.request("get_health", {}, 10_000));
      return JSON.stringify(out, (_k, v) => typeof v === "bigint" ? `${v}n` : v);
    } finally {
      await client.close();
      await proc.exited;
      await stderr;
    }
  };
  assert.equal(await transcript(inProcess), await transcript(spawnProcess));
});
