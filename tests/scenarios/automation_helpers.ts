/**
 * Shared pieces of the automation scenario tests: tree files on disk, configs with automation
 * enabled (parameters of the demo, the AUTO -> FAULT hook the AUTO gate requires) and reads of
 * the cached device state.
 */
import { scalarOf, type TypedValue } from "../../src/common/mod.ts";
import type { CallArgValue, Config, HookConfig, RuntimeMode } from "../../src/config/mod.ts";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { REPO, simProvider, testConfig, type TestConfigOptions } from "../helpers/sim_config.ts";

/** The shipped demo tree. */
export const DEMO_TREE = `${REPO}examples/behaviors/demo.xml`;

/** A temporary folder holding tree files; `dispose()` removes it. */
export class TreeDir {
  readonly path: string;
  constructor(path: string) {
    this.path = path;
  }
  static async create(): Promise<TreeDir> {
    return new TreeDir(await Deno.makeTempDir({ prefix: "bt_scenario_" }));
  }
  /** Writes `name` and returns its absolute path. */
  async write(name: string, xml: string): Promise<string> {
    const file = `${this.path}/${name}`;
    await Deno.writeTextFile(file, xml);
    return file;
  }
  async dispose(): Promise<void> {
    await Deno.remove(this.path, { recursive: true });
  }
}

/** A one-tree BT.CPP v4 document. */
export function treeXml(body: string): string {
  return `<root BTCPP_format="4" main_tree_to_execute="Main">\n` +
    `  <BehaviorTree ID="Main">\n    ${body}\n  </BehaviorTree>\n</root>\n`;
}

const d = (v: number): CallArgValue => ({ type: "double", double: v });
const i = (v: number): CallArgValue => ({ type: "int64", int64: v });

/** before_transition AUTO -> FAULT: motor 1 to duty 0 (satisfies the refuse-hookless AUTO gate). */
export const STOP_MOTOR_ON_FAULT: HookConfig = {
  from: "AUTO",
  to: "FAULT",
  failOnError: false,
  path: "automation.mode_transition_hooks.before_transition[0]",
  calls: [{
    deviceHandle: "sim0/motorctl0",
    functionId: 0,
    functionName: "set_motor_duty",
    args: { motor_index: i(1), duty: d(0) },
    path: "automation.mode_transition_hooks.before_transition[0].calls[0]",
  }],
};

/**
 * before_transition MANUAL -> AUTO (second in the list, after STOP_MOTOR_ON_FAULT): sim0/tempctl0
 * set_setpoint 30, which a test slows with sim0's inject_call_latency to hold the transition.
 */
export const SLOW_ARMING_HOOK: HookConfig = {
  from: "MANUAL",
  to: "AUTO",
  failOnError: false,
  path: "automation.mode_transition_hooks.before_transition[1]",
  calls: [{
    deviceHandle: "sim0/tempctl0",
    functionId: 0,
    functionName: "set_setpoint",
    args: { value: { type: "double", double: 30 } },
    path: "automation.mode_transition_hooks.before_transition[1].calls[0]",
  }],
};

/**
 * `config` with `hook` second in before_transition, after STOP_MOTOR_ON_FAULT (AUTO's gate stays
 * covered), as its only hooks.
 */
export function withSecondHook(config: Config, hook: HookConfig): Config {
  return {
    ...config,
    automation: {
      ...config.automation,
      modeTransitionHooks: {
        beforeTransition: [STOP_MOTOR_ON_FAULT, hook],
        afterTransition: [],
      },
    },
  };
}

/**
 * `config` with SLOW_ARMING_HOOK holding MANUAL -> AUTO (after STOP_MOTOR_ON_FAULT) as its only
 * hooks: a test slows sim0's set_setpoint to keep that transition's hooks running.
 */
export function withSlowArming(config: Config): Config {
  return withSecondHook(config, SLOW_ARMING_HOOK);
}

/**
 * Two in-process sims, sim0 and sim1, automation on a tree (written to `dir`) that sets
 * sim1/motorctl0's motor 1 to duty 0.1 once then sleeps a minute, `arming` holding MANUAL -> AUTO
 * (second in before_transition; SLOW_ARMING_HOOK unless given).
 */
export async function sim1TreeArmedBy(
  dir: TreeDir,
  arming: HookConfig = SLOW_ARMING_HOOK,
): Promise<Config> {
  const tree = await dir.write(
    "motor.xml",
    treeXml(`<Sequence>
      <CallDevice device_handle="sim1/motorctl0" function_name="set_motor_duty"
        args='json:{"motor_index": 1, "duty": 0.1}' />
      <Sleep msec="60000" />
    </Sequence>`),
  );
  const base = automationConfig(tree, {
    config: { providers: [simProvider("sim0"), simProvider("sim1")] },
  });
  return withSecondHook(base, arming);
}

/**
 * Watches the router's write-ahead of calls to `handle` (each audited as before): `sent` turns
 * true at each one's decision; a test resets it.
 */
export function watchCallsTo(rt: Kernel, handle: string): { sent: boolean } {
  const watch = { sent: false };
  rt.router.setAuditSink({
    record: (d) => rt.audit.record(d),
    writeAhead: (call, options) => {
      if (call.device_handle === handle) watch.sent = true;
      return rt.audit.writeAhead(call, options);
    },
  });
  return watch;
}

/**
 * Makes `providerId`'s simulated `deviceId` answer each call `latencyMs` after it got it (its
 * chaos_control's inject_call_latency).
 */
export function slowCallsOf(
  rt: Kernel,
  providerId: string,
  deviceId: string,
  latencyMs: number,
): Promise<void> {
  return callAs(rt, "manual", `${providerId}/chaos_control`, "inject_call_latency", {
    device_id: tv.s(deviceId),
    latency_ms: tv.i(latencyMs),
  });
}

/** Requests `mode`: resolves to `mode` once entered, else to the refusal's text. */
export function modeOutcome(rt: Kernel, mode: RuntimeMode): Promise<string> {
  return rt.modes.request(mode).then(() => mode, (err: unknown) => String(err));
}

/**
 * The `refused_by` of each audit entry of a refused AUTO request, oldest first (docs/http-api.md
 * "Audit trail").
 */
export async function autoRefusedBy(rt: Kernel): Promise<(string | null)[]> {
  const page = await rt.audit.query({ limit: 1000 });
  return page.entries
    .filter((e) => e.action === "mode" && e.function === "AUTO" && e.outcome === "refused")
    .map((e) => e.refused_by);
}

export interface AutomationConfigOptions {
  manualGatingPolicy?: "BLOCK" | "OVERRIDE";
  targetTemp?: number;
  motorDuty?: number;
  tickRateHz?: number;
  /** Extra config overrides (safety, http ...). */
  config?: TestConfigOptions;
}

/** One simulated provider sim0, automation enabled with `tree`, the demo's parameters and hook. */
export function automationConfig(tree: string | null, o: AutomationConfigOptions = {}): Config {
  return testConfig(automationOptions(tree, o));
}

/** automationConfig as test-config options (for startHttpFixture). */
export function automationOptions(
  tree: string | null,
  o: AutomationConfigOptions = {},
): TestConfigOptions {
  return {
    providers: [simProvider("sim0")],
    ...o.config,
    automation: {
      enabled: true,
      behaviorTree: tree,
      tickRateHz: o.tickRateHz ?? 20,
      manualGatingPolicy: o.manualGatingPolicy ?? "BLOCK",
      parameters: [
        {
          name: "target_temp",
          type: "double",
          default: o.targetTemp ?? 40,
          min: 0,
          max: 120,
          allowedValues: [],
        },
        {
          name: "motor_duty",
          type: "double",
          default: o.motorDuty ?? 0.4,
          min: 0,
          max: 1,
          allowedValues: [],
        },
      ],
      modeTransitionHooks: { beforeTransition: [STOP_MOTOR_ON_FAULT], afterTransition: [] },
    },
  };
}

/** IDLE -> MANUAL -> AUTO (IDLE -> AUTO is not an allowed transition). */
export async function enterAuto(rt: Kernel): Promise<void> {
  await rt.modes.request("MANUAL");
  await rt.modes.request("AUTO");
}

/** The cached scalar of a signal (undefined when absent). */
export function cached(
  rt: Kernel,
  handle: string,
  signalId: string,
): number | bigint | boolean | string | undefined {
  const [p, dev] = handle.split("/");
  const s = rt.cache.signal(p!, dev!, signalId);
  return s?.value ? scalarOf(s.value) : undefined;
}

/** Calls a function as the given origin (test set-up and fault injection). */
export async function callAs(
  rt: Kernel,
  origin: "manual" | "automated",
  handle: string,
  functionName: string,
  args: Record<string, TypedValue>,
): Promise<void> {
  const [providerId, deviceId] = handle.split("/") as [string, string];
  await rt.router.call({ providerId, deviceId, functionName, args, origin });
}

/** Typed-value shorthands. */
export const tv = {
  d: (v: number): TypedValue => ({ type: "double", double: v }),
  i: (v: number): TypedValue => ({ type: "int64", int64: v }),
  b: (v: boolean): TypedValue => ({ type: "bool", bool: v }),
  s: (v: string): TypedValue => ({ type: "string", string: v }),
};

/** Events of a kind, narrowed. */
export function eventsOf<K extends RuntimeEvent["kind"]>(
  events: readonly RuntimeEvent[],
  kind: K,
): Extract<RuntimeEvent, { kind: K }>[] {
  return events.filter((e): e is Extract<RuntimeEvent, { kind: K }> => e.kind === kind);
}

/** A tree that sets motor 1 to duty 0.5 once, then sleeps (RUNNING) for a minute. */
export const MOTOR_THEN_SLEEP = treeXml(
  `<Sequence name="recipe">
      <CallDevice name="start_motor" device_handle="sim0/motorctl0" function_name="set_motor_duty"
                  args='json:{"motor_index": 1, "duty": 0.5}' />
      <Sleep name="hold" msec="60000" />
    </Sequence>`,
);
