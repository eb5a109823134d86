/**
 * Test configs that run the simulated provider as a real child process. The single place tests
 * describe "a runtime with N simulated providers"; loader-independent (a typed Config literal).
 */
import type { Config, ProviderConfig, RestartPolicyConfig } from "../../src/config/mod.ts";
import {
  RUN_MAX_BYTES_DEFAULT,
  RUNS_KEPT_DEFAULT,
  RUNS_TOTAL_BYTES_DEFAULT,
} from "../../src/runs/mod.ts";

export const REPO = new URL("../../", import.meta.url).pathname;
export const SIM_MAIN = `${REPO}examples/providers/sim/main.ts`;
export const SIM_YAML = `${REPO}examples/providers/sim/sim.yaml`;
export const SIM_INERT_YAML = `${REPO}examples/providers/sim/sim-inert.yaml`;

/**
 * The providers section of a runtime child's YAML (tests/helpers/runtime_process.ts): the inert
 * simulated provider `sim0`, run by this Deno, ending in a newline (YAML indented 4 after it goes
 * under its entry).
 */
export function simRuntimeConfig(): string {
  return `providers:
  - id: sim0
    command: ${JSON.stringify(Deno.execPath())}
    args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]
`;
}

/**
 * examples/providers/sim/sim.yaml with the heater (tempctl0) answering with a time constant of
 * `tauS` seconds instead of 6 (the sim's `time_constant_s`): for tests that wait for it to heat.
 */
export function simYamlWithHeaterTau(tauS: number): string {
  const sim = Deno.readTextFileSync(SIM_YAML);
  const fast = sim.replace("type: tempctl\n", `type: tempctl\n    time_constant_s: ${tauS}\n`);
  if (fast === sim) throw new Error(`${SIM_YAML}: no tempctl device to make faster`);
  return fast;
}

export interface SimProviderOptions {
  yaml?: string;
  extraArgs?: string[];
  timeoutMs?: number;
  restart?: Partial<RestartPolicyConfig> | false;
}

/** A provider entry running examples/providers/sim/main.ts under this Deno. */
export function simProvider(id: string, o: SimProviderOptions = {}): ProviderConfig {
  const restart: RestartPolicyConfig = o.restart === false
    ? {
      enabled: false,
      maxAttempts: 3,
      backoffMs: [100, 1000, 5000],
      timeoutMs: 30000,
      successResetMs: 1000,
    }
    : {
      enabled: true,
      maxAttempts: 3,
      backoffMs: [100, 200, 300],
      timeoutMs: 30000,
      successResetMs: 1000,
      ...o.restart,
    };
  return {
    id,
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--allow-read",
      "--allow-env",
      SIM_MAIN,
      "--config",
      o.yaml ?? SIM_YAML,
      ...(o.extraArgs ?? []),
    ],
    timeoutMs: o.timeoutMs ?? 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: restart,
  };
}

export interface TestConfigOptions {
  providers?: ProviderConfig[];
  pollingIntervalMs?: number;
  automation?: Partial<Config["automation"]>;
  safety?: Partial<Config["safety"]["safeState"]> & { present?: boolean };
  http?: Partial<Config["http"]>;
  telemetry?: Partial<Config["telemetry"]>;
  runtime?: Partial<Config["runtime"]>;
  alarms?: Config["alarms"];
  audit?: Partial<Config["audit"]>;
  runs?: Partial<Config["runs"]>;
  history?: Partial<Config["history"]>;
  interlocks?: Config["interlocks"];
  health?: Partial<Config["health"]>;
  sparkplug?: Partial<Config["sparkplug"]>;
}

/** The loader's defaults of `history:`. */
export const DEFAULT_HISTORY: Config["history"] = {
  enabled: true,
  memorySeconds: 120,
  memoryMaxBytes: 2 * 1024 * 1024,
  stepMs: 10000,
  diskMaxBytes: 256 * 1024 * 1024,
  incidentBeforeS: 10,
  incidentAfterS: 5,
  incidentMaxCount: 100,
  incidentMaxBytes: 64 * 1024 * 1024,
};

/** A complete Config with the loader's defaults and one simulated provider `sim0`. */
export function testConfig(o: TestConfigOptions = {}): Config {
  return {
    configPath: `${REPO}examples/test.yaml`,
    configDir: `${REPO}examples`,
    runtime: {
      name: "test",
      shutdownTimeoutMs: 2000,
      startupTimeoutMs: 30000,
      dataDir: `${REPO}.test-data`,
      ...o.runtime,
    },
    http: {
      enabled: true,
      bind: "127.0.0.1",
      port: 0,
      corsAllowedOrigins: ["*"],
      corsAllowCredentials: false,
      allowedHosts: [],
      threadPoolSize: 40,
      authEnabled: false,
      authToken: "",
      authExemptLoopback: true,
      tokens: [],
      allowInsecureBind: false,
      tlsCertPath: null,
      tlsKeyPath: null,
      tlsAllowExpiredCert: false,
      maxConnections: 128,
      requestHeaderTimeoutMs: 10000,
      keepAliveTimeoutMs: 30000,
      consoleEnabled: true,
      metricsEnabled: true,
      ...o.http,
    },
    providers: o.providers ?? [simProvider("sim0")],
    polling: { intervalMs: o.pollingIntervalMs ?? 100 },
    telemetry: {
      enabled: false,
      healthIntervalMs: 15000,
      measurementNames: "runtime",
      influxdb: {
        url: "http://127.0.0.1:8086",
        org: "anolis",
        bucket: "anolis",
        token: "",
        batchSize: 100,
        flushIntervalMs: 1000,
        maxRetryBufferSize: 1000,
        queueSize: 10000,
      },
      ...o.telemetry,
    },
    logging: { level: "warn" },
    automation: {
      enabled: false,
      behaviorTree: null,
      tickRateHz: 10,
      manualGatingPolicy: "BLOCK",
      parameters: [],
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
      ...o.automation,
    },
    safety: {
      present: o.safety?.present ?? o.safety !== undefined,
      safeState: {
        hooks: o.safety?.hooks ?? [],
        setpoints: o.safety?.setpoints ?? [],
        zeroIsSafe: o.safety?.zeroIsSafe ?? false,
        expect: o.safety?.expect ?? [],
        verifyTimeoutMs: o.safety?.verifyTimeoutMs ?? 2000,
      },
    },
    health: { staleness: { warnAfterMs: 0, staleAfterMs: 0 }, ...o.health },
    audit: { maxFileBytes: 16 * 1024 * 1024, maxFiles: 8, ...o.audit },
    runs: {
      maxRunBytes: RUN_MAX_BYTES_DEFAULT,
      maxRuns: RUNS_KEPT_DEFAULT,
      maxTotalBytes: RUNS_TOTAL_BYTES_DEFAULT,
      ...o.runs,
    },
    history: { ...DEFAULT_HISTORY, ...o.history },
    alarms: o.alarms ?? [],
    interlocks: o.interlocks ?? [],
    sparkplug: {
      enabled: false,
      brokerUrl: "",
      groupId: "",
      edgeNodeId: "",
      clientId: "",
      primaryHostId: "",
      keepAliveS: 30,
      qos: 0,
      connectTimeoutMs: 10000,
      reconnectMs: 2000,
      maxMessageBytes: null,
      tls: { caPath: null, certPath: null, keyPath: null },
      commands: false,
      role: "operator",
      storeForward: { maxMessages: 10000, maxBytes: 16777216 },
      ...o.sparkplug,
    },
  };
}

/** A command nothing runs from: a provider given it cannot start. */
export const UNSTARTABLE_COMMAND = "/nonexistent/provider";

/** `config` with provider `providerId`'s command UNSTARTABLE_COMMAND (a reload fails its start). */
export function withUnstartable(config: Config, providerId: string): Config {
  return {
    ...config,
    providers: config.providers.map((p) =>
      p.id === providerId ? { ...p, command: UNSTARTABLE_COMMAND } : p
    ),
  };
}

/** The inert sim0 with automation on and one parameter, target_temp (double 40, 0..120). */
export function simWithTargetTemp(): Config {
  return testConfig({
    providers: [simProvider("sim0")],
    automation: {
      enabled: true,
      parameters: [{
        name: "target_temp",
        type: "double",
        default: 40,
        min: 0,
        max: 120,
        allowedValues: [],
      }],
    },
  });
}
