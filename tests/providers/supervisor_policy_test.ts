/**
 * The supervisor's `policy` event (a reload replaced the restart policy in place): a restart
 * pending in backoff that the new policy no longer allows is cancelled (circuit open); every
 * other phase keeps its state, and the next failure is judged by the new policy.
 */
import assert from "node:assert/strict";
import type { RestartPolicyConfig } from "../../src/config/mod.ts";
import {
  INITIAL_SUPERVISOR_STATE,
  supervise,
  type SupervisorState,
} from "../../src/providers/mod.ts";

const POLICY: RestartPolicyConfig = {
  enabled: true,
  maxAttempts: 3,
  backoffMs: [100, 1000, 5000],
  timeoutMs: 30000,
  successResetMs: 1000,
};

const S = (over: Partial<SupervisorState>): SupervisorState => ({
  ...INITIAL_SUPERVISOR_STATE,
  ...over,
});

const BACKOFF2 = S({ phase: "BACKOFF", attemptCount: 2, crashDetected: true, restartDueAt: 500 });

const ROWS: {
  name: string;
  from: SupervisorState;
  policy: RestartPolicyConfig;
  to: Partial<SupervisorState> | "unchanged";
}[] = [
  {
    name: "BACKOFF, policy disabled: the pending restart is cancelled",
    from: BACKOFF2,
    policy: { ...POLICY, enabled: false },
    to: { phase: "CIRCUIT_OPEN", attemptCount: 2, restartDueAt: null, crashDetected: true },
  },
  {
    name: "BACKOFF, max_attempts one below the attempt due: circuit open",
    from: BACKOFF2,
    policy: { ...POLICY, maxAttempts: 1, backoffMs: [100] },
    to: { phase: "CIRCUIT_OPEN", attemptCount: 2, restartDueAt: null },
  },
  {
    name: "BACKOFF, max_attempts exactly the attempt due: it stays pending, due time kept",
    from: BACKOFF2,
    policy: { ...POLICY, maxAttempts: 2, backoffMs: [1, 1] },
    to: "unchanged",
  },
  {
    name: "UP, policy disabled: nothing happens until the next failure",
    from: S({ phase: "UP", upSince: 0, attemptCount: 1 }),
    policy: { ...POLICY, enabled: false },
    to: "unchanged",
  },
  {
    name: "ATTEMPTING, policy disabled: the attempt runs out",
    from: S({ phase: "ATTEMPTING", attemptCount: 1, crashDetected: true }),
    policy: { ...POLICY, enabled: false },
    to: "unchanged",
  },
  {
    name: "CIRCUIT_OPEN, policy enabled again: stays open",
    from: S({ phase: "CIRCUIT_OPEN", attemptCount: 4, crashDetected: true }),
    policy: { ...POLICY, maxAttempts: 10, backoffMs: Array(10).fill(100) },
    to: "unchanged",
  },
];

for (const row of ROWS) {
  Deno.test(`supervise policy: ${row.name}`, () => {
    const after = supervise(row.from, { type: "policy" }, row.policy);
    if (row.to === "unchanged") assert.equal(after, row.from);
    else assert.deepEqual(after, { ...row.from, ...row.to });
  });
}

Deno.test("supervise: after a policy change in UP the next failure is judged by the new policy", () => {
  const up = S({ phase: "UP", upSince: 0, attemptCount: 1 });
  const lowered = { ...POLICY, maxAttempts: 1, backoffMs: [100] };
  assert.equal(supervise(up, { type: "failed", at: 10 }, POLICY).phase, "BACKOFF");
  assert.equal(supervise(up, { type: "failed", at: 10 }, lowered).phase, "CIRCUIT_OPEN");
});
