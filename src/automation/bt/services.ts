/**
 * The narrow interfaces through which behavior-tree nodes reach the runtime: reads from the state
 * cache, writes through the call router, declared parameters and the clock. The runtime kernel
 * implements BtServices; tests use an in-memory double.
 */
import type { Clock, TypedValue } from "../../common/mod.ts";

/** Signal quality as behavior-tree nodes see it (anolis names: UNKNOWN, not UNAVAILABLE). */
export type BtQuality = "OK" | "STALE" | "FAULT" | "UNKNOWN" | "UNSPECIFIED";

/** What custom nodes need from the runtime. */
export interface BtServices {
  /**
   * Last cached value of a signal from the state cache, or null when absent. `value` is null for
   * a signal the provider answered only without a value (its quality still tells why).
   */
  readSignal(
    deviceHandle: string,
    signalId: string,
  ): { value: TypedValue | null; quality: BtQuality } | null;
  /**
   * Calls a device function by name through the runtime's call router (automated call: same
   * validation, IDLE gate, e-stop latch as /v0/call). Rejects with RuntimeError, or with
   * CallHeldBack for a call a transition leaving AUTO held back unsent (no outcome: the node asks
   * again). Must honour the AbortSignal (halt). Args: JSON float -> {type:"double"}, JSON
   * integer -> {type:"int64"}, bool, string; the router widens int64 to uint64/double where the
   * ArgSpec needs it.
   */
  callDevice(
    deviceHandle: string,
    functionName: string,
    args: Record<string, TypedValue>,
    signal: AbortSignal,
    /** Path of the calling node (`Main/Sequence[0]/CallDevice[2]`), for the audit trail. */
    node?: string,
    /**
     * Where the calling node is written (`FILE:LINE:COL`): a refusal that is the tree's own error
     * (a function the device does not declare, a provider not configured, arguments that fail
     * validation -- names and args a tree takes from the blackboard are checked only now) names it.
     */
    at?: string,
  ): Promise<void>;
  /**
   * A call the calling node refused itself before callDevice, for the tree's error it found:
   * a port it could not read (a blackboard entry not set), args that do not parse. `deviceHandle`:
   * the device it names, else its port as written. `message` names the node (`FILE:LINE:COL`).
   * Optional: automation status lists it in `refused_calls` (`validation`). `node`: the calling
   * node's path, as callDevice's (a refusal under its port's text ends once the node calls).
   */
  refuseCall?(deviceHandle: string, functionName: string, message: string, node?: string): void;
  /** Current value of a declared parameter, or null when unknown. */
  getParameter(
    name: string,
  ): { type: "double" | "int64" | "bool" | "string"; value: number | boolean | string } | null;
  clock: Clock;
}

/**
 * Reads a file by absolute path (injected by the runtime: src/automation never touches Deno.*).
 * Bytes are preferred (the version digest covers the exact file bytes); a string is UTF-8 encoded
 * for the digest. Throws when the file cannot be read.
 */
export type ReadFileFn = (absPath: string) => string | Uint8Array;

/**
 * Reads a file by absolute path without holding the caller's thread (the runtime's: off the event
 * loop's thread, bounded); rejects, saying why, when the file cannot be read or does not answer:
 * with a RuntimeError DEADLINE_EXCEEDED when the read did not answer in time, UNAVAILABLE when it
 * was not asked (too many reads left waiting) -- readTreeFiles then asks no further read.
 */
export type ReadFileAsyncFn = (absPath: string) => Promise<string | Uint8Array>;
