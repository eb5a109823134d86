/**
 * The mutation-testing scopes (which source files, which tests) and the report: per-file scores
 * from StrykerJS JSON reports, survivors, and equivalent mutants excluded with their reasons.
 */

/** Source files mutated together and the tests run against every one of their mutants. */
export interface MutationScope {
  readonly name: string;
  readonly files: readonly string[];
  readonly tests: readonly string[];
  /**
   * Added to the scope's own test time before a mutant counts as timed out (an endless loop):
   * small for unit tests, larger where the tests drive real processes.
   */
  readonly timeoutMs: number;
  /**
   * Names (substrings) of tests left out of mutant runs: tests that measure the code's memory or
   * time rather than its behaviour, which Stryker's instrumentation changes.
   */
  readonly skipTests?: readonly string[];
}

const SKIP_PRELOAD = new URL("./mutant_skip_preload.ts", import.meta.url).pathname;

/**
 * What a mutant's `deno test` needs to leave out a scope's skipTests: a preload that registers
 * them as ignored, and the names in its environment (none: nothing).
 */
export function skipArgs(
  scope: Pick<MutationScope, "skipTests">,
): { args: string[]; env: Record<string, string> } {
  const names = scope.skipTests ?? [];
  if (names.length === 0) return { args: [], env: {} };
  return {
    args: ["--preload", SKIP_PRELOAD],
    env: { MUTATE_SKIP_TESTS: JSON.stringify(names) },
  };
}

/** Extra time for a mutant of a scope whose tests are unit tests. */
const UNIT_TIMEOUT_MS = 5_000;
/** Extra time for a mutant of a scope whose tests start provider processes. */
const PROCESS_TIMEOUT_MS = 30_000;

/**
 * The scope of mutation testing: safety, control, auth/CORS/request policy, supervision and
 * liveness, quality and liveness health, config bounds, typed values. Tests are the files that
 * exercise the code, unit tests first, then the scenarios that drive real processes.
 */
export const MUTATION_SCOPES: readonly MutationScope[] = [
  {
    name: "common",
    files: ["src/common/typed_value.ts"],
    tests: [
      "tests/common/",
      "tests/http/pieces_test.ts",
      "tests/adpp/codec_test.ts",
      "tests/control/validate_args_test.ts",
    ],
    timeoutMs: UNIT_TIMEOUT_MS,
  },
  {
    name: "safety-plan",
    files: ["src/safety/safe_state.ts"],
    tests: ["tests/safety/safe_state_test.ts"],
    timeoutMs: UNIT_TIMEOUT_MS,
  },
  {
    name: "safety-estop",
    files: ["src/safety/estop.ts", "src/safety/verify.ts"],
    tests: [
      "tests/safety/",
      "tests/scenarios/estop_hooks_test.ts",
      "tests/scenarios/estop_zero_test.ts",
      "tests/scenarios/estop_none_test.ts",
      "tests/scenarios/estop_setpoints_test.ts",
      "tests/scenarios/estop_fault_test.ts",
      "tests/scenarios/estop_verify_test.ts",
      "tests/scenarios/estop_drain_test.ts",
      "tests/scenarios/estop_fanout_test.ts",
      "tests/scenarios/estop_provider_down_test.ts",
      "tests/scenarios/estop_reset_test.ts",
      "tests/scenarios/estop_concurrency_test.ts",
      "tests/scenarios/estop_status_device_lost_test.ts",
      "tests/scenarios/audit_origins_test.ts",
      "tests/scenarios/audit_alarms_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "control-modes",
    files: ["src/control/mode_manager.ts"],
    tests: [
      "tests/control/mode_manager_test.ts",
      "tests/control/mode_auto_gate_test.ts",
      "tests/control/mode_hooks_test.ts",
      "tests/control/mode_superseded_after_hooks_test.ts",
      // faultEntries and idleEntries: the router's stop counts (a call queued across FAULT or IDLE
      // and a re-arm is refused at its turn).
      "tests/control/call_router_stop_epoch_test.ts",
      // noteCallFailed: a hook call into FAULT answered UNAVAILABLE makes it again at the
      // device's next answered poll.
      "tests/safety/estop_call_unavailable_return_test.ts",
      "tests/scenarios/mode_fault_hooks_test.ts",
      "tests/scenarios/mode_auto_gate_restart_test.ts",
      "tests/scenarios/estop_reset_test.ts",
      // allowedModesGate: a provider's declared allowed_modes, refused and audited as such; the
      // e-stop's ladder (origin safety) passes it.
      "tests/scenarios/provider_policies_test.ts",
      "tests/scenarios/automation_gating_test.ts",
      "tests/scenarios/audit_origins_test.ts",
      "tests/scenarios/audit_alarms_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "control-args",
    files: [
      "src/control/declared_calls.ts",
      "src/control/validate_args.ts",
      "src/control/parameters.ts",
    ],
    tests: [
      "tests/control/validate_args_test.ts",
      "tests/control/parameters_test.ts",
      "tests/control/parameters_reload_audit_test.ts",
      "tests/control/declared_calls_test.ts",
      "tests/control/declared_calls_sim_test.ts",
      "tests/scenarios/audit_origins_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "control-router",
    files: ["src/control/call_router.ts"],
    tests: [
      "tests/control/call_router_test.ts",
      "tests/control/call_router_audit_test.ts",
      "tests/http/metrics_test.ts",
      "tests/scenarios/kernel_calls_test.ts",
      "tests/scenarios/estop_drain_test.ts",
      "tests/scenarios/estop_concurrency_test.ts",
      "tests/http/call_deadline_test.ts",
      "tests/scenarios/audit_origins_test.ts",
      "tests/scenarios/audit_alarms_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "http-policy",
    files: ["src/http/cors.ts", "src/http/request_policy.ts"],
    tests: [
      "tests/http/auth_cors_test.ts",
      "tests/http/request_policy_test.ts",
      "tests/http/request_policy_rules_test.ts",
      "tests/http/pieces_test.ts",
      "tests/http/roles_test.ts",
    ],
    timeoutMs: UNIT_TIMEOUT_MS,
  },
  {
    // The bind/auth gate: who may connect (a non-loopback bind is refused without auth, at
    // config check and again at bind) and who a request acts as (bearer token, loopback exemption).
    name: "http-auth",
    files: [
      "src/http/auth.ts",
      "src/common/loopback.ts",
      "src/host/serve.ts:169-173", // the gate in serveHttp
    ],
    tests: [
      "tests/http/bind_auth_test.ts",
      "tests/common/loopback_test.ts",
      "tests/http/auth_token_bytes_test.ts",
      "tests/http/auth_cors_test.ts",
      "tests/http/pieces_test.ts",
      "tests/http/roles_test.ts",
      "tests/http/serve_test.ts",
      "tests/config/rules_test.ts",
    ],
    timeoutMs: UNIT_TIMEOUT_MS,
  },
  {
    name: "providers-supervision",
    files: ["src/providers/supervisor.ts"],
    tests: ["tests/providers/supervisor_test.ts", "tests/providers/supervisor_policy_test.ts"],
    timeoutMs: UNIT_TIMEOUT_MS,
  },
  {
    name: "providers-host",
    files: [
      "src/providers/provider_host.ts",
      "src/providers/provider_session.ts",
      "src/providers/registry.ts",
    ],
    tests: [
      "tests/providers/",
      "tests/scenarios/kernel_supervision_test.ts",
      "tests/scenarios/kernel_discovery_test.ts",
      "tests/scenarios/provider_data_discovery_test.ts",
      // ProviderRegistry.reconcile: a reload adding, restarting, holding and removing providers.
      "tests/app/kernel_reload_test.ts",
      "tests/scenarios/config_reload_test.ts",
      // ProviderRegistry.plan and ProviderHost.updateInPlace: a change applied in place.
      "tests/app/kernel_reload_provider_in_place_test.ts",
      // ProviderHost.counts(): runtime_provider_failures_total and _restarts_total.
      "tests/http/metrics_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "state-health",
    files: ["src/state/health.ts"],
    tests: ["tests/state/"],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "state-cache",
    files: ["src/state/state_cache.ts"],
    tests: [
      "tests/state/state_cache_test.ts",
      // Rediscovery and removal: departed signals' bounds, told-OK marks, 'removed' notices.
      "tests/state/departed_signals_bound_test.ts",
      "tests/scenarios/sse_relisted_device_quality_test.ts",
      "tests/state/device_polled_test.ts",
      "tests/state/poll_loop_test.ts",
      "tests/state/poll_metrics_test.ts",
      "tests/providers/provider_liveness_test.ts",
      "tests/providers/provider_discovery_test.ts",
      "tests/scenarios/provider_data_types_test.ts",
      "tests/scenarios/provider_data_missing_value_test.ts",
      "tests/scenarios/provider_data_undeclared_test.ts",
      "tests/scenarios/provider_data_integers_test.ts",
      "tests/scenarios/provider_data_poll_overlap_test.ts",
      "tests/scenarios/kernel_calls_test.ts",
      "tests/scenarios/kernel_supervision_test.ts",
      // Staleness and liveness bounds, poll periods (setStaleness, setIntervalMs, qualityNow).
      "tests/state/health_test.ts",
      "tests/state/poll_period_test.ts",
      "tests/state/provider_health_test.ts",
      "tests/scenarios/poll_hints_test.ts",
      // readFresh: the e-stop's read-back; timestampSkew: a provider clock ahead.
      "tests/safety/verify_test.ts",
      // A read-back its provider answered with an error: the device's next answer is a return.
      "tests/scenarios/estop_device_return_test.ts",
      // So is one that got no answer within its provider's whole timeout_ms (not one cut shorter).
      "tests/state/fresh_read_unanswered_test.ts",
      "tests/scenarios/alarms_clock_skew_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    // The device-loss latch: a device lost (provider down, left the inventory, or reads failing
    // while its provider stays up) is latched against automation until AUTO is entered again.
    name: "automation-device-loss",
    files: ["src/automation/device_loss_latch.ts", "src/state/device_outage.ts"],
    tests: [
      "tests/state/device_outage_test.ts",
      // A device only the e-stop found not answering (noteCallFailed, a failed read-back): its
      // next answered poll is a return.
      "tests/safety/estop_call_unavailable_return_test.ts",
      // callUnanswered: a call that timed out, or answered DEADLINE_EXCEEDED, is one too.
      "tests/safety/estop_call_timed_out_return_test.ts",
      "tests/scenarios/estop_device_return_test.ts",
      "tests/automation/device_loss_latch_test.ts",
      "tests/automation/automation_engine_test.ts",
      "tests/scenarios/device_dropout_test.ts",
      "tests/scenarios/automation_device_loss_test.ts",
      "tests/scenarios/automation_http_test.ts",
      // The reason of a device down follows its provider's circuit opening (onDownLifecycle).
      "tests/scenarios/mode_auto_circuit_open_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    // Interlocks and the call gate they put on the router: the condition's evaluation, its
    // inputs, and the engine's gate and interlock evaluation (the rest of the engine: "alarms").
    name: "alarms-interlocks",
    files: [
      "src/alarms/interlock.ts",
      "src/alarms/signal_input.ts",
      // Line ranges: tests/scripts/mutation_report_test.ts checks they still hold these.
      "src/alarms/alarm_engine.ts:647-695", // gate
      "src/alarms/alarm_engine.ts:867-910", // #evaluateInterlock, #tellTransition
    ],
    skipTests: ["allocates nothing"],
    tests: [
      "tests/alarms/",
      "tests/scenarios/alarms_stale_interlock_test.ts",
      "tests/scenarios/alarms_provider_down_test.ts",
      "tests/scenarios/alarms_http_test.ts",
    ],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    // Alarm limits, states and actions. About 900 of Stryker's mutants, each running
    // alarm_engine_test.ts (10 s): a run of two hours or more on 2 cores.
    name: "alarms",
    files: [
      "src/alarms/alarm_monitor.ts",
      "src/alarms/alarm_engine.ts:1-646",
      "src/alarms/alarm_engine.ts:696-866",
      "src/alarms/alarm_engine.ts:911-1314",
    ],
    tests: [
      "tests/alarms/",
      "tests/scenarios/alarms_stale_interlock_test.ts",
      "tests/scenarios/alarms_provider_down_test.ts",
      "tests/scenarios/alarms_limits_test.ts",
      "tests/scenarios/alarms_clock_skew_test.ts",
      "tests/scenarios/alarms_estop_test.ts",
      "tests/scenarios/alarms_http_test.ts",
      "tests/scenarios/alarms_example_test.ts",
      // Not audit_alarms_test.ts: on a loaded machine its alarm's e-stop can reach the audit
      // trail before the test reads it (2 entries, not 1), which fails Stryker's initial run.
    ],
    skipTests: ["allocates nothing"],
    timeoutMs: PROCESS_TIMEOUT_MS,
  },
  {
    name: "config-semantic",
    files: ["src/config/_semantic.ts"],
    // Not structure_validator_test.ts: Stryker's sandbox prefixes src/ .ts files with
    // `// @ts-nocheck`, so the committed generated validator's declaration file
    // (_structure_validator.d.ts) never equals a fresh generation there.
    tests: [
      "tests/config/linear_check_test.ts",
      "tests/config/loader_test.ts",
      "tests/config/messages_test.ts",
      "tests/config/rules_test.ts",
      "tests/config/safety_expect_test.ts",
      "tests/config/schema_test.ts",
      "tests/config/secrets_test.ts",
      "tests/config/utf8_test.ts",
      "tests/config/values_test.ts",
      "tests/config/tokens_test.ts",
    ],
    timeoutMs: UNIT_TIMEOUT_MS,
  },
];

/** A scope entry `path` or `path:FROM-TO` (Stryker's line-range syntax): the path and line range. */
export function parseScopeFile(entry: string): { path: string; from: number; to: number } {
  const m = /^(.*):(\d+)-(\d+)$/.exec(entry);
  return m === null
    ? { path: entry, from: 1, to: Number.POSITIVE_INFINITY }
    : { path: m[1]!, from: Number(m[2]), to: Number(m[3]) };
}

/** The parts of a StrykerJS JSON report (mutation-testing-report-schema) this reads. */
export interface StrykerReport {
  readonly files: Record<string, {
    readonly source: string;
    readonly mutants: readonly StrykerMutant[];
  }>;
}

export interface StrykerMutant {
  readonly id: string;
  readonly mutatorName: string;
  readonly replacement?: string;
  readonly status: string;
  readonly location: {
    readonly start: { readonly line: number; readonly column: number };
    readonly end: { readonly line: number; readonly column: number };
  };
}

/**
 * A mutant that cannot change behaviour (tools/mutation/equivalent.json): matched by file,
 * mutator, the original source text and the replacement, so it survives line shifts.
 */
export interface EquivalentMutant {
  readonly file: string;
  readonly mutator: string;
  readonly original: string;
  readonly replacement: string;
  readonly reason: string;
}

/** One surviving (or uncovered) mutant as the report lists it. */
export interface Survivor {
  readonly line: number;
  readonly mutator: string;
  readonly original: string;
  readonly replacement: string;
  readonly status: string;
}

/**
 * Whose mutants a row counts: Stryker's, or the project's own operators'
 * (scripts/mutation_extra.ts; the report writes "(ours)").
 */
export type MutantKind = "stryker" | "ours";

/** The project's own operators (scripts/mutation_extra.ts generates them). */
export const EXTRA_OPERATORS = [
  "CompoundAssignment",
  "SwitchCase",
  "CatchFailOpen",
  "AwaitDropped",
  "ConcurrentCall",
] as const;

export interface FileSummary {
  readonly scope: string;
  readonly file: string;
  readonly kind: MutantKind;
  readonly total: number;
  readonly killed: number;
  readonly timeout: number;
  readonly survived: number;
  readonly noCoverage: number;
  readonly equivalent: number;
  readonly errors: number;
  /** (killed + timeout) / (killed + timeout + survived + no coverage), in %. */
  readonly score: number;
  /** The file's source differs from the one the run mutated: the score is not of today's code. */
  readonly changedSinceRun: boolean;
  readonly survivors: readonly Survivor[];
  readonly equivalents: ReadonlyArray<Survivor & { readonly reason: string }>;
  /**
   * The row as the committed report had it (its run is not on this machine): the commit that
   * report was of, and its survivor and equivalent lines as written there.
   */
  readonly carried?: {
    readonly commit: string;
    readonly survivorLines: readonly string[];
    readonly equivalentLines: readonly string[];
  };
}

export interface MutationSummary {
  readonly files: readonly FileSummary[];
  /** Earliest and latest run time of the scopes included. */
  readonly from: Date | null;
  readonly to: Date | null;
}

/** The source text a mutant replaces (mutation-testing-report-schema: 1-based line and column). */
export function originalText(source: string, m: StrykerMutant): string {
  const lines = source.split("\n");
  const { start, end } = m.location;
  const from = start.column - 1;
  const to = end.column - 1;
  if (start.line === end.line) return lines[start.line - 1]!.slice(from, to);
  const parts = [lines[start.line - 1]!.slice(from)];
  for (let l = start.line; l < end.line - 1; l++) parts.push(lines[l]!);
  parts.push(lines[end.line - 1]!.slice(0, to));
  return parts.join("\n");
}

/**
 * Per-file counts and survivors over every scope's reports: a row per scope, file and kind (a
 * scope's Stryker report, and the report of the project's own operators); each mutant's original
 * text is read from the source of the run that made it.
 */
export function summarize(
  reports: ReadonlyArray<{ scope: string; report: StrykerReport; at: Date; kind?: MutantKind }>,
  equivalents: readonly EquivalentMutant[],
  /** Today's source of each file (absent: not compared). */
  current: ReadonlyMap<string, string> = new Map(),
): MutationSummary {
  const files: FileSummary[] = [];
  let from: Date | null = null;
  let to: Date | null = null;
  for (const { scope, report, at, kind = "stryker" } of reports) {
    if (from === null || at < from) from = at;
    if (to === null || at > to) to = at;
    for (const [file, { source, mutants }] of Object.entries(report.files)) {
      // A file our operators find nothing to change in has no row of ours.
      if (kind === "ours" && mutants.length === 0) continue;
      const counts = { killed: 0, timeout: 0, survived: 0, noCoverage: 0, errors: 0 };
      const survivors: Survivor[] = [];
      const equivalent: Array<Survivor & { reason: string }> = [];
      for (const m of mutants) {
        const entry: Survivor = {
          line: m.location.start.line,
          mutator: m.mutatorName,
          original: originalText(source, m),
          replacement: m.replacement ?? "",
          status: m.status,
        };
        if (m.status === "Killed") counts.killed++;
        else if (m.status === "Timeout") counts.timeout++;
        else if (m.status === "Survived" || m.status === "NoCoverage") {
          const eq = equivalents.find((e) =>
            e.file === file && e.mutator === entry.mutator && e.original === entry.original &&
            e.replacement === entry.replacement
          );
          if (eq) equivalent.push({ ...entry, reason: eq.reason });
          else {
            survivors.push(entry);
            if (m.status === "Survived") counts.survived++;
            else counts.noCoverage++;
          }
        } else if (m.status === "CompileError" || m.status === "RuntimeError") counts.errors++;
      }
      const detected = counts.killed + counts.timeout;
      const considered = detected + counts.survived + counts.noCoverage;
      const byLine = (a: Survivor, b: Survivor) => a.line - b.line;
      files.push({
        scope,
        file,
        kind,
        total: mutants.length,
        ...counts,
        equivalent: equivalent.length,
        score: considered === 0 ? 100 : (100 * detected) / considered,
        changedSinceRun: current.has(file) && current.get(file) !== source,
        survivors: survivors.sort(byLine),
        equivalents: equivalent.sort(byLine),
      });
    }
  }
  return { files, from, to };
}

/** A row of a previous report, with its survivor and equivalent lines as written. */
export interface PreviousRow {
  readonly scope: string;
  readonly file: string;
  readonly kind: MutantKind;
  readonly total: number;
  readonly killed: number;
  readonly timeout: number;
  readonly survived: number;
  readonly noCoverage: number;
  readonly equivalent: number;
  readonly errors: number;
  /** Marked † there: the source had changed since that run. */
  readonly stale: boolean;
  readonly survivorLines: readonly string[];
  readonly equivalentLines: readonly string[];
}

const OURS = " (ours)";
const isOurs = (mutator: string) => (EXTRA_OPERATORS as readonly string[]).includes(mutator);

/**
 * The rows of a committed docs/mutation-report.md and the commit it was of. A scope whose run
 * of one kind is not on this machine (tools/mutation/reports is not committed) keeps that kind's
 * rows from here instead of leaving the report.
 */
export function parsePreviousReport(md: string): { commit: string; rows: PreviousRow[] } {
  const commit = /^Commit `([0-9a-f]+)`/m.exec(md)?.[1] ?? "unknown";
  const lines = md.split("\n");
  // Bullets as whole items (deno fmt wraps them with a two-space indent).
  const items = (from: number, to: number): string[] => {
    const out: string[] = [];
    for (let i = from; i < to; i++) {
      if (lines[i]!.startsWith("- ")) out.push(lines[i]!);
      else if (lines[i]!.startsWith("  ") && out.length > 0) out[out.length - 1] += "\n" + lines[i];
    }
    return out;
  };
  const key = (file: string, kind: MutantKind) => `${file}\0${kind}`;
  const heading = (re: RegExp) => lines.findIndex((l) => re.test(l));
  const survivorsAt = heading(/^## Survivors/);
  const equivalentAt = heading(/^## Equivalent mutants/);
  const survivorsOf = new Map<string, string[]>();
  if (survivorsAt >= 0) {
    const end = equivalentAt >= 0 ? equivalentAt : lines.length;
    for (let i = survivorsAt + 1; i < end; i++) {
      const m = /^### `(.+)`( \(ours\))?$/.exec(lines[i]!);
      if (m === null) continue;
      let j = i + 1;
      while (j < end && !lines[j]!.startsWith("### ")) j++;
      survivorsOf.set(key(m[1]!, m[2] ? "ours" : "stryker"), items(i + 1, j));
    }
  }
  const equivalentsOf = new Map<string, string[]>();
  if (equivalentAt >= 0) {
    for (const item of items(equivalentAt + 1, lines.length)) {
      const m = /^- `([^`]+)` line \d+, (\w+)/.exec(item);
      if (m === null) continue;
      const k = key(m[1]!, isOurs(m[2]!) ? "ours" : "stryker");
      equivalentsOf.set(k, [...equivalentsOf.get(k) ?? [], item]);
    }
  }
  const rows: PreviousRow[] = [];
  for (const l of lines) {
    const cells = l.split("|").map((c) => c.trim());
    const m = /^`(.+)`( \(ours\))?$/.exec(cells[2] ?? "");
    if (cells.length !== 12 || m === null || !/^\d+$/.test(cells[3]!)) continue;
    const file = m[1]!;
    const kind: MutantKind = m[2] ? "ours" : "stryker";
    const [total, killed, timeout, survived, noCoverage, equivalent, errors] = cells.slice(3, 10)
      .map(Number) as [number, number, number, number, number, number, number];
    rows.push({
      scope: cells[1]!,
      file,
      kind,
      total,
      killed,
      timeout,
      survived,
      noCoverage,
      equivalent,
      errors,
      stale: cells[10]!.includes("†"),
      survivorLines: survivorsOf.get(key(file!, kind)) ?? [],
      equivalentLines: equivalentsOf.get(key(file!, kind)) ?? [],
    });
  }
  return { commit, rows };
}

/**
 * Adds to the summary the previous report's rows of each scope and kind that did not run here
 * (`ran` holds `scope/kind`, or `scope/kind/file` for a run restricted to files), for files still in that scope, then orders the rows by scope, by
 * file as the scope lists them, Stryker's before ours.
 */
export function withCarried(
  s: MutationSummary,
  previous: { commit: string; rows: readonly PreviousRow[] },
  ran: ReadonlySet<string>,
  scopes: ReadonlyArray<Pick<MutationScope, "name" | "files">>,
): MutationSummary {
  const files = [...s.files];
  for (const p of previous.rows) {
    // `scope/kind` ran as a whole, or `scope/kind/file` ran (a run restricted to files).
    if (ran.has(`${p.scope}/${p.kind}`) || ran.has(`${p.scope}/${p.kind}/${p.file}`)) continue;
    // Only a file still in that scope (one that moved to another scope starts over there).
    const scope = scopes.find((x) => x.name === p.scope);
    if (!scope?.files.some((f) => parseScopeFile(f).path === p.file)) continue;
    const detected = p.killed + p.timeout;
    const considered = detected + p.survived + p.noCoverage;
    files.push({
      scope: p.scope,
      file: p.file,
      kind: p.kind,
      total: p.total,
      killed: p.killed,
      timeout: p.timeout,
      survived: p.survived,
      noCoverage: p.noCoverage,
      equivalent: p.equivalent,
      errors: p.errors,
      score: considered === 0 ? 100 : (100 * detected) / considered,
      changedSinceRun: p.stale,
      survivors: [],
      equivalents: [],
      carried: {
        commit: previous.commit,
        survivorLines: p.survivorLines,
        equivalentLines: p.equivalentLines,
      },
    });
  }
  const scopeRank = (f: FileSummary) => scopes.findIndex((x) => x.name === f.scope);
  const fileRank = (f: FileSummary) =>
    (scopes[scopeRank(f)]?.files ?? []).findIndex((e) => parseScopeFile(e).path === f.file);
  const kindRank = (f: FileSummary) => f.kind === "stryker" ? 0 : 1;
  files.sort((a, b) =>
    scopeRank(a) - scopeRank(b) || fileRank(a) - fileRank(b) || kindRank(a) - kindRank(b)
  );
  return { ...s, files };
}

/** The committed report: docs/mutation-report.md. */
export function renderReport(s: MutationSummary, o: { commit: string }): string {
  const day = (d: Date | null) => d === null ? "–" : d.toISOString().slice(0, 16).replace("T", " ");
  const lines = [
    "# Mutation testing report",
    "",
    "Generated by `deno task mutate` (StrykerJS, command runner running `deno test` on each",
    "scope's tests; scopes in `scripts/mutation_report.ts`; plus the operators Stryker lacks,",
    "`scripts/mutation_extra.ts`). How to read it: README, Development.",
    "",
    `Commit \`${o.commit}\`; scopes run ${day(s.from)} – ${day(s.to)} UTC.`,
    "",
    "Score = (killed + timed out) / (killed + timed out + survived + not covered); equivalent",
    "mutants (listed below with their reasons) and mutants that do not compile are excluded.",
    "",
    "A score marked † is of an older version of the file: the source changed after that run,",
    "so run its scope again before reading the score as today's.",
    "",
    "A row marked (ours) counts the operators Stryker lacks (`scripts/mutation_extra.ts`:",
    `${EXTRA_OPERATORS.join(", ")}).`,
    ...(s.files.some((f) => f.carried)
      ? [
        "",
        `A score marked ‡ is from the report of commit \`${
          s.files.find((f) => f.carried)!.carried!.commit
        }\`: that run was not repeated`,
        "since, and its survivor and equivalent lines are carried as written there.",
      ]
      : []),
    "",
    "| scope | file | mutants | killed | timeout | survived | no cov | equivalent | errors | score |",
    "|---|---|---|---|---|---|---|---|---|---|",
  ];
  for (const f of s.files) {
    lines.push(
      `| ${f.scope} | \`${f.file}\`${
        f.kind === "ours" ? OURS : ""
      } | ${f.total} | ${f.killed} | ${f.timeout} | ${f.survived} | ` +
        `${f.noCoverage} | ${f.equivalent} | ${f.errors} | ${f.score.toFixed(1)} %` +
        `${f.changedSinceRun ? " †" : ""}${f.carried ? " ‡" : ""} |`,
    );
  }
  lines.push("", "## Survivors", "");
  const carriedSurvivors = (f: FileSummary) => f.carried?.survivorLines ?? [];
  const any = s.files.some((f) => f.survivors.length + carriedSurvivors(f).length > 0);
  if (!any) lines.push("None.");
  for (const f of s.files) {
    if (f.survivors.length + carriedSurvivors(f).length === 0) continue;
    lines.push(`### \`${f.file}\`${f.kind === "ours" ? OURS : ""}`, "");
    lines.push(...carriedSurvivors(f));
    for (const m of f.survivors) {
      lines.push(
        `- line ${m.line}, ${m.mutator}${m.status === "NoCoverage" ? " (not covered)" : ""}: ` +
          `\`${oneLine(m.original)}\` → \`${oneLine(m.replacement)}\``,
      );
    }
    lines.push("");
  }
  lines.push("## Equivalent mutants (excluded)", "");
  const eq = s.files.flatMap((f) => f.equivalents.map((e) => ({ file: f.file, ...e })));
  const carriedEq = s.files.flatMap((f) => f.carried?.equivalentLines ?? []);
  if (eq.length + carriedEq.length === 0) lines.push("None.");
  lines.push(...carriedEq);
  for (const e of eq) {
    lines.push(
      `- \`${e.file}\` line ${e.line}, ${e.mutator}: \`${oneLine(e.original)}\` → ` +
        `\`${oneLine(e.replacement)}\` — ${e.reason}`,
    );
  }
  return lines.join("\n") + "\n";
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, " ").trim();
  return (flat.length > 100 ? `${flat.slice(0, 97)}...` : flat).replaceAll("`", "'");
}
