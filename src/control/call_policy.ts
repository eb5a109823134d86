/**
 * The provider's declared FunctionPolicy, enforced by the runtime (ADPP semantics sec. 6.3: the
 * runtime is the authority on modes and leases and must not rely on the provider). anolis reads
 * the policy and ignores it (anolishq/anolis core/registry/device_registry.cpp keeps no policy,
 * core/control/call_router.cpp checks none of it); we refuse what it forbids
 * (docs/http-api.md, "Provider policies"):
 *
 * - `allowed_modes` (non-empty): a call in any other runtime mode is refused, FAILED_PRECONDITION
 *   (409). Mode names compare case-insensitively; a name that is no runtime mode (anolis' "SAFE")
 *   matches no mode.
 * - `requires_lease`: this runtime grants no leases, so every call is refused, FAILED_PRECONDITION
 *   (409), never sent without one.
 * - `min_interval_ms`: a call sooner than that after the last call of the same function (by
 *   name: a provider restart may renumber functions) the runtime sent to the provider is refused,
 *   RESOURCE_EXHAUSTED (429, Retry-After).
 *
 * Stop actions (origin "safety": the e-stop's safe-state ladder, the hooks of a transition into
 * FAULT) pass all three: a stop must always go through. They are still counted as sent calls, so
 * the call after a stop keeps the provider's interval.
 */
import {
  type DeviceCapabilities,
  failedPrecondition,
  type FunctionPolicy,
  type FunctionSpec,
  namedList,
  NO_FUNCTION_POLICY,
  quoteDeviceHandle,
  quoteProviderText,
  resourceExhausted,
  type RuntimeError,
} from "../common/mod.ts";

/** The declared policy of `fn` (none declared: no restriction). */
export function policyOf(fn: FunctionSpec): FunctionPolicy {
  return fn.policy ?? NO_FUNCTION_POLICY;
}

/**
 * The function a refusal names: `"provider/device" "name"`, both provider text quoted as the rest of
 * the runtime quotes it (quoteDeviceHandle, quoteProviderText), so that a quote, a control
 * character or 10 KB in a name neither forges nor floods the message (an API answer, a Sparkplug
 * command's answer, the behavior tree's WARN line).
 */
function what(device: DeviceCapabilities, fn: FunctionSpec): string {
  return `${quoteDeviceHandle(device.device.providerId, device.device.deviceId)} ${
    quoteProviderText(fn.name)
  }`;
}

/**
 * Modes of a function's allowed_modes a refusal names at most (the runtime has four; a provider
 * may declare any number): the rest are counted ("and N more"), so the message stays bounded.
 */
export const MAX_NAMED_ALLOWED_MODES = 8;

/** The refusal of a call to `fn` in runtime mode `mode`, or null when its allowed_modes allow it. */
export function allowedModesRefusal(
  device: DeviceCapabilities,
  fn: FunctionSpec,
  mode: string,
): RuntimeError | null {
  const allowed = policyOf(fn).allowedModes;
  if (allowed.length === 0) return null;
  const m = mode.toUpperCase();
  if (allowed.some((a) => a.toUpperCase() === m)) return null;
  return failedPrecondition(
    `Call refused in ${mode} mode: ${what(device, fn)} is allowed only in ${
      namedList(allowed, MAX_NAMED_ALLOWED_MODES, quoteProviderText)
    } (provider policy allowed_modes)`,
  );
}

/** The refusal of a call to a function that requires a lease (this runtime grants none). */
export function leaseRefusal(device: DeviceCapabilities, fn: FunctionSpec): RuntimeError | null {
  if (!policyOf(fn).requiresLease) return null;
  return failedPrecondition(
    `Call refused: ${
      what(device, fn)
    } requires a lease (provider policy requires_lease) and this runtime grants no leases`,
  );
}

/**
 * Bound on the functions whose last sent call is remembered: past it, entries whose interval has
 * run out (at once for a function that declares none) are dropped, each judged by the interval
 * its function declares now (CallIntervals' `currentDevice`; by the one declared at its send
 * while no inventory declares the function). Entries within their interval stay, so the map
 * holds at most one entry per function of the inventory beyond this. Below it, the last send of
 * a function that declares no interval is kept too: the provider's next process may declare one,
 * counted from that send.
 */
export const MAX_CALL_INTERVAL_ENTRIES = 4096;

/** The last send of one function (CallIntervals). */
export interface IntervalNote {
  readonly atMono: number;
  /** The min_interval_ms the function declared when it was sent (0: none). */
  readonly minIntervalMs: number;
}

/** A send noted (CallIntervals.note): the note made, and the last send before it. */
export interface IntervalNoted {
  readonly note: IntervalNote;
  readonly previous: IntervalNote | undefined;
}

/** What a device declares now, or undefined when no inventory has it (its provider down, gone). */
export type CurrentDevice = (
  providerId: string,
  deviceId: string,
) => DeviceCapabilities | undefined;

/** Function name -> last send, of one device. */
type DeviceNotes = Map<string, IntervalNote>;

/**
 * A device's functions by name, the last declared of each name (as a call resolves it), made once
 * per functions list an inventory holds (a restart's discovery makes a new one): held weakly, so
 * nothing outlives the inventory that declared it.
 */
const BY_NAME = new WeakMap<readonly FunctionSpec[], ReadonlyMap<string, FunctionSpec>>();

function declaredByName(functions: readonly FunctionSpec[]): ReadonlyMap<string, FunctionSpec> {
  let byName = BY_NAME.get(functions);
  if (byName === undefined) {
    const made = new Map<string, FunctionSpec>();
    for (const f of functions) made.set(f.name, f); // a later declaration replaces an earlier
    BY_NAME.set(functions, byName = made);
  }
  return byName;
}

/** When each function was last sent to its provider (monotonic ms), for its min_interval_ms. */
export class CallIntervals {
  /**
   * provider -> device -> function name -> last send. By name, not by function id: a provider
   * restart may renumber its functions, and the interval belongs to what the function does, not
   * to the number it had. Nested maps, not one joined text key: ids and names are provider text
   * that may hold any character, a separator included.
   */
  readonly #last = new Map<string, Map<string, DeviceNotes>>();
  #size = 0;
  readonly #currentDevice: CurrentDevice;

  /**
   * `currentDevice` is the inventory: past the bound, an entry is judged by the interval its
   * function declares there now (the last declared of that name, as a call resolves it), not by
   * the one it declared when it was sent.
   */
  constructor(options: { currentDevice?: CurrentDevice } = {}) {
    this.#currentDevice = options.currentDevice ?? (() => undefined);
  }

  #get(device: DeviceCapabilities, fn: FunctionSpec): IntervalNote | undefined {
    return this.#last.get(device.device.providerId)?.get(device.device.deviceId)?.get(fn.name);
  }

  #set(device: DeviceCapabilities, fn: FunctionSpec, note: IntervalNote): void {
    const { providerId, deviceId } = device.device;
    let devices = this.#last.get(providerId);
    if (devices === undefined) this.#last.set(providerId, devices = new Map());
    let notes = devices.get(deviceId);
    if (notes === undefined) devices.set(deviceId, notes = new Map());
    if (!notes.has(fn.name)) this.#size++;
    notes.set(fn.name, note);
  }

  #delete(providerId: string, deviceId: string, name: string): void {
    const devices = this.#last.get(providerId);
    const notes = devices?.get(deviceId);
    if (devices === undefined || notes === undefined || !notes.delete(name)) return;
    this.#size--;
    if (notes.size === 0) devices.delete(deviceId);
    if (devices.size === 0) this.#last.delete(providerId);
  }

  /**
   * Drops every entry whose interval, as its function declares it now, has run out. Linear in the
   * entries: each device's functions are looked up by name (declaredByName), not searched per
   * entry -- a device may declare 1024 functions, and past the bound every sent call prunes.
   */
  #prune(nowMono: number): void {
    for (const [providerId, devices] of [...this.#last]) {
      for (const [deviceId, notes] of [...devices]) {
        const functions = this.#currentDevice(providerId, deviceId)?.functions;
        const byName = functions === undefined ? undefined : declaredByName(functions);
        for (const [name, note] of [...notes]) {
          const now = byName?.get(name);
          const declared = now === undefined ? note.minIntervalMs : policyOf(now).minIntervalMs;
          if (nowMono - note.atMono >= declared) this.#delete(providerId, deviceId, name);
        }
      }
    }
  }

  /** The refusal of a call to `fn` now, or null when its min_interval_ms has passed (or is 0). */
  refusal(device: DeviceCapabilities, fn: FunctionSpec, nowMono: number): RuntimeError | null {
    const min = policyOf(fn).minIntervalMs;
    if (min <= 0) return null;
    const last = this.#get(device, fn);
    if (!last) return null;
    const ago = nowMono - last.atMono;
    if (ago >= min) return null;
    const wait = min - ago;
    return resourceExhausted(
      `Call refused: ${what(device, fn)} was last called ${
        Math.floor(ago)
      } ms ago and its provider policy min_interval_ms is ${min} ms (retry in ${
        Math.ceil(wait)
      } ms)`,
      wait,
    );
  }

  /**
   * Records that a call to `fn` was sent now; also when it declares no min_interval_ms (a restart
   * may declare one: the call sooner than it after this send is refused).
   */
  note(device: DeviceCapabilities, fn: FunctionSpec, nowMono: number): IntervalNoted {
    const declared = policyOf(fn).minIntervalMs;
    const previous = this.#get(device, fn);
    const note = { atMono: nowMono, minIntervalMs: declared > 0 ? declared : 0 };
    this.#set(device, fn, note);
    if (this.#size > MAX_CALL_INTERVAL_ENTRIES) this.#prune(nowMono);
    return { note, previous };
  }

  /**
   * Takes back the note of a call to `fn` whose request was never written after all (its
   * session refused it, or a failed write did not deliver it): the send before it, as `note`
   * returned it, is the last send again. Called under the provider's lock.
   */
  unnote(device: DeviceCapabilities, fn: FunctionSpec, noted: IntervalNoted): void {
    // No longer the last send noted: dropped since (another provider's note past the bound: its
    // interval had run out, and the older send's has too; put back, it would hold the table over
    // its bound), or overtaken by a later send (the provider a reload replaced is called under a
    // lock of its own while this call's write still fails): that send stays the last.
    if (this.#get(device, fn) !== noted.note) return;
    if (noted.previous === undefined) {
      this.#delete(device.device.providerId, device.device.deviceId, fn.name);
    } else this.#set(device, fn, noted.previous);
  }

  /** Functions remembered now (tests, metrics). */
  get size(): number {
    return this.#size;
  }
}
