import { parse } from "yaml";
import { ProviderConfigError } from "../../../src/provider_sdk/mod.ts";

/** Device types the simulator knows. */
export const SIM_DEVICE_TYPES = ["tempctl", "motorctl", "relayio", "analogsensor"] as const;

/** One `devices[]` entry: id, type and the per-type extra keys. */
export interface SimDeviceConfig {
  readonly id: string;
  readonly type: string;
  readonly extra: Readonly<Record<string, unknown>>;
}

/** The simulator's validated configuration (README.md lists its keys). */
export interface SimConfig {
  readonly providerName: string | null;
  readonly startupPolicy: "strict" | "degraded";
  readonly devices: readonly SimDeviceConfig[];
  readonly mode: "inert" | "non_interacting";
  /** Physics rate for non_interacting (null in inert mode). */
  readonly tickRateHz: number | null;
  /**
   * `host.device_nodes`: absolute paths of the device nodes the simulated hardware needs (a stand-in
   * for a bus node such as `/dev/i2c-1`); each must exist and be readable (host_check.ts).
   */
  readonly deviceNodes: readonly string[];
}

/** A configuration problem; `problems` lists every one found, each naming its key. */
export class SimConfigError extends ProviderConfigError {
  constructor(problems: readonly string[]) {
    super(problems);
    this.name = "SimConfigError";
  }
}

const NAME_RE = /^[A-Za-z0-9_.-]{1,64}$/;
const RESERVED_ID = "chaos_control";

/**
 * Parses and validates the YAML text. Unknown device types are kept (they fail at device init,
 * which startup_policy degraded may tolerate). Throws SimConfigError listing every problem.
 */
export function parseSimConfig(text: string): SimConfig {
  let doc: unknown;
  try {
    doc = parse(text);
  } catch (err) {
    throw new SimConfigError([`yaml: ${err instanceof Error ? err.message : String(err)}`]);
  }
  const problems: string[] = [];
  const root = isRecord(doc) ? doc : (problems.push("(root): must be a mapping"), {});

  let providerName: string | null = null;
  if (root.provider !== undefined && root.provider !== null) {
    if (!isRecord(root.provider)) problems.push("provider: must be a mapping");
    else if (root.provider.name !== undefined) {
      const n = root.provider.name;
      if (typeof n !== "string" || !NAME_RE.test(n)) {
        problems.push(`provider.name: must match ${NAME_RE.source}`);
      } else providerName = n;
    }
  }

  let startupPolicy: SimConfig["startupPolicy"] = "strict";
  if (root.startup_policy !== undefined) {
    if (root.startup_policy === "strict" || root.startup_policy === "degraded") {
      startupPolicy = root.startup_policy;
    } else {problems.push(
        `startup_policy: must be strict or degraded, got ${String(root.startup_policy)}`,
      );}
  }

  const devices: SimDeviceConfig[] = [];
  const raw = root.devices ?? [];
  if (!Array.isArray(raw)) problems.push("devices: must be a list");
  else {
    const seen = new Set<string>();
    raw.forEach((d: unknown, i: number) => {
      const where = `devices[${i}]`;
      if (!isRecord(d)) return void problems.push(`${where}: must be a mapping`);
      const { id, type, ...extra } = d;
      if (typeof id !== "string" || id === "") {
        return void problems.push(`${where}.id: must be a non-empty string`);
      }
      if (id === RESERVED_ID) {
        return void problems.push(`${where}.id: '${RESERVED_ID}' is reserved`);
      }
      if (seen.has(id)) return void problems.push(`${where}.id: duplicate id '${id}'`);
      seen.add(id);
      if (typeof type !== "string" || type === "") {
        return void problems.push(`${where}.type: must be a non-empty string`);
      }
      devices.push({ id, type, extra });
    });
  }

  let mode: SimConfig["mode"] = "inert";
  let tickRateHz: number | null = null;
  const sim = root.simulation;
  if (!isRecord(sim)) problems.push("simulation: required mapping is missing");
  else {
    if (sim.mode === "inert" || sim.mode === "non_interacting") mode = sim.mode;
    else if (sim.mode === "sim") {
      problems.push("simulation.mode: 'sim' needs an external physics engine, not supported here");
    } else problems.push("simulation.mode: must be inert or non_interacting");
    if (sim.mode === "non_interacting") {
      const r = sim.tick_rate_hz;
      if (typeof r !== "number" || !(r >= 0.1 && r <= 1000)) {
        problems.push("simulation.tick_rate_hz: required for non_interacting, 0.1 .. 1000");
      } else tickRateHz = r;
    }
  }

  const deviceNodes: string[] = [];
  const host = root.host;
  if (host !== undefined && host !== null) {
    if (!isRecord(host)) problems.push("host: must be a mapping");
    else if (host.device_nodes !== undefined && host.device_nodes !== null) {
      if (!Array.isArray(host.device_nodes)) problems.push("host.device_nodes: must be a list");
      else {
        host.device_nodes.forEach((n: unknown, i: number) => {
          if (typeof n !== "string" || !n.startsWith("/")) {
            problems.push(`host.device_nodes[${i}]: must be an absolute path`);
          } else deviceNodes.push(n);
        });
      }
    }
  }

  if (problems.length > 0) throw new SimConfigError(problems);
  return { providerName, startupPolicy, devices, mode, tickRateHz, deviceNodes };
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}
