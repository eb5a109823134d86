/** Shared builders for the modes/safety tests (config literals, declared calls, state reads). */
import type {
  CallArgValue,
  CallConfig,
  HookConfig,
  ProviderConfig,
  RuntimeMode,
  SafeStateExpectation,
} from "../../src/config/mod.ts";
import type { RuntimeError, TypedValue } from "../../src/common/mod.ts";
import { MAX_QUEUED_CALLS_PER_PROVIDER } from "../../src/control/mod.ts";
import { scalarOf } from "../../src/common/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { SIM_INERT_YAML, simProvider } from "../helpers/sim_config.ts";

export { SIM_INERT_YAML, simProvider };

const PLANT_MAIN = new URL("./_plant_provider.ts", import.meta.url).pathname;

/**
 * A provider entry running tests/safety/_plant_provider.ts (device plant0): `latencyMs` slows
 * its actuating calls, `readLatencyMs` its read_status, `timeoutMs` is the provider's call
 * timeout (default 5000), `growMarker` makes its first process declare only its READ function,
 * and `restartBackoffMs` enables one restart after that backoff.
 */
export function plantProvider(
  id: string,
  o: {
    latencyMs?: number;
    readLatencyMs?: number;
    timeoutMs?: number;
    growMarker?: string;
    restartBackoffMs?: number;
  } = {},
): ProviderConfig {
  return {
    id,
    command: Deno.execPath(),
    args: [
      "run",
      "--quiet",
      "--allow-read",
      "--allow-env",
      ...(o.growMarker ? [`--allow-write=${o.growMarker}`] : []),
      PLANT_MAIN,
      ...(o.latencyMs ? ["--latency-ms", String(o.latencyMs)] : []),
      ...(o.readLatencyMs ? ["--read-latency-ms", String(o.readLatencyMs)] : []),
      ...(o.growMarker ? ["--grow-marker", o.growMarker] : []),
    ],
    timeoutMs: o.timeoutMs ?? 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: o.restartBackoffMs !== undefined,
      maxAttempts: 1,
      backoffMs: [o.restartBackoffMs ?? 100],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

/** An inert sim provider (values change only through calls). */
export function inertSim(
  id = "sim0",
  extra: Parameters<typeof simProvider>[1] = {},
): ProviderConfig {
  return simProvider(id, { yaml: SIM_INERT_YAML, ...extra });
}

/** YAML-like scalars for declared call args: numbers with a dot or `d` suffix become doubles. */
export type ArgLiteral = boolean | string | number | { double: number };

function arg(v: ArgLiteral): CallArgValue {
  if (typeof v === "boolean") return { type: "bool", bool: v };
  if (typeof v === "string") return { type: "string", string: v };
  if (typeof v === "number") return { type: "int64", int64: v };
  return { type: "double", double: v.double };
}

/** A declared call; `fn` is a function name or a function id. */
export function call(
  handle: string,
  fn: string | number,
  args: Record<string, ArgLiteral> = {},
  path = `test.calls[${handle} ${fn}]`,
): CallConfig {
  return {
    deviceHandle: handle,
    functionId: typeof fn === "number" ? fn : 0,
    functionName: typeof fn === "string" ? fn : "",
    args: Object.fromEntries(Object.entries(args).map(([k, v]) => [k, arg(v)])),
    path,
  };
}

/** A mode-transition hook. */
export function hook(
  from: RuntimeMode | "*",
  to: RuntimeMode | "*",
  calls: CallConfig[],
  failOnError = true,
  path = `test.hooks[${from}->${to}]`,
): HookConfig {
  return { from, to, failOnError, calls, path };
}

/**
 * The hook `* -> FAULT` setting `plant/plant0`'s fan to `duty` (a cool-down after the ladder), as
 * the first after_transition hook of the configuration.
 */
export function fanIntoFault(duty: number): HookConfig {
  return hook(
    "*",
    "FAULT",
    [call("plant/plant0", "set_fan", { duty: { double: duty } })],
    false,
    "automation.mode_transition_hooks.after_transition[0]",
  );
}

/** A manual (HTTP-like) call through the runtime's router. */
export function manualCall(
  rt: Kernel,
  providerId: string,
  deviceId: string,
  functionId: number,
  args: Record<string, TypedValue> = {},
) {
  return rt.router.call({ providerId, deviceId, functionId, args, origin: "manual" });
}

/**
 * More manual calls to one device than its provider's call queue takes: one on the wire,
 * MAX_QUEUED_CALLS_PER_PROVIDER queued behind it and 5 more, refused as busy. The k-th call's
 * arguments are `args(k)`; answers each call's outcome, "ok" or its error's code.
 */
export function callFlood(
  rt: Kernel,
  providerId: string,
  deviceId: string,
  functionId: number,
  args: (k: number) => Record<string, TypedValue>,
): Promise<string[]> {
  return Promise.all(
    Array.from(
      { length: MAX_QUEUED_CALLS_PER_PROVIDER + 6 },
      (_, k) =>
        manualCall(rt, providerId, deviceId, functionId, args(k)).then(
          () => "ok",
          (e: RuntimeError) => e.code,
        ),
    ),
  );
}

/** Typed value shorthands. */
export const b = (v: boolean): TypedValue => ({ type: "bool", bool: v });
export const d = (v: number): TypedValue => ({ type: "double", double: v });
export const i = (v: number): TypedValue => ({ type: "int64", int64: v });

/** Polls the device now and returns the cached scalar of one signal. */
export async function readSignal(
  rt: Kernel,
  providerId: string,
  deviceId: string,
  signalId: string,
): Promise<number | bigint | boolean | string | undefined> {
  await rt.cache.pollDevice(providerId, deviceId);
  const s = rt.cache.signal(providerId, deviceId, signalId);
  return s?.value ? scalarOf(s.value) : undefined;
}

/** A safety.safe_state.expect entry for `provider/device/signal`. */
export function expectation(
  signal: string,
  want: { equals: boolean | number | string } | { min?: number; max?: number },
  index = 0,
): SafeStateExpectation {
  const [providerId, ...rest] = signal.split("/");
  const signalId = rest.pop()!;
  return {
    signal,
    providerId: providerId!,
    deviceId: rest.join("/"),
    signalId,
    ...want,
    path: `safety.safe_state.expect[${index}]`,
  };
}

/**
 * Two inert sims, sim1 without restarts, whose e-stop drives motor 1 of each to duty 0 and reads it
 * back (`verify_timeout_ms` 2000): a stop verified on both, then sim1 killed, leaves one check
 * whose device cannot be read now.
 */
export function twoSimsVerifiedStop() {
  return {
    providers: [inertSim("sim0"), inertSim("sim1", { restart: false })],
    safety: {
      hooks: [
        call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 }),
        call("sim1/motorctl0", "set_motor_duty", { motor_index: 1, duty: 0 }),
      ],
      expect: [
        expectation("sim0/motorctl0/motor1_duty", { equals: 0 }, 0),
        expectation("sim1/motorctl0/motor1_duty", { equals: 0 }, 1),
      ],
      verifyTimeoutMs: 2000,
    },
  };
}
