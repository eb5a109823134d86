/**
 * The registry's typed inputs. The HTTP layer parses request bodies and query strings into these
 * (naming any mistyped field in a 400); the registry checks only domain rules (sizes, nesting,
 * ranges, which run is open).
 */
import type { CLIENT_CLOSE_REASONS, TagScope } from "./run_record.ts";

/** A close reason a client may give. */
export type ClientCloseReason = (typeof CLIENT_CLOSE_REASONS)[number];

/** POST /v0/runs. An absent member takes its default ({}, empty lists, null). */
export interface OpenRunRequest {
  readonly params?: Readonly<Record<string, unknown>>;
  readonly tag_scope?: Readonly<Partial<TagScope>>;
  readonly experiment_label?: string | null;
}

/**
 * A check, asked when an operation's turn in the registry's write queue comes, of whether its
 * requester is still admitted: null, or the refusal whose `error` the operation throws, writing
 * nothing (the HTTP layer's: a reload removed or lowered the request's token while it waited).
 */
export type StillAdmitted = () => { readonly error: Error } | null;

/** POST /v0/runs/{run_id}/close. Default reason: operator_stop. */
export interface CloseRunRequest {
  readonly close_reason?: ClientCloseReason;
}

/** POST /v0/runs/{run_id}/events: an operator marker. */
export interface MarkerRequest {
  readonly type: string;
  readonly payload?: Readonly<Record<string, unknown>>;
  /** Default: the time it is recorded. */
  readonly occurred_at_epoch_ms?: number;
  /**
   * The client's key for this marker (1 to MAX_MARKER_ID_CHARS characters): a repeat within the
   * run answers the marker recorded first and writes nothing; the same key for another marker is
   * FAILED_PRECONDITION. The open run remembers its last MARKER_IDS_KEPT keys.
   */
  readonly marker_id?: string;
}

/** A page of a list. `limit` < 1 or absent takes the default; above the maximum it is clamped. */
export interface PageRequest {
  readonly limit?: number;
  readonly offset?: number;
}

/**
 * A page of GET /v0/runs: `before` (a cursor, a run id) starts after that run in the newest-first
 * list, so a run opened meanwhile does not shift the pages; `offset` then counts from there.
 */
export interface RunsPageRequest extends PageRequest {
  readonly before?: string;
}

/** A page of a run's events: `after_sequence` (a cursor) starts after that sequence number. */
export interface EventPageRequest extends PageRequest {
  readonly after_sequence?: number;
}
