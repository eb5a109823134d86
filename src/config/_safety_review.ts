/**
 * `--check-config`'s review of the software e-stop, from the configuration alone: a configuration
 * that checks clean must not have an e-stop that latches and commands nothing, or that can never
 * verify what it did (examples/minimal.yaml once checked clean while its e-stop did nothing).
 *
 * What the file alone tells:
 * - whether any call runs on every e-stop: `safety.safe_state.hooks`, `setpoints`,
 *   `zero_is_safe: true`, or a mode-transition hook from `*` into FAULT (run by every e-stop; adopted
 *   as the ladder's hooks when there is no `safety:` section and automation is enabled);
 * - whether anything is verified: `safety.safe_state.expect`;
 * - which devices those calls name, and whether an expectation reads a signal of each.
 *
 * What it cannot tell without the providers' inventory (the runtime says it at start-up, in its
 * `e-stop plan` log lines and `GET /v0/runtime/status` -> `estop.plan`, `unverified_devices`):
 * - whether the named devices, functions and signals exist and the calls succeed;
 * - whether `setpoints` cover every actuating function (rung 2 applies only then; otherwise the
 *   ladder falls through to `zero_is_safe`, or to nothing);
 * - what `zero_is_safe: true` zeroes: possibly nothing, when no function has a zeroable argument;
 * - which devices actuate at all: one the ladder never commands is `uncovered`, and one no
 *   expectation reads is `unverified`, only once its functions are known;
 * - whether an expected signal shows the physical state or only echoes the command.
 */
import type { Checker } from "./_checker.ts";
import type { Path } from "./_source.ts";
import type { CallConfig, Config, HookConfig } from "./types.ts";

/** Start of the warning for an e-stop that would command nothing. */
export const ESTOP_COMMANDS_NOTHING = "no safe state: an e-stop would latch and enter FAULT";
/** Start of the warning for an e-stop that could verify nothing. */
export const ESTOP_VERIFIES_NOTHING = "no expectations: an e-stop could not verify anything";
/** Start of the warning for a device the e-stop commands but no expectation reads. */
export const ESTOP_DEVICE_UNVERIFIED = "no expectation for a device the e-stop commands";

/** A call that runs on every e-stop, with the key path it was written at. */
interface StopCall {
  readonly call: CallConfig;
  readonly path: Path;
}

/**
 * Warns (never errs: the runtime can run without a safe state, it just must not look as if it had
 * one) about what `--check-config` can tell of the e-stop from `config` alone; see above.
 * `safetyGiven`/`safeStateGiven`: whether the file has a `safety:` / `safety.safe_state:` key
 * (where the warnings point).
 */
export function reviewSafeState(
  config: Config,
  c: Checker,
  o: { safetyGiven: boolean; safeStateGiven: boolean },
): void {
  const ss = config.safety.safeState;
  const at: Path = o.safeStateGiven ? ["safety", "safe_state"] : o.safetyGiven ? ["safety"] : [];
  const calls: StopCall[] = [
    ...ss.hooks.map((call, i) => ({ call, path: ["safety", "safe_state", "hooks", i] })),
    ...ss.setpoints.map((call, i) => ({ call, path: ["safety", "safe_state", "setpoints", i] })),
    ...faultHookCalls(config),
  ];
  if (calls.length === 0 && !ss.zeroIsSafe) {
    c.warning(
      at,
      `${ESTOP_COMMANDS_NOTHING} but command nothing: safety.safe_state has no hooks or ` +
        "setpoints, zero_is_safe is false, and no mode_transition_hooks entry runs from * into " +
        "FAULT; list the calls that make this machine safe under safety.safe_state.hooks " +
        "(docs/safety.md)",
    );
  }
  if (ss.expect.length === 0) {
    c.warning(
      at,
      `${ESTOP_VERIFIES_NOTHING} (its verification answers \`unverifiable\`): list the ` +
        "signals that show this machine's safe state under safety.safe_state.expect " +
        "(docs/safety.md)",
    );
    return; // one warning says it for every device
  }
  const verified = new Set(ss.expect.map((e) => `${e.providerId}/${e.deviceId}`));
  const warned = new Set<string>();
  for (const { call, path } of calls) {
    const device = call.deviceHandle;
    if (verified.has(device) || warned.has(device)) continue;
    warned.add(device);
    c.warning(
      path,
      `${ESTOP_DEVICE_UNVERIFIED}: this call commands ${device}, but no ` +
        "safety.safe_state.expect entry reads a signal of it, so an e-stop cannot tell whether " +
        "it reached its safe state",
    );
  }
}

/** The calls of every mode-transition hook an e-stop runs whatever the mode: from `*` into FAULT. */
function faultHookCalls(config: Config): StopCall[] {
  const { beforeTransition, afterTransition } = config.automation.modeTransitionHooks;
  const lists: Array<[string, readonly HookConfig[]]> = [
    ["before_transition", beforeTransition],
    ["after_transition", afterTransition],
  ];
  return lists.flatMap(([key, hooks]) =>
    hooks.flatMap((hook, h) =>
      hook.from === "*" && (hook.to === "FAULT" || hook.to === "*")
        ? hook.calls.map((call, i) => ({
          call,
          path: ["automation", "mode_transition_hooks", key, h, "calls", i],
        }))
        : []
    )
  );
}
