/**
 * The audit seam of the domain layers: who asked for an actuating decision (AuditOrigin) and
 * what was decided (AuditDecision). The router, the mode manager, the parameter store and the
 * e-stop report every decision to an AuditSink; src/audit/ implements it (collapse, journal,
 * queries). `record` must never block or throw: it is called on the call path and the stop path.
 * `writeAhead` is the one wait: the router writes a call's decision before the provider gets the
 * call, bounded in time, and never refused for a failing journal.
 */

/** The kinds of origin an audit entry names (docs/http-api.md "Audit trail"). */
export const AUDIT_ORIGIN_KINDS = [
  "http",
  "automation",
  "hook",
  "estop",
  "alarm",
  "reload",
  "device_loss",
  "runtime",
  "sparkplug",
] as const;
export type AuditOriginKind = (typeof AUDIT_ORIGIN_KINDS)[number];

/**
 * Who asked, with the identity that applies to its kind (snake_case: the entry's JSON shape).
 * `http`: client address and token name (`default`, `local`, `anonymous` or a named token).
 * `automation`: the behavior-tree node path. `hook`: the transition (`AUTO->FAULT`) and the hook's
 * config path. `estop`: the ladder rung and what triggered the stop (`api`, `alarm:<id>`).
 * `alarm`: the alarm id. `device_loss`: the device whose outage forced FAULT (`device_handle`).
 * `runtime`: the runtime itself (the audit journal's own `gap` entries). `sparkplug`: a command
 * from the MQTT broker (docs/sparkplug.md): `cause` is the message type (DCMD, NCMD) and
 * `token_name` the role it acts with (`sparkplug.role`).
 */
export interface AuditOrigin {
  readonly kind: AuditOriginKind;
  readonly address?: string;
  readonly token_name?: string;
  readonly node?: string;
  readonly transition?: string;
  readonly hook?: string;
  readonly rung?: string;
  readonly cause?: string;
  readonly alarm_id?: string;
  readonly device_handle?: string;
}

/**
 * What a decision was about (`alarm`: an operator's ack, shelve or unshelve, in `function`;
 * `config`: a reload's decision on a section that weakens a protection or was refused, the section
 * in `function`).
 */
export type AuditAction =
  | "call"
  | "mode"
  | "parameter"
  | "estop"
  | "estop_clear"
  | "alarm"
  | "config";

/** Every AuditAction (query filters, the response schema). */
export const AUDIT_ACTIONS: readonly AuditAction[] = [
  "call",
  "mode",
  "parameter",
  "estop",
  "estop_clear",
  "alarm",
  "config",
];

/**
 * `accepted`: every gate passed and the request was carried out (a call: the provider answered
 * OK). `refused`: a gate or a check said no before anything was sent. `failed`: a call passed
 * every gate but the provider answered with an error or did not answer in time.
 */
export type AuditOutcome = "accepted" | "refused" | "failed";

/**
 * Which check refused: `mode` (IDLE/FAULT/AUTO gate, or a refused transition), `estop` (the
 * latch), `interlock`, `device_loss` (automation's device-loss latch), `validation` (arguments,
 * parameter value), `queue` (the provider's call queue was full), `role` (authorization,
 * HTTP layer), `auth` (no valid token, HTTP layer), or a gate's own name.
 */
export type AuditRefusal = string;

/** One decision as a domain layer reports it; the sink adds time, mode and count. */
export interface AuditDecision {
  readonly action: AuditAction;
  readonly origin: AuditOrigin;
  readonly outcome: AuditOutcome;
  /** `provider/device` for a call; null otherwise. */
  readonly device_handle?: string | null;
  /** Function name of a call; parameter name; target mode; `reason` (an e-stop's late reason). */
  readonly function?: string | null;
  /** Call arguments (typed values), the parameter value, the e-stop reason. */
  readonly args?: Readonly<Record<string, unknown>> | null;
  /** Refusal or failure message (`CODE: message`); null when accepted. */
  readonly reason?: string | null;
  readonly refused_by?: AuditRefusal | null;
  /** The provider's results of an accepted call, or what a mode/e-stop request achieved. */
  readonly result?: Readonly<Record<string, unknown>> | null;
  /** From the request to the decision (a call: to the provider's answer), in ms. */
  readonly latency_ms?: number | null;
  /** A call's decision written ahead (what `writeAhead` gave): its outcome settles it. */
  readonly intent?: AuditIntent | null;
}

/** A call's decision as written before the call is sent (the record of its outcome follows). */
export type AuditCallAhead = Pick<AuditDecision, "origin" | "device_handle" | "function" | "args">;

/** What `writeAhead` wrote: handed back to `record` with the call's outcome. Opaque. */
export interface AuditIntent {
  readonly id: string;
}

/** How a write ahead waits. */
export interface WriteAheadOptions {
  /**
   * False: the decision is queued for the journal at once (in order before its outcome) and the
   * call does not wait for the OS to have it: for the stop actions (the e-stop ladder, the hooks
   * into FAULT), which a slow disk must never delay. Default true.
   */
  readonly wait?: boolean;
  /**
   * Ends the wait once settled, whatever the journal did (nothing counted late): the router's
   * word that the call will not be sent -- a stop action queued behind it on its provider's lock
   * after a stop that voids it (it is refused at its turn). A slow disk must never hold that stop
   * action behind the wait.
   */
  readonly until?: PromiseLike<unknown>;
}

/** Where decisions go. `record` never blocks and never throws. */
export interface AuditSink {
  record(decision: AuditDecision): void;
  /**
   * Writes the decision to send an actuating call before it is sent, and resolves once its
   * bytes reached the OS, its write failed or a bounded wait passed (never rejects): the call
   * goes on in every case. Absent: nothing is written ahead (a sink kept in memory).
   */
  writeAhead?(call: AuditCallAhead, options?: WriteAheadOptions): Promise<AuditIntent | null>;
}
