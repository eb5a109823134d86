/** Sizes of a run: the default profile (< 5 min per runtime) and --quick (< 1 min). */

/** Every count, window and rate a run uses. */
export interface Profile {
  readonly name: "default" | "quick";
  /** polling.interval_ms of every generated config. */
  readonly pollIntervalMs: number;
  /** Repetitions of the 1-provider API session (workloads 1, 2, 5 and RSS after start-up). */
  readonly apiReps: number;
  readonly warmupCalls: number;
  readonly sequentialCalls: number;
  readonly concurrentClients: number;
  readonly concurrentWindowMs: number;
  readonly readWindowMs: number;
  /** Provider counts of workload 3, one session each. */
  readonly scaleProviders: readonly number[];
  /** Wait after start-up before a measuring window (start-up JIT and first polls settle). */
  readonly settleMs: number;
  readonly scaleWindowMs: number;
  /** Workload 4 runs in the session with this many providers. */
  readonly fanoutProviders: number;
  readonly fanoutClients: number;
  readonly fanoutWindowMs: number;
  readonly probeIntervalMs: number;
  /** Workload 6 runs in the session with this many providers. */
  readonly estopProviders: number;
  readonly estopReps: number;
  readonly checkConfigReps: number;
  /** Workload 7 soak (only with --soak). */
  readonly soakProviders: number;
  readonly soakWindowMs: number;
  readonly soakSampleMs: number;
  /** Workload 8: behavior-tree tick rate configured, and the measuring window. */
  readonly btTickRateHz: number;
  readonly btWindowMs: number;
}

/** The default run. */
export const DEFAULT_PROFILE: Profile = {
  name: "default",
  pollIntervalMs: 100,
  apiReps: 3,
  warmupCalls: 50,
  sequentialCalls: 200,
  concurrentClients: 16,
  concurrentWindowMs: 4000,
  readWindowMs: 4000,
  scaleProviders: [1, 10, 50],
  settleMs: 3000,
  scaleWindowMs: 30_000,
  fanoutProviders: 50,
  fanoutClients: 32,
  fanoutWindowMs: 15_000,
  probeIntervalMs: 200,
  estopProviders: 10,
  estopReps: 5,
  checkConfigReps: 3,
  soakProviders: 50,
  soakWindowMs: 600_000,
  soakSampleMs: 10_000,
  btTickRateHz: 50,
  btWindowMs: 10_000,
};

/** --quick: fewer repetitions, shorter windows, 1 and 10 providers. */
export const QUICK_PROFILE: Profile = {
  ...DEFAULT_PROFILE,
  name: "quick",
  apiReps: 2,
  warmupCalls: 20,
  sequentialCalls: 50,
  concurrentWindowMs: 1000,
  readWindowMs: 1000,
  scaleProviders: [1, 10],
  settleMs: 1000,
  scaleWindowMs: 6000,
  fanoutProviders: 10,
  fanoutWindowMs: 4000,
  estopReps: 3,
  checkConfigReps: 1,
  btWindowMs: 3000,
};
