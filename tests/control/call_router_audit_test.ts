/**
 * CallRouter's audit entries, gate names and call metrics, against the plant provider (device
 * plant0, in-process: tests/helpers/rig.ts) and a router of its own with an injected clock
 * (no mode gates: the gates are the test's). Latencies come from the clock, which the test's gates
 * advance: a gate runs once before validation and once more under the provider lock.
 */
import assert from "node:assert/strict";
import { type Clock, RuntimeError } from "../../src/common/mod.ts";
import {
  type AuditDecision,
  type CallGate,
  type CallOrigin,
  CallRouter,
  defaultAuditOrigin,
  MAX_QUEUED_CALLS_PER_PROVIDER,
  reachedProvider,
  refusedBeforeSending,
} from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { testLogger } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { d, plantProvider } from "../safety/_fixture.ts";
import { realClearTimer, realSetTimer } from "../helpers/clock.ts";

const SET_FAN = 2;
const READ_STATUS = 3;
const GATE_STEP_MS = 100;

class FakeClock implements Clock {
  mono = 5000;
  nowMs(): number {
    return 1_700_000_000_000;
  }
  monoMs(): number {
    return this.mono;
  }
  setTimer = realSetTimer;
  clearTimer = realClearTimer;
}

interface Fixture {
  rt: Kernel;
  router: CallRouter;
  clock: FakeClock;
  entries: AuditDecision[];
  /** A gate that advances the clock by GATE_STEP_MS and lets the call pass. */
  tick: CallGate;
  /** A gate that advances the clock by GATE_STEP_MS and refuses with `message`. */
  refuse(message: string): CallGate;
  fan(duty: number, o?: { origin?: CallOrigin; signal?: AbortSignal }): Promise<unknown>;
}

async function withRouter(body: (f: Fixture) => Promise<void>): Promise<void> {
  await using r = await rig({ providers: [plantProvider("plant")] });
  const rt = r.kernel;
  const clock = new FakeClock();
  const entries: AuditDecision[] = [];
  const router = new CallRouter({
    registry: rt.registry,
    cache: rt.cache,
    log: testLogger(),
    clock,
  });
  router.setAuditSink({ record: (e) => entries.push(e) });
  await body({
    rt,
    router,
    clock,
    entries,
    tick: () => {
      clock.mono += GATE_STEP_MS;
      return null;
    },
    refuse: (message) => () => {
      clock.mono += GATE_STEP_MS;
      return new RuntimeError("FAILED_PRECONDITION", message);
    },
    fan: (duty, o = {}) =>
      router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: SET_FAN,
        args: { duty: d(duty) },
        origin: o.origin ?? "manual",
        signal: o.signal,
      }),
  });
}

/** The `CODE: message` of a rejection. */
function failure(p: Promise<unknown>): Promise<string> {
  return p.then(
    () => "ok",
    (e) => e instanceof RuntimeError ? `${e.code}: ${e.message}` : `${e}`,
  );
}

/** An audit entry of set_fan(duty) with the fields a test does not vary filled in. */
function fanEntry(duty: number, e: Partial<AuditDecision>): AuditDecision {
  return {
    action: "call",
    origin: { kind: "http" },
    outcome: "refused",
    device_handle: "plant/plant0",
    function: "set_fan",
    args: { duty: d(duty) },
    reason: null,
    refused_by: null,
    result: null,
    latency_ms: 0,
    ...e,
  };
}

Deno.test("defaultAuditOrigin: each call origin's audit kind", () => {
  assert.deepEqual(defaultAuditOrigin("manual"), { kind: "http" });
  assert.deepEqual(defaultAuditOrigin("automated"), { kind: "automation" });
  assert.deepEqual(defaultAuditOrigin("hook"), { kind: "hook" });
  assert.deepEqual(defaultAuditOrigin("safety"), { kind: "estop" });
});

Deno.test("CallRouter audit: an accepted actuating call, with the clock's latency; reads and a removed sink record nothing", async () => {
  await withRouter(async ({ router, entries, tick, fan, clock }) => {
    router.addGate(tick, "interlock");
    await fan(0.25, { origin: "automated" });
    // Two gate checks (before validation, under the lock): 200 ms from validation to the answer.
    assert.deepEqual(entries, [
      fanEntry(0.25, {
        origin: { kind: "automation" },
        outcome: "accepted",
        result: {},
        latency_ms: 2 * GATE_STEP_MS,
      }),
    ]);
    assert.equal(clock.mono, 5000 + 2 * GATE_STEP_MS);
    // A read-only function changes nothing: no entry.
    await router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: READ_STATUS,
      args: {},
      origin: "manual",
    });
    assert.equal(entries.length, 1);
    router.setAuditSink(null);
    await fan(0.3);
    assert.equal(await failure(fan(7)), "INVALID_ARGUMENT: args.duty: 7 is above the maximum 1");
    assert.equal(entries.length, 1);
  });
});

Deno.test("CallRouter audit: refusals name the gate, validation, the queue and an unavailable provider", async () => {
  await withRouter(async ({ rt, router, entries, refuse, tick, fan }) => {
    // The default name of a gate added without one.
    const unnamed = refuse("no, said the unnamed gate");
    router.addGate(unnamed);
    assert.equal(await failure(fan(0.1)), "FAILED_PRECONDITION: no, said the unnamed gate");
    router.replaceGate(unnamed, tick);
    assert.equal(await failure(fan(5)), "INVALID_ARGUMENT: args.duty: 5 is above the maximum 1");
    // Cancelled before it reached the provider's queue.
    assert.equal(
      await failure(fan(0.2, { signal: AbortSignal.abort() })),
      "UNAVAILABLE: call cancelled before it was sent",
    );
    // A gate that throws (a bug in the gate) is named as the refuser; the reason is INTERNAL.
    const crash: CallGate = () => {
      throw new Error("gate crashed");
    };
    router.addGate(crash, "crashy");
    assert.equal(await failure(fan(0.3)), "Error: gate crashed");
    router.replaceGate(crash, tick);
    // The provider goes down between the check under the lock and the write.
    const host = rt.registry.host("plant")!;
    let checks = 0;
    let stopping: Promise<void> | null = null;
    router.addGate(() => {
      if (++checks === 2) stopping = host.stop(5000);
      return null;
    }, "stopper");
    assert.equal(await failure(fan(0.4)), "UNAVAILABLE: Provider unavailable: plant");
    await stopping;
    assert.deepEqual(entries, [
      fanEntry(0.1, {
        reason: "FAILED_PRECONDITION: no, said the unnamed gate",
        refused_by: "gate",
        latency_ms: GATE_STEP_MS,
      }),
      fanEntry(5, {
        reason: "INVALID_ARGUMENT: args.duty: 5 is above the maximum 1",
        refused_by: "validation",
        latency_ms: GATE_STEP_MS,
      }),
      fanEntry(0.2, {
        reason: "UNAVAILABLE: call cancelled before it was sent",
        refused_by: "queue",
        latency_ms: GATE_STEP_MS,
      }),
      fanEntry(0.3, {
        reason: "INTERNAL: gate crashed",
        refused_by: "crashy",
        latency_ms: GATE_STEP_MS,
      }),
      fanEntry(0.4, {
        reason: "UNAVAILABLE: Provider unavailable: plant",
        refused_by: "unavailable",
        latency_ms: 4 * GATE_STEP_MS,
      }),
    ]);
  });
});

Deno.test("CallRouter audit: a call the provider failed after it was sent is `failed`, refused by nothing", async () => {
  await withRouter(async ({ rt, router, entries, fan }) => {
    const host = rt.registry.host("plant")!;
    let checks = 0;
    let stopping: Promise<void> | null = null;
    router.addGate(() => {
      // Stops the provider right after the request's write began (before any answer can
      // arrive): the write is queued as a microtask once the call is sent, after this check at
      // its turn, so the stop goes a microtask later. (Stopped before that, the frame would
      // never be written: a refusal.)
      if (++checks === 2) {
        queueMicrotask(() => queueMicrotask(() => stopping = host.stop(5000)));
      }
      return null;
    }, "stopper");
    const answer = await failure(fan(0.4, { origin: "hook" }));
    await stopping;
    assert.match(answer, /^UNAVAILABLE: /);
    assert.deepEqual(entries, [
      fanEntry(0.4, { origin: { kind: "hook" }, outcome: "failed", reason: answer }),
    ]);
  });
});

Deno.test("CallRouter.replaceGate keeps the old gate's place and name, addGate first goes before the others, an unknown old gate is appended with the given name", async () => {
  await withRouter(async ({ rt, refuse, tick }) => {
    /** [refused_by, reason] of one set_fan call through a fresh router set up by `setup`. */
    const refusal = async (setup: (r: CallRouter) => void) => {
      const entries: AuditDecision[] = [];
      const router = new CallRouter({
        registry: rt.registry,
        cache: rt.cache,
        log: testLogger(),
        clock: new FakeClock(),
        audit: { record: (e) => entries.push(e) },
      });
      setup(router);
      await failure(router.call({
        providerId: "plant",
        deviceId: "plant0",
        functionId: SET_FAN,
        args: { duty: d(0.1) },
        origin: "manual",
      }));
      return entries.map((e) => [e.refused_by, e.reason]);
    };
    // The old gate first among two.
    assert.deepEqual(
      await refusal((r) => {
        const first = refuse("first refuses");
        r.addGate(first, "mode");
        r.addGate(refuse("second refuses"), "estop");
        r.replaceGate(first, refuse("replaced first refuses"), "ignored");
      }),
      [["mode", "FAILED_PRECONDITION: replaced first refuses"]],
    );
    // The old gate second, behind one that passes.
    assert.deepEqual(
      await refusal((r) => {
        const second = refuse("second refuses");
        r.addGate(tick, "interlock");
        r.addGate(second, "estop");
        r.addGate(refuse("third refuses"), "mode");
        r.replaceGate(second, refuse("replaced second refuses"), "ignored");
      }),
      [["estop", "FAILED_PRECONDITION: replaced second refuses"]],
    );
    // A gate added `first` runs before the gates already there (the e-stop latch's).
    assert.deepEqual(
      await refusal((r) => {
        r.addGate(refuse("mode refuses"), "mode");
        r.addGate(refuse("latch refuses"), "estop", "first");
      }),
      [["estop", "FAILED_PRECONDITION: latch refuses"]],
    );
    // Unknown old gate: appended, after the gates already there, with the given or default name.
    assert.deepEqual(
      await refusal((r) => {
        r.addGate(tick, "interlock");
        r.replaceGate(() => null, refuse("appended refuses"), "late");
      }),
      [["late", "FAILED_PRECONDITION: appended refuses"]],
    );
    assert.deepEqual(
      await refusal((r) => {
        r.addGate(tick, "interlock");
        r.replaceGate(() => null, refuse("appended refuses"));
      }),
      [["gate", "FAILED_PRECONDITION: appended refuses"]],
    );
  });
});

Deno.test("CallRouter.callMetrics: one series per provider and code, durations in seconds, none for an unknown provider", async () => {
  await withRouter(async ({ router, tick, refuse, fan }) => {
    assert.deepEqual(router.callMetrics(), []);
    router.addGate(tick, "interlock");
    await fan(0.1);
    await fan(0.2);
    const no = refuse("no");
    router.addGate(no, "mode");
    await failure(fan(0.3));
    router.replaceGate(no, () => {
      throw new Error("gate crashed");
    });
    await failure(fan(0.4));
    assert.equal(
      await failure(router.call({
        providerId: "nope",
        deviceId: "plant0",
        functionId: SET_FAN,
        args: {},
        origin: "manual",
      })),
      "NOT_FOUND: Provider not found: nope",
    );
    const series = router.callMetrics().map((s) => ({
      providerId: s.providerId,
      code: s.code,
      count: s.duration.count,
      sum: Math.round(s.duration.sum * 1e6) / 1e6,
    }));
    // OK: two checks each, 0.2 s; refused by the second gate: 0.2 s; the crash: 0.1 s.
    assert.deepEqual(series, [
      { providerId: "plant", code: "OK", count: 2, sum: 0.4 },
      { providerId: "plant", code: "FAILED_PRECONDITION", count: 1, sum: 0.2 },
      { providerId: "plant", code: "INTERNAL", count: 1, sum: 0.1 },
    ]);
  });
});

Deno.test("CallRouter.callMetrics: a provider a reload removes leaves no series behind (as its poll series)", async () => {
  await withRouter(async ({ rt, router, fan }) => {
    await fan(0.1);
    assert.deepEqual(router.callMetrics().map((s) => s.providerId), ["plant"]);
    const host = rt.registry.remove("plant")!;
    await host.stop(2000);
    assert.deepEqual(router.callMetrics(), []);
    assert.deepEqual(rt.router.callMetrics(), []);
  });
});

Deno.test("CallRouter audit: a call beyond the provider's queue bound is refused by `queue`", async () => {
  await withRouter(async ({ entries, fan }) => {
    // Issued in one synchronous step: one holds the lock, the bound wait, the last is refused.
    const calls = Array.from(
      { length: MAX_QUEUED_CALLS_PER_PROVIDER + 2 },
      (_, k) => failure(fan((k + 1) / 1000)),
    );
    const answers = await Promise.all(calls);
    const busy =
      `UNAVAILABLE: Provider busy: plant has ${MAX_QUEUED_CALLS_PER_PROVIDER} calls queued`;
    assert.deepEqual(answers.filter((a) => a !== "ok"), [busy]);
    assert.deepEqual(entries.filter((e) => e.outcome !== "accepted"), [
      fanEntry((MAX_QUEUED_CALLS_PER_PROVIDER + 2) / 1000, { reason: busy, refused_by: "queue" }),
    ]);
  });
});

Deno.test("CallRouter audit: a stop action never waits for its write ahead; any other call does", async () => {
  await withRouter(async (f) => {
    const waits: Array<boolean | undefined> = [];
    // A journal that never gets the bytes to the OS: a waiting call would hang here.
    f.router.setAuditSink({
      record: (e) => f.entries.push(e),
      writeAhead: (_call, options) => {
        waits.push(options?.wait);
        return options?.wait === false ? Promise.resolve({ id: "x" }) : new Promise(() => {});
      },
    });
    await f.fan(0, { origin: "safety" });
    assert.deepEqual(waits, [false], "the stop action asked not to wait");
    assert.equal(f.entries.at(-1)?.outcome, "accepted");
    let settled = false;
    const manual = f.fan(0.5).finally(() => (settled = true));
    await new Promise((r) => setTimeout(r, 50));
    assert.equal(settled, false, "a manual call waits for its decision to be written");
    assert.deepEqual(waits, [false, true]);
    void manual.catch(() => {});
  });
});

Deno.test("CallRouter audit: a call a gate refuses at its turn is not written ahead, and a stop action queued behind it does not wait for the journal", async () => {
  await withRouter(async (f) => {
    let latched = false;
    f.router.addGate(
      () => latched ? new RuntimeError("FAILED_PRECONDITION", "E-stop latched") : null,
      "estop",
    );
    // A slow journal: the first decision's write is held by the test, any later one never ends
    // (the real trail gives up after AUDIT_WRITE_AHEAD_TIMEOUT_MS, each call in turn).
    const asked: number[] = [];
    const first = Promise.withResolvers<{ id: string }>();
    const firstAsked = Promise.withResolvers<void>();
    const waitingOnJournal = Promise.withResolvers<string>();
    f.router.setAuditSink({
      record: (e) => f.entries.push(e),
      writeAhead: (call, options) => {
        const duty = (call.args?.duty as { double: number }).double;
        asked.push(duty);
        if (options?.wait === false) return Promise.resolve({ id: `stop ${duty}` });
        if (asked.length === 1) {
          firstAsked.resolve();
          return first.promise;
        }
        waitingOnJournal.resolve(`the call of duty ${duty} waits for its write ahead`);
        return new Promise(() => {});
      },
    });
    const held = failure(f.fan(0.1)); // holds the provider lock, its write ahead pending
    await firstAsked.promise;
    const queued = failure(f.fan(0.2)); // behind it
    // The e-stop latches; its ladder's call to the provider queues behind both.
    latched = true;
    const stop = f.fan(0, { origin: "safety" }).then(() => "the stop action was sent");
    first.resolve({ id: "held" });
    assert.equal(await Promise.race([stop, waitingOnJournal.promise]), "the stop action was sent");
    assert.equal(await held, "FAILED_PRECONDITION: E-stop latched");
    assert.equal(await queued, "FAILED_PRECONDITION: E-stop latched");
    // Only the call that got its turn before the latch and the stop action were written ahead.
    assert.deepEqual(asked, [0.1, 0]);
    const refused = f.entries.find((e) =>
      e.args?.duty !== undefined && e.outcome === "refused" &&
      (e.args.duty as { double: number }).double === 0.2
    );
    assert.equal(refused?.refused_by, "estop");
    assert.equal(refused?.intent, undefined, "nothing written ahead to settle");
  });
});

Deno.test("CallRouter audit: a caller stillAdmitted refuses after the write ahead is refused unsent, by what it names, the write ahead settled", async () => {
  await withRouter(async (f) => {
    // The caller's token is lowered while its decision is written ahead (a reload).
    let admitted = true;
    let asked = 0;
    f.router.setAuditSink({
      record: (e) => f.entries.push(e),
      writeAhead: () => {
        admitted = false;
        return Promise.resolve({ id: "ahead" });
      },
    });
    const lowered = new RuntimeError(
      "PERMISSION_DENIED",
      "role operator required (shift has role viewer)",
    );
    const call = f.router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionId: SET_FAN,
      args: { duty: d(0.4) },
      origin: "manual",
      stillAdmitted: () => {
        asked++;
        return admitted ? null : { refusedBy: "role", error: lowered };
      },
    });
    await assert.rejects(call, (e) => e === lowered);
    assert.equal(asked, 2, "asked at its turn, and again after the write ahead");
    assert.equal(reachedProvider(lowered), false);
    assert.equal(refusedBeforeSending(lowered), "role");
    assert.deepEqual(
      f.entries.map((e) => [e.outcome, e.refused_by, e.reason, e.intent]),
      [[
        "refused",
        "role",
        "PERMISSION_DENIED: role operator required (shift has role viewer)",
        { id: "ahead" },
      ]],
    );
  });
});
