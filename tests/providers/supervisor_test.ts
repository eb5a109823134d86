import assert from "node:assert/strict";
import type { RestartPolicyConfig } from "../../src/config/mod.ts";
import {
  backoffFor,
  INITIAL_SUPERVISOR_STATE,
  isAvailable,
  lifecycleOf,
  supervise,
  supervisionView,
  type SupervisorEvent,
  type SupervisorPhase,
  type SupervisorState,
} from "../../src/providers/mod.ts";

const POLICY: RestartPolicyConfig = {
  enabled: true,
  maxAttempts: 3,
  backoffMs: [100, 1000, 5000],
  timeoutMs: 30000,
  successResetMs: 1000,
};
const DISABLED: RestartPolicyConfig = { ...POLICY, enabled: false };

const S = (over: Partial<SupervisorState>): SupervisorState => ({
  ...INITIAL_SUPERVISOR_STATE,
  ...over,
});

interface Row {
  name: string;
  from: SupervisorState;
  event: SupervisorEvent;
  policy?: RestartPolicyConfig;
  /** Expected fields; "unchanged" = the very state passed in (the host skips unchanged states). */
  to: Partial<SupervisorState> | "unchanged";
  lifecycle: string;
}

const UP0 = S({ phase: "UP", upSince: 0 });
const ROWS: Row[] = [
  {
    name: "initial start succeeds",
    from: INITIAL_SUPERVISOR_STATE,
    event: { type: "up", at: 5 },
    to: { phase: "UP", upSince: 5, attemptCount: 0, crashDetected: false },
    lifecycle: "RUNNING",
  },
  {
    name: "time passing during initial start changes nothing",
    from: INITIAL_SUPERVISOR_STATE,
    event: { type: "tick", at: 60_000 },
    to: "unchanged",
    lifecycle: "DOWN",
  },
  {
    name: "crash while running schedules restart 1 after backoff_ms[0]",
    from: UP0,
    event: { type: "failed", at: 1000 },
    to: { phase: "BACKOFF", attemptCount: 1, crashDetected: true, restartDueAt: 1100 },
    lifecycle: "RESTARTING",
  },
  {
    name: "crash with restart disabled opens the circuit at once",
    from: UP0,
    event: { type: "failed", at: 1000 },
    policy: DISABLED,
    to: { phase: "CIRCUIT_OPEN", attemptCount: 0, crashDetected: true },
    lifecycle: "CIRCUIT_OPEN",
  },
  {
    name: "backoff not yet elapsed: attempt is ignored",
    from: S({ phase: "BACKOFF", attemptCount: 1, crashDetected: true, restartDueAt: 1100 }),
    event: { type: "attempt", at: 1050 },
    to: { phase: "BACKOFF", restartDueAt: 1100 },
    lifecycle: "RESTARTING",
  },
  {
    name: "backoff elapsed: attempt begins",
    from: S({ phase: "BACKOFF", attemptCount: 1, crashDetected: true, restartDueAt: 1100 }),
    event: { type: "attempt", at: 1100 },
    to: { phase: "ATTEMPTING", restartDueAt: null },
    lifecycle: "RESTARTING",
  },
  {
    name: "successful attempt: recovering with the streak kept",
    from: S({ phase: "ATTEMPTING", attemptCount: 1, crashDetected: true }),
    event: { type: "up", at: 1200 },
    to: { phase: "UP", attemptCount: 1, crashDetected: false, upSince: 1200 },
    lifecycle: "RECOVERING",
  },
  {
    name: "failed attempt 1 schedules attempt 2 after backoff_ms[1]",
    from: S({ phase: "ATTEMPTING", attemptCount: 1, crashDetected: true }),
    event: { type: "attempt_failed", at: 2000 },
    to: { phase: "BACKOFF", attemptCount: 2, restartDueAt: 3000 },
    lifecycle: "RESTARTING",
  },
  {
    name: "failed attempt max_attempts opens the circuit",
    from: S({ phase: "ATTEMPTING", attemptCount: 3, crashDetected: true }),
    event: { type: "attempt_failed", at: 9000 },
    to: { phase: "CIRCUIT_OPEN", attemptCount: 4, crashDetected: true, restartDueAt: null },
    lifecycle: "CIRCUIT_OPEN",
  },
  {
    name: "the restarted process failing before it is up counts as a failed attempt",
    from: S({ phase: "ATTEMPTING", attemptCount: 1, crashDetected: true }),
    event: { type: "failed", at: 2000 },
    to: { phase: "BACKOFF", attemptCount: 2, restartDueAt: 3000 },
    lifecycle: "RESTARTING",
  },
  {
    name: "time passing during an attempt changes nothing",
    from: S({ phase: "ATTEMPTING", attemptCount: 1, crashDetected: true }),
    event: { type: "tick", at: 60_000 },
    to: "unchanged",
    lifecycle: "RESTARTING",
  },
  {
    name: "backoff elapsed: time passing alone does not start the attempt",
    from: S({ phase: "BACKOFF", attemptCount: 1, crashDetected: true, restartDueAt: 1100 }),
    event: { type: "tick", at: 5000 },
    to: "unchanged",
    lifecycle: "RESTARTING",
  },
  {
    name: "recovering provider crashing again continues the streak",
    from: S({ phase: "UP", attemptCount: 2, upSince: 100 }),
    event: { type: "failed", at: 500 },
    to: { phase: "BACKOFF", attemptCount: 3, restartDueAt: 5500 },
    lifecycle: "RESTARTING",
  },
  {
    name: "healthy for success_reset_ms resets the streak",
    from: S({ phase: "UP", attemptCount: 2, upSince: 100 }),
    event: { type: "tick", at: 1100 },
    to: { phase: "UP", attemptCount: 0 },
    lifecycle: "RUNNING",
  },
  {
    name: "healthy for less than success_reset_ms keeps the streak",
    from: S({ phase: "UP", attemptCount: 2, upSince: 100 }),
    event: { type: "tick", at: 1099 },
    to: "unchanged",
    lifecycle: "RECOVERING",
  },
  {
    name: "a late tick without a streak leaves the state as it is",
    from: UP0,
    event: { type: "tick", at: 60_000 },
    to: "unchanged",
    lifecycle: "RUNNING",
  },
  {
    name: "only time passing resets the streak, not a stray up",
    from: S({ phase: "UP", attemptCount: 2, upSince: 100 }),
    event: { type: "up", at: 60_000 },
    to: "unchanged",
    lifecycle: "RECOVERING",
  },
  {
    name: "an open circuit never closes by itself",
    from: S({ phase: "CIRCUIT_OPEN", attemptCount: 4, crashDetected: true }),
    event: { type: "up", at: 1 },
    to: "unchanged",
    lifecycle: "CIRCUIT_OPEN",
  },
  {
    name: "an open circuit retried (a reload): a restart attempt begins, the streak reset",
    from: S({ phase: "CIRCUIT_OPEN", attemptCount: 4, crashDetected: true }),
    event: { type: "retry" },
    to: { phase: "ATTEMPTING", attemptCount: 0, crashDetected: true, restartDueAt: null },
    lifecycle: "RESTARTING",
  },
  {
    name: "a retry that fails is the first failure of a new streak",
    from: S({ phase: "ATTEMPTING", attemptCount: 0, crashDetected: true }),
    event: { type: "attempt_failed", at: 2000 },
    to: { phase: "BACKOFF", attemptCount: 1, restartDueAt: 2100 },
    lifecycle: "RESTARTING",
  },
  {
    name: "a retry that comes up is RUNNING (no streak)",
    from: S({ phase: "ATTEMPTING", attemptCount: 0, crashDetected: true }),
    event: { type: "up", at: 2000 },
    to: { phase: "UP", attemptCount: 0, crashDetected: false, upSince: 2000 },
    lifecycle: "RUNNING",
  },
  {
    name: "retry does nothing unless the circuit is open",
    from: S({ phase: "BACKOFF", attemptCount: 1, crashDetected: true, restartDueAt: 1100 }),
    event: { type: "retry" },
    to: "unchanged",
    lifecycle: "RESTARTING",
  },
  {
    name: "a stopped provider stays stopped",
    from: S({ phase: "STOPPED" }),
    event: { type: "up", at: 1 },
    to: "unchanged",
    lifecycle: "DOWN",
  },
  {
    name: "stop from any phase",
    from: S({ phase: "BACKOFF", attemptCount: 1, restartDueAt: 50 }),
    event: { type: "stop" },
    to: { phase: "STOPPED", restartDueAt: null },
    lifecycle: "RESTARTING",
  },
  {
    name: "a failure during initial start counts as a crash",
    from: INITIAL_SUPERVISOR_STATE,
    event: { type: "failed", at: 10 },
    to: { phase: "BACKOFF", attemptCount: 1, restartDueAt: 110 },
    lifecycle: "RESTARTING",
  },
];

for (const row of ROWS) {
  Deno.test(`supervise: ${row.name}`, () => {
    const next = supervise(row.from, row.event, row.policy ?? POLICY);
    if (row.to === "unchanged") assert.equal(next, row.from);
    else {
      for (const [k, v] of Object.entries(row.to)) {
        assert.equal(next[k as keyof SupervisorState], v, `${k}`);
      }
    }
    assert.equal(lifecycleOf(next), row.lifecycle);
  });
}

Deno.test("supervise walks the worked example to an open circuit after max_attempts restarts", () => {
  let s = supervise(INITIAL_SUPERVISOR_STATE, { type: "up", at: 0 }, POLICY);
  const waits: number[] = [];
  s = supervise(s, { type: "failed", at: 0 }, POLICY);
  // Bounded: a circuit that never opens fails the assertions below instead of hanging.
  for (let i = 0; i <= POLICY.maxAttempts + 1 && s.phase === "BACKOFF"; i++) {
    waits.push(s.restartDueAt!);
    s = supervise(s, { type: "attempt", at: s.restartDueAt! }, POLICY);
    s = supervise(s, { type: "attempt_failed", at: waits.at(-1)! }, POLICY);
  }
  assert.deepEqual(waits, [100, 1100, 6100]);
  assert.equal(s.phase, "CIRCUIT_OPEN");
  assert.equal(lifecycleOf(s), "CIRCUIT_OPEN");
});

Deno.test("backoffFor clamps to the last entry", () => {
  assert.equal(backoffFor(POLICY, 1), 100);
  assert.equal(backoffFor(POLICY, 3), 5000);
  assert.equal(backoffFor(POLICY, 7), 5000);
  assert.equal(backoffFor({ ...POLICY, backoffMs: [] }, 1), 0, "no list: restart at once");
});

Deno.test("isAvailable: a provider serves only while UP", () => {
  const phases: SupervisorPhase[] = [
    "STARTING",
    "UP",
    "BACKOFF",
    "ATTEMPTING",
    "CIRCUIT_OPEN",
    "STOPPED",
  ];
  assert.deepEqual(phases.filter((phase) => isAvailable(S({ phase }))), ["UP"]);
});

Deno.test("supervisionView reports next_restart_in_ms only while waiting", () => {
  const waiting = S({ phase: "BACKOFF", attemptCount: 1, crashDetected: true, restartDueAt: 500 });
  assert.deepEqual(supervisionView(waiting, POLICY, 200), {
    enabled: true,
    attempt_count: 1,
    max_attempts: 3,
    crash_detected: true,
    circuit_open: false,
    next_restart_in_ms: 300,
  });
  assert.equal(supervisionView(UP0, POLICY, 200).next_restart_in_ms, null);
  const open = S({ phase: "CIRCUIT_OPEN", attemptCount: 4 });
  assert.equal(supervisionView(open, POLICY, 0).circuit_open, true);
  assert.equal(supervisionView(open, POLICY, 0).next_restart_in_ms, null);
  assert.equal(supervisionView(UP0, DISABLED, 0).max_attempts, 0);
  const attempting = S({ phase: "ATTEMPTING", attemptCount: 1, crashDetected: true });
  assert.equal(supervisionView(attempting, POLICY, 0).next_restart_in_ms, 0);
  // Past due (the timer fires late): 0, never negative.
  assert.equal(supervisionView(waiting, POLICY, 900).next_restart_in_ms, 0);
  assert.deepEqual(supervisionView(INITIAL_SUPERVISOR_STATE, POLICY, 0), {
    enabled: true,
    attempt_count: 0,
    max_attempts: 3,
    crash_detected: false,
    circuit_open: false,
    next_restart_in_ms: null,
  });
});
