/**
 * A hook call into FAULT that finds its provider's call queue full (a slow call on the wire, 64
 * queued behind it), and a configuration reload that stops that provider arriving then
 * (docs/safety.md, step 2): the hook call is queued all the same, before the queued calls, waits
 * for the call on the wire (up to timeout_ms), then runs up to timeout_ms; the reload's wait is
 * bounded per call by that worst case (stopActionWorstCaseMs), so the call is answered and
 * reported as made, and the process is stopped after it, before the reload answers. Both ways a
 * reload stops a provider: removed, and restarted (its entry changed). The simulated providers run
 * as child processes; sim1 holds every call to its motor controller by its `inject_call_latency`.
 */
import assert from "node:assert/strict";
import type { RuntimeError } from "../../src/common/mod.ts";
import type { Config } from "../../src/config/mod.ts";
import { MAX_QUEUED_CALLS_PER_PROVIDER } from "../../src/control/mod.ts";
import { processAlive, startRuntime, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, d, hook, i, inertSim, manualCall } from "../safety/_fixture.ts";

/**
 * sim1's `timeout_ms`: the call on the wire and the hook call together (about 2 x LATENCY_MS)
 * outlast one call's timeout_ms + DRAIN_MARGIN_MS (7000) and stay within its worst case +
 * DRAIN_MARGIN_MS (2 x 6000 + 1000).
 */
const TIMEOUT_MS = 6000;
/**
 * How long sim1 holds each call to its motor controller: 2200 ms within TIMEOUT_MS (with 600, a
 * loaded CI machine once answered the hook call past it), 2 x it past 7000.
 */
const LATENCY_MS = 3800;
/** Manual calls sent to fill sim1's queue: one on the wire, the bound queued, the rest refused. */
const FLOOD = MAX_QUEUED_CALLS_PER_PROVIDER + 3;

/** Two inert sims; the `* -> FAULT` hook sets sim1's motor 2 to duty 0; no ladder call. */
function config(): Config {
  return testConfig({
    providers: [inertSim("sim0"), {
      ...inertSim("sim1", { restart: false }),
      timeoutMs: TIMEOUT_MS,
    }],
    pollingIntervalMs: 60_000,
    automation: {
      modeTransitionHooks: {
        beforeTransition: [],
        afterTransition: [
          hook(
            "*",
            "FAULT",
            [call("sim1/motorctl0", "set_motor_duty", { motor_index: 2, duty: { double: 0 } })],
            false,
            "automation.mode_transition_hooks.after_transition[0]",
          ),
        ],
      },
    },
  });
}

/** The configuration without sim1 (and without the hook that names it). */
function withoutSim1(c: Config): Config {
  return {
    ...c,
    providers: c.providers.filter((p) => p.id !== "sim1"),
    automation: {
      ...c.automation,
      modeTransitionHooks: { beforeTransition: [], afterTransition: [] },
    },
  };
}

/** The configuration with sim1's entry changed (a restart). */
function sim1Changed(c: Config): Config {
  return {
    ...c,
    providers: c.providers.map((p) => p.id === "sim1" ? { ...p, timeoutMs: TIMEOUT_MS + 1 } : p),
  };
}

/**
 * Fills sim1's queue (its motor controller slow), enters FAULT (an operator's), waits for its hook
 * call to sim1 to be under way, then reloads `next(config)` while the queue is still full: the
 * FAULT's answer, the reload's, sim1's old pid, the flood's outcomes.
 */
async function hookCallOnFullQueueThenReload(next: (c: Config) => Config) {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startRuntime(config(), { arm: true, host: { log } });
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim1", "chaos_control", 3, {
      device_id: { type: "string", string: "motorctl0" },
      latency_ms: i(LATENCY_MS),
    });
    const session = rt.registry.host("sim1")!.session!;
    const pid = session.pid;
    const refused = Promise.withResolvers<void>();
    const flood = Array.from(
      { length: FLOOD },
      (_, k) =>
        manualCall(rt, "sim1", "motorctl0", 10, { motor_index: i(1), duty: d((k + 1) / 100) })
          .then(() => "ok", (e: RuntimeError) => {
            if (e.code === "UNAVAILABLE") refused.resolve();
            return e.code;
          }),
    );
    await refused.promise; // the queue is full
    await waitFor("the flood's first call at sim1", () => session.inFlight > 0, 10_000, 0);
    const fault = rt.modes.requestWithReport("FAULT", { kind: "http" });
    await waitFor(
      "the hook call into FAULT to sim1 under way",
      () => rt.modes.faultHookCallsSettled("sim1") !== null,
      10_000,
      0,
    );
    assert.equal(session.inFlight, 1, "the flood's first call is still on the wire");
    const report = await rt.reload(next(rt.config));
    const alive = processAlive(pid);
    return { fault: await fault, report, alive, pid, codes: await Promise.all(flood), lines };
  } finally {
    await rt.stop();
  }
}

/** Asserts what every run shows: the hook call made, the queue was full, one INFO line. */
function assertHookCallMade(r: Awaited<ReturnType<typeof hookCallOnFullQueueThenReload>>): void {
  assert.deepEqual(r.fault.hook_failures, []);
  assert.ok(r.codes.includes("UNAVAILABLE"), "the queue was full");
  assert.ok(r.codes.includes("FAILED_PRECONDITION"), "the queued calls were refused in FAULT");
  const waited = r.lines.filter((l) => l.includes("reload: waited"));
  assert.equal(waited.length, 1, r.lines.join("\n"));
  assert.match(
    waited[0]!,
    /^INFO .*reload: waited \d+ ms for the hook calls into FAULT to sim1, then stopped it$/,
  );
  assert.deepEqual(r.lines.filter((l) => l.includes("stopped it all the same")), []);
  assert.equal(r.alive, false, `sim1's old process (pid ${r.pid}) still runs after the reload`);
}

Deno.test("FAULT hook call that finds its provider's queue full, to a provider a reload removes meanwhile, is answered before the reload stops the process", async () => {
  const r = await hookCallOnFullQueueThenReload(withoutSim1);
  assertHookCallMade(r);
  assert.deepEqual(r.report.providers.removed, ["sim1"]);
});

Deno.test("FAULT hook call that finds its provider's queue full, to a provider a reload restarts meanwhile, is answered before the reload stops its old process", async () => {
  const r = await hookCallOnFullQueueThenReload(sim1Changed);
  assertHookCallMade(r);
  assert.deepEqual(r.report.providers.restarted, ["sim1"]);
});
