/**
 * A minimal ADPP provider for safety tests, run as a real child process. One device `plant0`:
 * a heater relay and a fan duty (ACTUATE) plus `read_status` (READ: counts reads, answers the count).
 *
 * Why not the simulated provider: its always-present chaos_control device has actuating
 * functions (crash, send_garbage_frame, ...) that no setpoint may call, so the sim can never be
 * fully covered by setpoints, and the sim has no READ function to show that read-only calls pass
 * the latch.
 */
import {
  DeviceProvider,
  type FunctionDefinition,
  runStdioProvider,
  toWireValue,
} from "../../src/provider_sdk/mod.ts";

/**
 * `--latency-ms N`: every actuating call answers N ms after it arrived (a slow provider; the
 * provider serves one request at a time, so its polls wait too).
 */
const latencyArg = Deno.args.indexOf("--latency-ms");
const LATENCY_MS = latencyArg >= 0 ? Number(Deno.args[latencyArg + 1]) : 0;

/**
 * `--grow-marker PATH`: the first process (PATH absent) creates PATH and declares only its READ
 * function; a later process (a restart) declares every function, so a rediscovery adds
 * actuating functions.
 */
const markerArg = Deno.args.indexOf("--grow-marker");
let readOnly = false;
if (markerArg >= 0) {
  try {
    await Deno.writeTextFile(Deno.args[markerArg + 1]!, "started once\n", { createNew: true });
    readOnly = true;
  } catch (err) {
    if (!(err instanceof Deno.errors.AlreadyExists)) throw err;
  }
}

/** lastCallMs: epoch ms at which the last actuating call arrived (before any latency). */
const state = { heater: false, fanDuty: 0, reads: 0, lastCallMs: 0 };

async function arrived(): Promise<void> {
  state.lastCallMs = Date.now();
  if (LATENCY_MS > 0) await new Promise((r) => setTimeout(r, LATENCY_MS));
}

const provider = new DeviceProvider({ name: "plant-test", version: "0.0.1" }, [{
  deviceId: "plant0",
  typeId: "test.plant",
  typeVersion: "1.0",
  label: "Test plant (heater + fan)",
  signals: [
    {
      id: "heater_on",
      name: "Heater On",
      type: "bool",
      pollHintHz: 2,
      staleAfterMs: 2000,
      read: () => state.heater,
    },
    {
      id: "fan_duty",
      name: "Fan Duty",
      type: "double",
      pollHintHz: 2,
      staleAfterMs: 2000,
      read: () => state.fanDuty,
    },
    {
      id: "status_reads",
      name: "Status Reads",
      type: "int64",
      pollHintHz: 2,
      staleAfterMs: 2000,
      read: () => state.reads,
    },
    {
      id: "last_call_ms",
      name: "Last actuating call arrival (epoch ms)",
      type: "double",
      pollHintHz: 2,
      staleAfterMs: 2000,
      read: () => state.lastCallMs,
    },
  ],
  functions: ([
    {
      id: 1,
      name: "set_heater",
      category: "ACTUATE",
      args: [{ name: "enabled", type: "bool" }],
      handler: async (args) => {
        await arrived();
        state.heater = args.bool("enabled");
      },
    },
    {
      id: 2,
      name: "set_fan",
      category: "ACTUATE",
      args: [{ name: "duty", type: "double", min: 0, max: 1 }],
      handler: async (args) => {
        await arrived();
        state.fanDuty = args.double("duty");
      },
    },
    {
      id: 3,
      name: "read_status",
      category: "READ",
      // Answers the read count, plus a result without a value (the runtime drops it).
      handler: () => {
        state.reads++;
        return { reads: toWireValue("int64", state.reads), unset: {} };
      },
    },
  ] satisfies FunctionDefinition[]).filter((f) => !readOnly || f.category === "READ"),
}]);

await runStdioProvider(provider);
