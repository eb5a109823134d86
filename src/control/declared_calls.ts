/**
 * Device calls declared in the config (mode-transition hooks, safety.safe_state hooks/setpoints):
 * resolving them against discovered capabilities, converting their YAML scalars to the
 * function's ArgSpec types, running them through the CallRouter and checking them at start-up.
 */
import {
  type DeviceCapabilities,
  type FunctionSpec,
  invalidArgument,
  parseDeviceHandle,
  providerIdOf,
  quoteProviderText,
  scalarOf,
  toRuntimeError,
  type TypedValue,
} from "../common/mod.ts";
import {
  atSourcePosition,
  type CallArgValue,
  type CallConfig,
  type Config,
} from "../config/mod.ts";
import type { InventoryReader } from "../state/mod.ts";
import type { AuditOrigin } from "./audit_sink.ts";
import type { CallOrigin, CallResult, CallRouter } from "./call_router.ts";
import { validateArgs } from "./validate_args.ts";

/** How a declared call is named in responses and logs: function_name, else the id as text. */
export function declaredFunctionLabel(call: CallConfig): string {
  return call.functionName !== "" ? call.functionName : String(call.functionId);
}

/**
 * Converts declared YAML scalars (config/_scalars.ts) to the types the function's ArgSpecs declare.
 * int64 widens to double/uint64 (non-negative only); a scalar given for a string argument is passed
 * as its text (`true`, `120`; note a YAML `0015` was already read as the integer 15). Anything else
 * is left as written so validateArgs reports the mismatch naming the argument.
 */
export function toTypedArgs(
  fn: FunctionSpec,
  args: Readonly<Record<string, CallArgValue>>,
): Record<string, TypedValue> {
  const out: Record<string, TypedValue> = {};
  for (const [name, value] of Object.entries(args)) {
    const want = fn.args.find((a) => a.name === name)?.type ?? null;
    out[name] = convertScalar(value, want);
  }
  return out;
}

/** `want` is null for an argument the function does not declare: that value is left as written. */
function convertScalar(value: CallArgValue, want: string | null): TypedValue {
  if (want === value.type) return value;
  if (value.type === "int64") {
    if (want === "double") return { type: "double", double: value.int64 };
    if (want === "uint64" && value.int64 >= 0) return { type: "uint64", uint64: value.int64 };
  }
  if (want === "string") return { type: "string", string: String(scalarOf(value)) };
  return value;
}

/**
 * Finds the function a declared call targets among `devices`, with the router's selection rules
 * (function_id when non-zero, and then a given function_name must agree; else the name). Returns
 * the target or a message saying why it does not resolve.
 */
export function findDeclaredTarget(
  call: CallConfig,
  devices: readonly DeviceCapabilities[],
): { device: DeviceCapabilities; fn: FunctionSpec } | { problem: string } {
  const addr = parseDeviceHandle(call.deviceHandle);
  // The handle and the names are configuration text: cut and quoted (quoteProviderText).
  const handle = quoteProviderText(call.deviceHandle);
  if (!addr) return { problem: `device_handle ${handle} is not provider/device` };
  const device = devices.find((d) =>
    d.device.providerId === addr.providerId && d.device.deviceId === addr.deviceId
  );
  if (!device) return { problem: `device not found: ${handle}` };
  if (call.functionId !== 0) {
    const fn = device.functions.find((f) => f.functionId === call.functionId);
    if (!fn) return { problem: `function_id ${call.functionId} not found on ${handle}` };
    if (call.functionName !== "" && fn.name !== call.functionName) {
      return {
        // Both names cut and quoted: the configuration file's and the provider's.
        problem: `function_id ${call.functionId} is ${quoteProviderText(fn.name)}, not ${
          quoteProviderText(call.functionName)
        } on ${handle}`,
      };
    }
    return { device, fn };
  }
  const fn = device.functions.findLast((f) => f.name === call.functionName);
  if (!fn) {
    return { problem: `function ${quoteProviderText(call.functionName)} not found on ${handle}` };
  }
  return { device, fn };
}

/**
 * Runs one declared call through the router (gates, validation, provider lock, post-call poll).
 * Throws RuntimeError as the router does; a malformed handle is INVALID_ARGUMENT.
 */
export function runDeclaredCall(
  router: CallRouter,
  call: CallConfig,
  origin: CallOrigin,
  source?: AuditOrigin,
): Promise<CallResult> {
  const addr = parseDeviceHandle(call.deviceHandle);
  if (!addr) {
    return Promise.reject(
      invalidArgument(
        `${call.path}.device_handle: ${
          quoteProviderText(call.deviceHandle)
        } is not provider/device`,
      ),
    );
  }
  try {
    const selector = {
      providerId: addr.providerId,
      deviceId: addr.deviceId,
      functionId: call.functionId,
      functionName: call.functionName,
    };
    let fn: FunctionSpec;
    try {
      ({ fn } = router.resolve(selector));
    } catch (err) {
      // A provider that is down: its last inventory types the arguments, and the router refuses
      // the call (UNAVAILABLE), recorded on the audit trail as every refused actuating call.
      const declared = router.lastDeclared(selector);
      if (declared === null || toRuntimeError(err).code !== "UNAVAILABLE") throw err;
      fn = declared;
    }
    return router.call({
      ...selector,
      args: toTypedArgs(fn, call.args),
      origin,
      ...(source ? { source } : {}),
    });
  } catch (err) {
    return Promise.reject(err);
  }
}

/** Every device the inventory knows (devices of a provider that is down are kept). */
export function registeredDevices(inventory: InventoryReader): DeviceCapabilities[] {
  return inventory.providers().flatMap((p) => [...p.devices]);
}

/**
 * Whether `providerId` is configured and its inventory not known: no host registered under it
 * (InventoryReader.whyNotRunning: a reload restarting or starting it, or its start failed), or one
 * not AVAILABLE that has not listed its inventory yet (a reload's new process not up, or whose
 * start failed). It is down then, not misconfigured: a declared call or a safe-state expectation
 * naming its devices cannot be told unresolved until it lists its inventory
 * (validateDeclaredCalls, the e-stop's plan log). One that listed no device (its host check
 * unmet) and went down has a known inventory, empty: the calls naming its devices are judged.
 */
export function inventoryUnknown(inventory: InventoryReader, providerId: string): boolean {
  const host = inventory.provider(providerId);
  if (host === undefined) return (inventory.whyNotRunning?.(providerId) ?? null) !== null;
  return !host.available && !(host.listed ?? host.devices.length > 0);
}

/**
 * Start-up preflight (log only, as later anolis): checks every mode-transition hook call and every
 * safety.safe_state call against the discovered capabilities -- device, function and arguments.
 * Returns one message per problem, prefixed with the call's config path and, for a call read from
 * the file, its line:column; the runtime logs them at start-up, after a reload that changes the
 * calls or the providers, and when a provider's rediscovery changes its inventory (a call that
 * does not resolve fails when it runs, which for the e-stop ladder matters). With `providerId`,
 * only the calls to that provider's devices are checked. A call to a configured provider whose
 * inventory is not known (inventoryUnknown: a reload's start of it failed, say) is not judged:
 * it is checked once that provider lists its inventory.
 */
export function validateDeclaredCalls(
  config: Config,
  inventory: InventoryReader,
  providerId?: string,
): string[] {
  const devices = registeredDevices(inventory);
  const hooks = config.automation.modeTransitionHooks;
  const declared: CallConfig[] = [
    ...hooks.beforeTransition.flatMap((h) => h.calls),
    ...hooks.afterTransition.flatMap((h) => h.calls),
    ...config.safety.safeState.hooks,
    ...config.safety.safeState.setpoints,
  ];
  const calls = providerId === undefined
    ? declared
    : declared.filter((c) => parseDeviceHandle(c.deviceHandle)?.providerId === providerId);
  const problems: string[] = [];
  for (const call of calls) {
    const callee = parseDeviceHandle(call.deviceHandle)?.providerId;
    if (callee !== undefined && inventoryUnknown(inventory, callee)) continue;
    const target = findDeclaredTarget(call, devices);
    if ("problem" in target) {
      const addr = parseDeviceHandle(call.deviceHandle);
      const known = addr !== null && inventory.provider(addr.providerId) !== undefined;
      problems.push(
        `${call.path}${atSourcePosition(call)}: ${
          addr !== null && !known
            ? `provider not found: ${quoteProviderText(addr.providerId)}`
            : target.problem
        }`,
      );
      continue;
    }
    try {
      validateArgs(target.fn, toTypedArgs(target.fn, call.args));
    } catch (err) {
      // validateArgs throws RuntimeError only.
      problems.push(`${call.path}${atSourcePosition(call)}: ${(err as Error).message}`);
    }
  }
  return problems;
}

/**
 * Runs `run` for every item, grouped by the provider of `handleOf(item)` (`provider/...`):
 * items of one provider one after another in their given order, providers concurrently, so a
 * slow or hung provider never delays another's calls. Every item is attempted: `run` should
 * report its own failures; a rejection is caught so the rest still run. Resolves when all are
 * done.
 */
export async function fanOutByProvider<T>(
  items: readonly T[],
  handleOf: (item: T) => string,
  run: (item: T) => Promise<void>,
): Promise<void> {
  const groups = new Map<string, T[]>();
  for (const item of items) {
    const provider = providerIdOf(handleOf(item));
    let group = groups.get(provider);
    if (!group) groups.set(provider, group = []);
    group.push(item);
  }
  await Promise.all([...groups.values()].map(async (group) => {
    for (const item of group) await run(item).catch(() => {});
  }));
}
