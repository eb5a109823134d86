/**
 * A provider on the provider SDK (src/provider_sdk) that declares the policies the runtime
 * enforces (docs/http-api.md, "Provider policies"), run as a real child process by
 * tests/helpers/policy_provider.ts. Devices:
 *
 * - `act0`: functions with a FunctionPolicy -- 1 `pulse` (ACTUATE, min_interval_ms 1000),
 *   2 `auto_only` (ACTUATE, allowed_modes [AUTO]), 3 `leased` (ACTUATE, requires_lease),
 *   4 `peek` (READ, allowed_modes [MANUAL]), 5 `set_level` (ACTUATE, no policy); no signals.
 * - `fast0`: signal `v`, poll hint 10 Hz, no stale_after_ms.
 * - `slow0`: signal `t`, poll hint 0.5 Hz (a 2 s period), stale_after_ms 10000.
 * - `tight0`: signal `p`, poll hint 0.1 Hz but stale_after_ms 600 (the period is capped to 300).
 * - `meta0`: function 1 `stats` (READ): ReadSignals per device and calls per act0 function so far;
 *   function 2 `fail` (READ, args `device`, `on`): ReadSignals of that device fail (UNAVAILABLE)
 *   while on.
 */
import {
  createStderrLogger,
  type DeviceDefinition,
  DeviceProvider,
  ProviderError,
  runStdioProvider,
  toWireValue,
  type WireValue,
} from "../../src/provider_sdk/mod.ts";

const log = createStderrLogger("policy");

/** ReadSignals that asked for each device's signal (the SDK reads each signal once per request). */
const reads: Record<string, number> = { fast0: 0, slow0: 0, tight0: 0 };
/** Calls each act0 function ran. */
const calls: Record<string, number> = { pulse: 0, auto_only: 0, leased: 0, peek: 0, set_level: 0 };

/** Devices whose ReadSignals fail. */
const failing = new Set<string>();

const count = (name: string) => () => {
  calls[name]!++;
};

const act0: DeviceDefinition = {
  deviceId: "act0",
  typeId: "test.policy",
  typeVersion: "1.0",
  label: "Policy functions",
  signals: [],
  functions: [
    { id: 1, name: "pulse", category: "ACTUATE", minIntervalMs: 1000, handler: count("pulse") },
    {
      id: 2,
      name: "auto_only",
      category: "ACTUATE",
      allowedModes: ["AUTO"],
      handler: count("auto_only"),
    },
    { id: 3, name: "leased", category: "ACTUATE", requiresLease: true, handler: count("leased") },
    {
      id: 4,
      name: "peek",
      category: "READ",
      allowedModes: ["MANUAL"],
      isIdempotent: true,
      safetyProfile: "read_only",
      handler: count("peek"),
    },
    {
      id: 5,
      name: "set_level",
      category: "ACTUATE",
      args: [{ name: "level", type: "double", min: 0, max: 1 }],
      handler: count("set_level"),
    },
  ],
};

function polled(deviceId: string, signalId: string, hz: number, staleMs: number): DeviceDefinition {
  return {
    deviceId,
    typeId: "test.polled",
    typeVersion: "1.0",
    label: deviceId,
    signals: [{
      id: signalId,
      name: signalId,
      type: "double",
      pollHintHz: hz,
      staleAfterMs: staleMs,
      read: () => {
        reads[deviceId]!++;
        if (failing.has(deviceId)) throw ProviderError.unavailable(`${deviceId} does not answer`);
        return 1.5;
      },
    }],
    functions: [],
  };
}

const int = (n: number): WireValue => toWireValue("int64", n);

const meta0: DeviceDefinition = {
  deviceId: "meta0",
  typeId: "test.meta",
  typeVersion: "1.0",
  label: "Counters",
  signals: [],
  functions: [{
    id: 1,
    name: "stats",
    category: "READ",
    handler: () => ({
      ...Object.fromEntries(Object.entries(reads).map(([k, v]) => [`reads_${k}`, int(v)])),
      ...Object.fromEntries(Object.entries(calls).map(([k, v]) => [`calls_${k}`, int(v)])),
    }),
  }, {
    id: 2,
    name: "fail",
    category: "READ",
    args: [{ name: "device", type: "string" }, { name: "on", type: "bool" }],
    handler: (args) => {
      if (args.bool("on")) failing.add(args.string("device"));
      else failing.delete(args.string("device"));
    },
  }],
};

const provider = new DeviceProvider({ name: "policy", version: "1.0.0" }, [
  act0,
  polled("fast0", "v", 10, 0),
  polled("slow0", "t", 0.5, 10_000),
  polled("tight0", "p", 0.1, 600),
  meta0,
]);
log.info("policy provider up");
await runStdioProvider(provider, { logger: log });
