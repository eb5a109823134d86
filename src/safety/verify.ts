/**
 * Verified safe state: after the ladder, the expected signals are read back **fresh from the
 * providers** (a ReadSignals round-trip, never the cache), repeatedly at a short bounded interval,
 * until every expectation holds or verify_timeout_ms passes (a device whose provider's circuit is
 * open, or whose provider a reload removed, is not read again: it cannot answer before then). The
 * result says what was achieved:
 *
 *   verified     every check's last fresh read met its expectation with quality OK
 *   mismatch     at least one check read a value (or a non-OK quality) that did not meet it
 *   unreachable  no mismatch, but at least one check could not be read (provider or device
 *                down, read failed or timed out, signal not returned or without a value)
 *   unverifiable nothing is expected (safety.safe_state.expect is empty)
 *
 * A bad, stale or missing input counts as unsafe: only a fresh value with quality OK verifies.
 * "verified" proves a value was read back, not a stopped shaft: the expectation must name the
 * signal that shows the physical state (docs/safety.md).
 */
import {
  type Clock,
  type DeviceCapabilities,
  deviceHandle,
  type Logger,
  namedDeviceHandle,
  namedProviderId,
  numericOf,
  parseDeviceHandle,
  providerTextWithin,
  type Quality,
  readClockTwice,
  type ReloadStart,
  reloadStartWords,
  sleepOn,
  startFailureWords,
  type TypedValue,
} from "../common/mod.ts";
import type { SafeStateExpectation } from "../config/mod.ts";
import { ESTOP_QUOTED_NAME_CHARS, type FunctionRef } from "./safe_state.ts";
import type { FreshRead, FreshReader, ProviderSummary } from "../state/mod.ts";

/** Pause between two read-backs of a device whose checks do not all hold yet. */
export const VERIFY_RETRY_INTERVAL_MS = 50;

export type CheckOutcome = "verified" | "mismatch" | "unreachable";
export type VerificationOutcome = CheckOutcome | "unverifiable";

/** What one expectation asks for, as the answer shows it. */
export type ExpectedValue =
  | { readonly equals: boolean | number | string }
  | { readonly min?: number; readonly max?: number };

/** One expectation's result. */
export interface VerificationCheck {
  /** `provider/device/signal`. */
  readonly signal: string;
  readonly expected: ExpectedValue;
  /** The last fresh value read (null when none could be read). */
  readonly observed: TypedValue | null;
  /** The provider's quality of that value (null when none was read). */
  readonly quality: Quality | null;
  readonly outcome: CheckOutcome;
  /** Why it is unreachable or does not match, in words. */
  readonly reason?: string;
}

/** The answer's `verification` (and status `estop.verification`). */
export interface Verification {
  readonly outcome: VerificationOutcome;
  readonly elapsed_ms: number;
  readonly checks: readonly VerificationCheck[];
}

export interface VerifyOptions {
  /** Reads signals fresh from their provider (the state cache: never its cached values). */
  readonly reads: FreshReader;
  readonly clock: Clock;
  readonly expect: readonly SafeStateExpectation[];
  readonly timeoutMs: number;
  /**
   * Where a monotonic clock that throws is told (ERROR lines: at most
   * MAX_CLOCK_ERROR_LINES_PER_READ_BACK per read-back, then one line counting the others).
   */
  readonly log?: Logger;
  /**
   * True once a runtime's stop has ended the read-backs (Estop.endReadBacks: its providers are
   * being stopped): no device is read again, each check's last result stands (one not held is
   * not verified). Each device is read at least once.
   */
  readonly ended?: () => boolean;
}

/**
 * ERROR lines one read-back writes for its clock's failures (ClockFailureLines): the first ones;
 * the others are counted and said once, on one ERROR line, when the read-back ends. A clock that
 * fails now and then during a long read-back of many devices would otherwise write one or two
 * lines per device per read.
 */
export const MAX_CLOCK_ERROR_LINES_PER_READ_BACK = 1;

/**
 * One read-back's lines for its clock's failures, bounded (MAX_CLOCK_ERROR_LINES_PER_READ_BACK);
 * `log` is what readClockTwice writes to. Its lines never throw (the stop path): one it fails to
 * write is lost.
 */
class ClockFailureLines {
  readonly #out: Logger | undefined;
  #written = 0;
  #unsaid = 0;
  readonly log: Logger | undefined;

  constructor(out: Logger | undefined) {
    this.#out = out;
    this.log = out === undefined ? undefined : {
      debug: (m) => this.#write(() => out.debug(m)),
      info: (m) => this.#write(() => out.info(m)),
      warn: (m) => this.#write(() => out.warn(m)),
      error: (m) => this.#error(m),
      child: (scope) => out.child(scope),
    };
  }

  #error(message: string): void {
    if (this.#written >= MAX_CLOCK_ERROR_LINES_PER_READ_BACK) {
      this.#unsaid++;
      return;
    }
    this.#written++;
    this.#write(() => this.#out?.error(message));
  }

  #write(line: () => void): void {
    try {
      line();
    } catch { /* nowhere left to say it */ }
  }

  /** Says how many failures were not written, once, when the read-back ends (none: no line). */
  end(): void {
    if (this.#unsaid === 0) return;
    const n = this.#unsaid;
    this.#unsaid = 0;
    this.#write(() =>
      this.#out?.error(
        `safe-state verification: reading the clock failed ${n} more time(s) during this ` +
          `read-back (only the first ${MAX_CLOCK_ERROR_LINES_PER_READ_BACK} logged)`,
      )
    );
  }
}

/**
 * The monotonic clock, on the stop path: a clock that fails is asked once more; null when it
 * fails again (what needs the time is then left out, `without`, said on an ERROR line within the
 * read-back's bound, `lines`).
 */
function readMono(
  o: VerifyOptions,
  lines: ClockFailureLines,
  step: string,
  without: string,
): number | null {
  const what = `safe-state verification (${step})`;
  return readClockTwice(() => o.clock.monoMs(), lines.log, what, `${what}: ${without}`);
}

/** Reads every expected signal back until all hold or the timeout passes (module comment). */
export async function verifySafeState(o: VerifyOptions): Promise<Verification> {
  if (o.expect.length === 0) return { outcome: "unverifiable", elapsed_ms: 0, checks: [] };
  const lines = new ClockFailureLines(o.log);
  try {
    return await readBack(o, lines);
  } finally {
    lines.end();
  }
}

/** verifySafeState with something expected; the clock's failures said on `lines`. */
async function readBack(o: VerifyOptions, lines: ClockFailureLines): Promise<Verification> {
  // With no start there is no deadline: each device is read back once, bounded by the timeout.
  const started = readMono(o, lines, "start", "read back once, not retried");
  const deadline = started === null ? null : started + o.timeoutMs;
  const groups = new Map<string, SafeStateExpectation[]>();
  for (const e of o.expect) {
    const key = `${e.providerId}\u0000${e.deviceId}`;
    let g = groups.get(key);
    if (!g) groups.set(key, g = []);
    g.push(e);
  }
  const results = new Map<SafeStateExpectation, VerificationCheck>();
  await Promise.all(
    [...groups.values()].map((g) => verifyDevice(o, lines, g, deadline, results)),
  );
  const checks = o.expect.map((e) => results.get(e)!);
  // A duration the clock could not measure is 0, never invented.
  const ended = started === null ? null : readMono(o, lines, "end", "elapsed_ms is 0");
  return {
    outcome: verificationOutcome(checks),
    elapsed_ms: started === null || ended === null ? 0 : Math.round(ended - started),
    checks,
  };
}

/**
 * The outcome of a set of checks (module comment): verified when every one is, mismatch when any
 * is, else unreachable; unverifiable when there are none.
 */
export function verificationOutcome(checks: readonly VerificationCheck[]): VerificationOutcome {
  if (checks.length === 0) return "unverifiable";
  if (checks.every((c) => c.outcome === "verified")) return "verified";
  return checks.some((c) => c.outcome === "mismatch") ? "mismatch" : "unreachable";
}

/**
 * A configured signal path (`<provider>/<device>/<signal>`, as safety.safe_state.expect writes it:
 * the provider id up to the first `/`, the signal id after the last) as a log line names it: the
 * provider and device cut as namedDeviceHandle, the signal id to ESTOP_QUOTED_NAME_CHARS; a path
 * of another shape cut whole to ESTOP_QUOTED_NAME_CHARS. The check, the answer and the event keep
 * it whole.
 */
export function namedSignalPath(signal: string): string {
  const first = signal.indexOf("/");
  const last = signal.lastIndexOf("/");
  if (first < 0 || last === first) return providerTextWithin(signal, ESTOP_QUOTED_NAME_CHARS);
  return `${namedDeviceHandle(signal.slice(0, first), signal.slice(first + 1, last))}/${
    providerTextWithin(signal.slice(last + 1), ESTOP_QUOTED_NAME_CHARS)
  }`;
}

/** One device's expectations: read, judge, repeat until all hold or the deadline. */
async function verifyDevice(
  o: VerifyOptions,
  lines: ClockFailureLines,
  group: readonly SafeStateExpectation[],
  deadline: number | null,
  out: Map<SafeStateExpectation, VerificationCheck>,
): Promise<void> {
  const { providerId, deviceId } = group[0]!;
  // The device as its clock lines name it: the provider id (configured, of any length) and the
  // device id (configured) cut as every line naming a device cuts them.
  const named = namedDeviceHandle(providerId, deviceId);
  const signalIds = [...new Set(group.map((e) => e.signalId))];
  for (;;) {
    // A clock that fails (null deadline, or no time now): this read is the last, bounded by the
    // whole timeout.
    const now = deadline === null
      ? null
      : readMono(o, lines, named, "read back once more, not retried");
    const remaining = deadline === null || now === null ? o.timeoutMs : deadline - now;
    const answer = await o.reads.readFresh(providerId, deviceId, signalIds, remaining);
    const read = stopEnded(o, answer);
    let allHold = true;
    for (const e of group) {
      const check = judge(e, read);
      // A read that fails does not erase what an earlier fresh read showed ("mismatch" is about
      // the last fresh value), and one that got no answer in time (the last one, often, cut
      // short by the deadline) says nothing new: the earlier result and its reason stand. A
      // provider that hung is marked down by its own timeout, which the next read reports.
      const previous = out.get(e);
      // A provider a reload removed: its devices are gone, nothing read of them before stands.
      const keep = !read.ok && previous !== undefined && !read.removed &&
        (previous.observed !== null || read.timedOut);
      if (!keep) out.set(e, check);
      if (check.outcome !== "verified") allHold = false;
    }
    // A provider whose circuit is open cannot answer before the deadline (only a reload retries
    // it), nor one a reload removed: not read again, its checks say unreachable now rather than
    // at verify_timeout_ms (an earlier fresh read's result stands, as above, but not a removed
    // provider's; never verified by this read).
    if (!read.ok && read.staysDown) return;
    if (allHold || deadline === null || now === null || o.ended?.()) return;
    const after = readMono(o, lines, named, "not read back again");
    if (after === null) return;
    const left = deadline - after;
    if (left <= 0) return;
    await sleepOn(o.clock, Math.min(VERIFY_RETRY_INTERVAL_MS, left));
    if (o.ended?.()) return;
  }
}

/**
 * A read that failed once the runtime's stop ended the read-backs (VerifyOptions.ended: its
 * providers being stopped, their sessions closed under the read) says so: the runtime's stop ended
 * it, not the provider ("closed by the runtime") -- the provider's words after it. Only one its
 * provider's stop ended (FreshRead.cutByStop, judged when it failed): not one that failed on its
 * own meanwhile (the provider's error answer), nor one that timed out (its own bound ended it), nor
 * one of a provider a reload removed (that is why).
 */
function stopEnded(o: VerifyOptions, read: FreshRead): FreshRead {
  if (read.ok || read.cutByStop !== true || o.ended?.() !== true) return read;
  return { ...read, reason: `${READ_ENDED_BY_STOP} (${read.reason})` };
}

/** The reason of a check whose read the runtime's stop ended (stopEnded), before the read's own. */
const READ_ENDED_BY_STOP = "read ended by the runtime's stop";

function expectedOf(e: SafeStateExpectation): ExpectedValue {
  if (e.equals !== undefined) return { equals: e.equals };
  return {
    ...(e.min !== undefined ? { min: e.min } : {}),
    ...(e.max !== undefined ? { max: e.max } : {}),
  };
}

function judge(e: SafeStateExpectation, read: FreshRead): VerificationCheck {
  const base = { signal: e.signal, expected: expectedOf(e) };
  if (!read.ok) {
    return { ...base, observed: null, quality: null, outcome: "unreachable", reason: read.reason };
  }
  const sample = read.samples.get(e.signalId);
  if (!sample || sample.value === null) {
    return {
      ...base,
      observed: null,
      quality: sample?.quality ?? null,
      outcome: "unreachable",
      reason: sample
        ? "the provider returned no value"
        : read.undeclared?.has(e.signalId)
        ? "the device does not declare the signal"
        : "the provider did not return the signal",
    };
  }
  const { value, quality } = sample;
  const observed = { ...base, observed: value, quality };
  if (quality !== "OK") {
    return { ...observed, outcome: "mismatch", reason: `quality ${quality}` };
  }
  const problem = mismatch(e, value);
  return problem === null
    ? { ...observed, outcome: "verified" }
    : { ...observed, outcome: "mismatch", reason: problem };
}

/** Null when `value` meets the expectation, else why not. */
export function mismatch(e: SafeStateExpectation, value: TypedValue): string | null {
  if (e.equals !== undefined) {
    const want = e.equals;
    if (typeof want === "boolean") {
      if (value.type !== "bool") return `expected a bool, the signal is ${value.type}`;
      return value.bool === want ? null : `reads ${value.bool}`;
    }
    if (typeof want === "string") {
      if (value.type !== "string") return `expected a string, the signal is ${value.type}`;
      return value.string === want ? null : `reads ${JSON.stringify(value.string)}`;
    }
    const n = numericOf(value);
    if (n === null) return `expected a number, the signal is ${value.type}`;
    return equalNumber(n, want) ? null : `reads ${String(n)}`;
  }
  const n = numericOf(value);
  if (n === null) return `expected a number, the signal is ${value.type}`;
  if (typeof n === "number" && !Number.isFinite(n)) return `reads ${String(n)}`;
  // A bigint compares with a number exactly (by mathematical value).
  if (n < (e.min ?? -Infinity)) return `reads ${String(n)}, below ${e.min}`;
  if (n > (e.max ?? Infinity)) return `reads ${String(n)}, above ${e.max}`;
  return null;
}

function equalNumber(a: number | bigint, b: number): boolean {
  if (typeof a === "number") return a === b;
  return Number.isInteger(b) && a === BigInt(b);
}

/**
 * Actuating devices with no expectation on any of their signals (`provider/device`): an e-stop
 * can never prove anything about them.
 */
export function unverifiedDevices(
  expect: readonly SafeStateExpectation[],
  devices: readonly DeviceCapabilities[],
): string[] {
  const expected = new Set(expect.map((e) => `${e.providerId}\u0000${e.deviceId}`));
  return devices
    .filter((d) => d.functions.some((f) => f.actuating))
    .filter((d) => !expected.has(`${d.device.providerId}\u0000${d.device.deviceId}`))
    .map((d) => deviceHandle(d.device.providerId, d.device.deviceId));
}

/** A device an e-stop cannot verify, and why (status `estop.unverified_reasons`). */
export interface UnverifiedDevice {
  /** `provider/device`. */
  readonly device_handle: string;
  readonly reason: string;
}

/** Why a listed actuating device is unverified (unverifiedDevices). */
export const UNVERIFIED_NO_EXPECTATION = "no safety.safe_state.expect entry covers it";

/**
 * The devices the ladder is to secure (`addressed`, `provider/device`: those its calls address, the
 * safety config's calls name and its providers listed before) that no provider lists and no
 * expectation covers, each once, in the order first addressed, with why it is not listed
 * (`listedBefore`: the handles of devices listed before, said "no longer listed"). The ladder
 * makes no call to such a device that can reach it (rung 3 zeroes listed devices only; a declared
 * call fails NOT_FOUND) and nothing reads it back: it is not known to be safe, though
 * unverifiedDevices (which knows listed devices only) cannot name it. `providerOf` is the
 * inventory's provider; one that throws is the caller's to contain; `why` says more of a provider
 * no host is registered for (UnlistedContext).
 */
export function unlistedLadderDevices(
  expect: readonly SafeStateExpectation[],
  devices: readonly DeviceCapabilities[],
  addressed: readonly string[],
  providerOf: (providerId: string) => ProviderSummary | undefined,
  why: UnlistedContext = {},
): UnverifiedDevice[] {
  const listedBefore = why.listedBefore ?? new Set<string>();
  const key = (p: string, d: string) => `${p}\u0000${d}`;
  const known = new Set(devices.map((d) => key(d.device.providerId, d.device.deviceId)));
  const expected = new Set(expect.map((e) => key(e.providerId, e.deviceId)));
  const seen = new Set<string>();
  const out: UnverifiedDevice[] = [];
  for (const handle of addressed) {
    const addr = parseDeviceHandle(handle);
    if (addr === null) continue;
    const k = key(addr.providerId, addr.deviceId);
    if (known.has(k) || expected.has(k) || seen.has(k)) continue;
    seen.add(k);
    const device_handle = deviceHandle(addr.providerId, addr.deviceId);
    out.push({
      device_handle,
      reason: whyUnlisted(
        addr.providerId,
        providerOf(addr.providerId),
        listedBefore.has(device_handle),
        why,
      ),
    });
  }
  return out;
}

/** What unlistedLadderDevices is told of the devices and providers no provider lists. */
export interface UnlistedContext {
  /** The handles of devices listed before: said "no longer listed". */
  readonly listedBefore?: ReadonlySet<string>;
  /**
   * Why a configured provider no host is registered for is not running (InventoryReader
   * .whyNotRunning, the one wording: "provider <id> is being restarted by a configuration
   * reload", say), null for one not configured: its devices are lost, not gone. Absent: every
   * provider with no host is taken for not configured.
   */
  readonly whyNotRunning?: (providerId: string) => string | null;
  /**
   * Why the last reload failed to start a provider listed down (InventoryReader.startFailure),
   * null otherwise. Absent: never known.
   */
  readonly startFailure?: (providerId: string) => string | null;
  /**
   * What a running reload is doing with a provider listed but not up (InventoryReader
   * .reloadStart): starting it anew or restarting it, said as the device conditions say it
   * (reloadStartWords), not in its lifecycle's words; null otherwise. Absent: never known.
   */
  readonly reloadStart?: (providerId: string) => ReloadStart | null;
}

/** Why a device the ladder is to secure is not in the inventory (unlistedLadderDevices). */
function whyUnlisted(
  providerId: string,
  provider: ProviderSummary | undefined,
  listedBefore: boolean,
  why: UnlistedContext,
): string {
  if (provider === undefined) {
    const notRunning = why.whyNotRunning?.(providerId) ?? null;
    return notRunning === null
      ? `no provider ${namedProviderId(providerId)} is configured`
      : `its ${notRunning}`;
  }
  const listed = `${listedBefore ? "no longer" : "not"} listed by its provider`;
  if (!provider.available) {
    const failed = why.startFailure?.(providerId) ?? null;
    if (failed !== null) {
      return `${listed}, which ${startFailureWords(failed)}`;
    }
    const start = why.reloadStart?.(providerId) ?? null;
    return start !== null
      ? `${listed}, which ${reloadStartWords(start)}`
      : `${listed}, which is unavailable (${provider.lifecycle})`;
  }
  return provider.hostCheck()?.status === "unmet" ? `${listed} (its host check is unmet)` : listed;
}

/**
 * Bound on the devices one provider no longer lists that ListedBefore remembers: the most recently
 * listed are kept. A provider lists at most MAX_DEVICES_PER_PROVIDER (1024) at once; this bounds
 * what its restarts add (a device renamed at each start, say).
 */
export const MAX_LISTED_BEFORE_DEVICES = 1024;

/**
 * The actuating devices each provider has listed since it was configured (the e-stop's
 * `unverified_devices`): a device its provider, back with its host check unmet or with a smaller
 * inventory, no longer lists is still one the ladder is to secure. Forgotten when a reload removes
 * the provider (its devices are then gone, not lost); one a reload restarts keeps them.
 */
export class ListedBefore {
  /**
   * Per provider: its device ids -> the names of their actuating functions as last listed, the
   * most recently listed last (at most one inventory's worth per provider:
   * MAX_LISTED_BEFORE_DEVICES devices of at most MAX_FUNCTIONS_PER_DEVICE functions each).
   */
  readonly #byProvider = new Map<string, Map<string, readonly string[]>>();
  /** Per provider: how many devices it listed were let go of past MAX_LISTED_BEFORE_DEVICES. */
  readonly #dropped = new Map<string, number>();

  /**
   * Records the actuating devices `providerId` lists now (its inventory, just discovered); returns
   * how many of those it listed before were let go of (the oldest past MAX_LISTED_BEFORE_DEVICES).
   */
  note(providerId: string, devices: readonly DeviceCapabilities[]): number {
    let ids = this.#byProvider.get(providerId);
    for (const d of devices) {
      const actuating = d.functions.filter((f) => f.actuating).map((f) => f.name);
      if (actuating.length === 0) continue;
      if (ids === undefined) this.#byProvider.set(providerId, ids = new Map());
      ids.delete(d.device.deviceId);
      ids.set(d.device.deviceId, actuating);
    }
    if (ids === undefined) return 0;
    let dropped = 0;
    for (const oldest of ids.keys()) {
      if (ids.size <= MAX_LISTED_BEFORE_DEVICES) break;
      ids.delete(oldest);
      dropped++;
    }
    if (dropped > 0) this.#dropped.set(providerId, (this.#dropped.get(providerId) ?? 0) + dropped);
    return dropped;
  }

  /**
   * How many devices `providerId` listed before were let go of past MAX_LISTED_BEFORE_DEVICES
   * since it was configured: status can no longer name them.
   */
  dropped(providerId: string): number {
    return this.#dropped.get(providerId) ?? 0;
  }

  /**
   * The actuating functions, as last listed, of every device recorded that `listed` (the handles
   * listed now) does not hold: the ladder is to secure them and no call reaches them (the plan's
   * `uncovered`), provider by provider.
   */
  unlistedFunctions(listed: ReadonlySet<string>): FunctionRef[] {
    const out: FunctionRef[] = [];
    for (const [p, ids] of this.#byProvider) {
      for (const [d, functions] of ids) {
        const device_handle = deviceHandle(p, d);
        if (listed.has(device_handle)) continue;
        for (const name of functions) out.push({ device_handle, function: name });
      }
    }
    return out;
  }

  /** Forgets a provider's devices, and what it let go of (a reload removed it). */
  forget(providerId: string): void {
    this.#dropped.delete(providerId);
    this.#byProvider.delete(providerId);
  }

  /** Every device recorded, `provider/device`, provider by provider. */
  handles(): string[] {
    return [...this.#byProvider].flatMap(([p, ids]) =>
      [...ids.keys()].map((d) => deviceHandle(p, d))
    );
  }
}

/**
 * Expectations that cannot resolve against the inventory (unknown provider, device or signal),
 * one message each with its config path; logged at start-up.
 */
export function unresolvedExpectations(
  expect: readonly SafeStateExpectation[],
  devices: readonly DeviceCapabilities[],
): string[] {
  const problems: string[] = [];
  for (const e of expect) {
    const dev = devices.find((d) =>
      d.device.providerId === e.providerId && d.device.deviceId === e.deviceId
    );
    if (!dev) {
      problems.push(
        `${e.path}: device not found: ${namedDeviceHandle(e.providerId, e.deviceId)}`,
      );
      continue;
    }
    const sig = dev.signals.find((s) => s.signalId === e.signalId);
    if (!sig) {
      problems.push(`${e.path}: signal not found: ${namedSignalPath(e.signal)}`);
      continue;
    }
    const t = sig.valueType;
    const wantsNumber = e.equals === undefined || typeof e.equals === "number";
    const isNumber = t === "double" || t === "int64" || t === "uint64";
    const ok = t === null ||
      (wantsNumber ? isNumber : typeof e.equals === "boolean" ? t === "bool" : t === "string");
    if (!ok) {
      problems.push(
        `${e.path}: ${namedSignalPath(e.signal)} is declared ${t}, the expectation wants a ${
          wantsNumber ? "number" : typeof e.equals
        }`,
      );
    }
  }
  return problems;
}
