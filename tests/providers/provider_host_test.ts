/**
 * ProviderHost over the programmable provider (a real child process): what it reports (uptime,
 * last seen, availability events), start-up deadlines and the restart budget, a session the
 * provider ends while its process lives on, and stop() while a start is under way.
 */
import assert from "node:assert/strict";
import {
  ADPP_PROTOCOL_VERSION,
  PROVIDER_TEXT_CHARS,
  QUOTED_DEVICE_ID_CHARS,
  QUOTED_PROVIDER_ID_CHARS,
  RUNTIME_VERSION,
  RuntimeError,
  type SpawnFn,
} from "../../src/common/mod.ts";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { PreparedRead, SampleBatch } from "../../src/adpp/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ProviderHost, ProviderRegistry, type SpawnQueue } from "../../src/providers/mod.ts";
import { processAlive, testLogger, waitFor } from "../helpers/kernel.ts";
import {
  type Inventory,
  type ProgrammableFixture,
  programmableProvider,
  SH_LINGERING,
  startProgrammable,
  T,
} from "../helpers/programmable_provider.ts";
import { openTimerLedger } from "../helpers/timers.ts";
import {
  ADPP_DEADLINE_TIMER,
  elapseOn,
  ManualClock,
  settleMovingTime,
  settleOn,
} from "../helpers/clock.ts";

const D0: Inventory = { devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }] } } };

async function withFixture(
  inventory: Inventory,
  body: (fx: ProgrammableFixture) => Promise<void>,
  o: Parameters<typeof startProgrammable>[1] = {},
): Promise<void> {
  const fx = await startProgrammable(inventory, o);
  try {
    await body(fx);
  } finally {
    await fx.close();
  }
}

Deno.test("ProviderHost reports whole seconds of uptime and the time since the provider last answered", async () => {
  await withFixture(D0, async (fx) => {
    const clock = fx.clock;
    // Up at monotonic 10 000 (the clock stands still), every frame so far arrived then.
    assert.equal(fx.host.uptimeSeconds(), 0);
    assert.equal(fx.host.lastSeenAgoMs(), 0);
    clock.mono = 12_999.6;
    assert.equal(fx.host.uptimeSeconds(), 2);
    assert.equal(fx.host.lastSeenAgoMs(), 3000, "rounded to the millisecond");
    clock.mono = 13_000;
    assert.equal(fx.host.uptimeSeconds(), 3);
    // An answer now: last seen is now.
    await fx.stats("d0");
    assert.equal(fx.host.lastSeenAgoMs(), 0);
    clock.mono = 13_250.4;
    assert.equal(fx.host.lastSeenAgoMs(), 250);
    // A clock read before the last frame never gives a negative age.
    clock.mono = 12_000;
    assert.equal(fx.host.lastSeenAgoMs(), 0);
    clock.mono = 20_000;
    await fx.registry.stopAll(1000);
    assert.equal(fx.host.uptimeSeconds(), 0, "0 while unavailable");
    assert.equal(fx.host.lastSeenAgoMs(), null, "no session");
  }, { mono: 10_000 });
});

Deno.test("ProviderHost publishes provider_health_change with the wall-clock time on each availability flip", async () => {
  await withFixture(D0, async (fx) => {
    assert.deepEqual(fx.events, [{
      kind: "provider_health_change",
      provider_id: "p0",
      state: "AVAILABLE",
      timestamp_ms: 1_700_000_000_000,
    }]);
    const flips: boolean[] = [];
    fx.host.onAvailability((up) => flips.push(up));
    fx.events.length = 0;
    fx.clock.wallMs = 1_700_000_005_000;
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    assert.deepEqual(fx.events, [
      {
        kind: "provider_health_change",
        provider_id: "p0",
        state: "UNAVAILABLE",
        timestamp_ms: 1_700_000_005_000,
      },
      {
        kind: "provider_health_change",
        provider_id: "p0",
        state: "AVAILABLE",
        timestamp_ms: 1_700_000_005_000,
      },
    ]);
    assert.deepEqual(flips, [false, true]);
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("ProviderHost dates an availability flip no earlier than the flip before it when the wall clock steps back (NTP)", async () => {
  await withFixture(D0, async (fx) => {
    fx.events.length = 0; // AVAILABLE at 1_700_000_000_000
    fx.clock.wallMs = 1_700_000_000_000 - 10_000; // NTP steps the wall clock back 10 s
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    assert.deepEqual(
      fx.events.map((e) => e.kind === "provider_health_change" && [e.state, e.timestamp_ms]),
      [["UNAVAILABLE", 1_700_000_000_000], ["AVAILABLE", 1_700_000_000_000]],
      "never earlier than the flip before it",
    );
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("ProviderRegistry dates the flips of a provider a reload restarts (its entry changed) no earlier than its predecessor's when the wall clock stepped back (NTP)", async () => {
  await withFixture(D0, async (fx) => {
    fx.events.length = 0; // AVAILABLE at 1_700_000_000_000
    fx.clock.wallMs = 1_700_000_000_000 - 10_000; // NTP steps the wall clock back 10 s
    // A reload changes its entry: the old process stops, a new host starts it again.
    const entry = fx.host.config;
    const changed = { ...entry, timeoutMs: entry.timeoutMs + 1 };
    const report = await fx.registry.reconcile([entry], [changed], {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
    assert.deepEqual(report.restarted, ["p0"]);
    assert.deepEqual(
      fx.events.map((e) => e.kind === "provider_health_change" && [e.state, e.timestamp_ms]),
      [["UNAVAILABLE", 1_700_000_000_000], ["AVAILABLE", 1_700_000_000_000]],
      "the successor's flip never earlier than its predecessor's",
    );
  }, { restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("ProviderRegistry keeps the last flip date of a provider a reload removed past the wall clock passing it: a second step back (NTP) before it is configured again does not date its return before it", async () => {
  await withFixture(D0, async (fx) => {
    const t = 1_700_000_000_000; // p0 AVAILABLE then
    const reconcile = (before: ProviderConfig[], next: ProviderConfig[]) =>
      fx.registry.reconcile(before, next, {
        holdRemovals: false,
        stopBudgetMs: 1000,
        startBudgetMs: 30_000,
        stopping: () => false,
      });
    const p0 = fx.host.config;
    const p1 = { ...p0, id: "p1" };
    const p1Changed = { ...p1, timeoutMs: p1.timeoutMs + 1 };
    await reconcile([p0], [p0, p1]);
    // A reload removes p0 at t + 1 s; NTP steps the wall clock back a minute, and a reload
    // restarts p1 (its entry changed).
    fx.clock.wallMs = t + 1_000;
    await reconcile([p0, p1], [p1]);
    fx.clock.wallMs = t - 59_000;
    assert.deepEqual((await reconcile([p1], [p1Changed])).restarted, ["p1"]);
    // A minute on, the clock is past the removal again; a reload restarts p1 again.
    fx.clock.wallMs = t + 5_000;
    assert.deepEqual((await reconcile([p1Changed], [p1])).restarted, ["p1"]);
    // NTP steps it back a minute again; a reload configures p0 again.
    fx.clock.wallMs = t - 55_000;
    assert.deepEqual((await reconcile([p1], [p1, p0])).added, ["p0"]);
    assert.deepEqual(
      fx.events.flatMap((e) =>
        e.kind === "provider_health_change" && e.provider_id === "p0"
          ? [[e.state, e.timestamp_ms - t]]
          : []
      ),
      [["AVAILABLE", 0], ["UNAVAILABLE", 1_000], ["AVAILABLE", 1_000]],
      "its return never earlier than its removal",
    );
  }, { inProcess: true });
});

/** The test's reconcile of fx's registry (nothing held back, nothing stopping). */
function reconcileOf(fx: ProgrammableFixture, failing: Set<string> = new Set()) {
  fx.registry.eachHost((h) => {
    if (failing.has(h.id)) throw new Error(`wiring ${h.id} failed`);
  });
  return (before: ProviderConfig[], next: ProviderConfig[]) =>
    fx.registry.reconcile(before, next, {
      holdRemovals: false,
      stopBudgetMs: 1000,
      startBudgetMs: 30_000,
      stopping: () => false,
    });
}

/** The provider_health_change events of `id`: state and date after `t`. */
function flipsOf(fx: ProgrammableFixture, id: string, t: number): [string, number][] {
  return fx.events.flatMap((e) =>
    e.kind === "provider_health_change" && e.provider_id === id
      ? [[e.state, e.timestamp_ms - t] as [string, number]]
      : []
  );
}

Deno.test("ProviderRegistry keeps the last flip date of a changed provider whose start failed at a reload: the next reload takes its host listed down out and starts the id again no earlier, after a step back (NTP)", async () => {
  await withFixture(D0, async (fx) => {
    const t = 1_700_000_000_000; // the wall clock until the test moves it
    const reconcile = reconcileOf(fx);
    const p0 = fx.host.config;
    const p1 = { ...p0, id: "p1" };
    const p1Broken = { ...p1, args: ["no-such-provider"] };
    await reconcile([p0], [p0, p1]);
    // A reload at t + 1 s changes p1: its process stops, its new entry does not start.
    fx.clock.wallMs = t + 1_000;
    const r = await reconcile([p0, p1], [p0, p1Broken]);
    assert.deepEqual([r.restarted, r.failed.map((f) => f.id)], [[], ["p1"]]);
    assert.deepEqual(fx.registry.failedStarts().map((h) => h.id), ["p1"]);
    // NTP steps the wall clock back a minute; a reload takes the listed-down host out and
    // starts p1 again.
    fx.clock.wallMs = t - 59_000;
    assert.deepEqual((await reconcile([p0], [p0, p1])).added, ["p1"]);
    assert.deepEqual(
      flipsOf(fx, "p1", t),
      [["AVAILABLE", 0], ["UNAVAILABLE", 1_000], ["AVAILABLE", 1_000]],
      "its return never earlier than its stop",
    );
  }, { inProcess: true });
});

Deno.test("ProviderRegistry keeps the last flip date of a provider whose host a reload could not register (a host listener failed): a later reload configures the id again no earlier, after a step back (NTP)", async () => {
  await withFixture(D0, async (fx) => {
    const t = 1_700_000_000_000; // the wall clock until the test moves it
    const failing = new Set<string>();
    const reconcile = reconcileOf(fx, failing);
    const p0 = fx.host.config;
    const p1 = { ...p0, id: "p1" };
    const p1Changed = { ...p1, timeoutMs: p1.timeoutMs + 1 };
    await reconcile([p0], [p0, p1]);
    // A reload at t + 1 s changes p1: its process stops, its new host is not registered.
    fx.clock.wallMs = t + 1_000;
    failing.add("p1");
    const r = await reconcile([p0, p1], [p0, p1Changed]);
    assert.deepEqual([r.restarted, r.failed.map((f) => f.id)], [[], ["p1"]]);
    assert.notEqual(fx.registry.startFailure("p1"), null);
    // NTP steps the wall clock back a minute; a reload starts p1 again.
    fx.clock.wallMs = t - 59_000;
    failing.clear();
    assert.deepEqual((await reconcile([p0], [p0, p1Changed])).added, ["p1"]);
    assert.deepEqual(
      flipsOf(fx, "p1", t),
      [["AVAILABLE", 0], ["UNAVAILABLE", 1_000], ["AVAILABLE", 1_000]],
      "its return never earlier than its stop",
    );
  }, { inProcess: true });
});

Deno.test("ProviderRegistry keeps the last flip date of a host remove() took out, stopped by the caller: the id added again is dated no earlier, after a step back (NTP)", async () => {
  await withFixture(D0, async (fx) => {
    const t = 1_700_000_000_000; // p0 AVAILABLE then
    const p0 = fx.host.config;
    fx.clock.wallMs = t + 1_000;
    await fx.registry.remove("p0")!.stop(1000);
    fx.clock.wallMs = t - 59_000;
    await fx.registry.add(p0).start();
    assert.deepEqual(
      flipsOf(fx, "p0", t),
      [["AVAILABLE", 0], ["UNAVAILABLE", 1_000], ["AVAILABLE", 1_000]],
      "its return never earlier than its removal",
    );
  }, { inProcess: true });
});

Deno.test("ProviderHost ends a restart's failure streak at the first liveness answer after success_reset_ms, not on time alone", async () => {
  const timers = openTimerLedger(ADPP_DEADLINE_TIMER);
  try {
    await withFixture(D0, async (fx) => {
      const pid = fx.host.session!.pid;
      Deno.kill(pid, "SIGKILL");
      await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
      assert.equal(fx.host.lifecycle, "RECOVERING");
      // Nothing is armed for it: only an answer proves the provider healthy.
      assert.deepEqual(timers.pending(), []);
      // An answer before success_reset_ms (monotonic) keeps the streak ...
      fx.clock.mono = 10_000 + 59_999;
      fx.host.noteLiveness(true);
      assert.equal(fx.host.lifecycle, "RECOVERING");
      // ... time alone does not end it (a provider may hang soon after each start) ...
      fx.clock.mono = 10_000 + 120_000;
      await new Promise((r) => setTimeout(r, 50));
      assert.equal(fx.host.lifecycle, "RECOVERING");
      assert.equal(fx.host.supervision().attempt_count, 1);
      // ... an answer after it does.
      fx.host.noteLiveness(true);
      assert.equal(fx.host.lifecycle, "RUNNING");
      assert.equal(fx.host.supervision().attempt_count, 0);
      await fx.registry.stopAll(1000);
      assert.deepEqual(timers.pending(), []);
    }, { mono: 10_000, restart: { backoffMs: [0, 0, 0], successResetMs: 60_000 } });
  } finally {
    timers.close();
  }
});

Deno.test("ProviderHost starts one process per restart and arms only the timers it needs: none while RUNNING or RECOVERING, the restart while backing off", async () => {
  const timers = openTimerLedger(ADPP_DEADLINE_TIMER);
  let spawned = 0;
  const spawn: SpawnFn = (o) => {
    spawned++;
    return spawnProcess(o);
  };
  const crash = async (fx: ProgrammableFixture, restarts: boolean) => {
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    if (restarts) {
      await waitFor("restarted", () => fx.host.available && fx.host.session!.pid !== pid);
    }
  };
  try {
    await withFixture(D0, async (fx) => {
      // Never failed: no failure streak to end, nothing armed.
      assert.equal(fx.host.lifecycle, "RUNNING");
      assert.deepEqual(timers.pending(), []);
      // Restarted (backoff 0): the streak ends at a liveness answer, nothing is armed for it.
      await crash(fx, true);
      assert.equal(fx.host.lifecycle, "RECOVERING");
      assert.deepEqual(timers.pending(), []);
      // Restarted again.
      await crash(fx, true);
      assert.deepEqual(timers.pending(), []);
      // Crashed a third time: backing off 60 s.
      await crash(fx, false);
      await waitFor("backing off", () => fx.host.supervision().next_restart_in_ms === 60_000);
      await waitFor("only the restart pending", () => {
        const p = timers.pending();
        return p.length === 1 && p[0] === 60_000;
      });
      await fx.registry.stopAll(1000);
      assert.deepEqual(timers.pending(), [], "stop() cancels the restart");
      assert.equal(spawned, 3, "the first process and one per restart");
    }, {
      mono: 10_000,
      spawn,
      restart: { backoffMs: [0, 0, 60_000], successResetMs: 200 },
    });
  } finally {
    timers.close();
  }
});

Deno.test("ProviderHost kills a provider that ended its session but lives on, and restarts it", async () => {
  await withFixture(D0, async (fx) => {
    const pid = fx.host.session!.pid;
    await fx.host.request("call", { device_id: "d0", function_id: 3 });
    await waitFor("session ended", () => fx.host.session?.pid !== pid);
    await waitFor("process killed", () => !processAlive(pid));
    await waitFor("restarted", () => fx.host.available);
  }, { sh: SH_LINGERING, restart: { backoffMs: [0, 0, 0] } });
});

Deno.test("ProviderHost.start fails on a provider that speaks another protocol version", async () => {
  await assert.rejects(
    startProgrammable({ ...D0, hello: { protocol: "0.9.0" } }),
    (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "UNAVAILABLE");
      assert.ok(
        e.message.endsWith(
          `p0: provider speaks protocol '0.9.0', expected '${ADPP_PROTOCOL_VERSION}'`,
        ),
        e.message,
      );
      return true;
    },
  );
});

/** A registry of the programmable provider `p0` with the inventory in `file`, on real time. */
function registryOf(file: string): ProviderRegistry {
  return new ProviderRegistry([programmableProvider("p0", file)], {
    spawn: spawnProcess,
    clock: systemClock,
    log: testLogger(),
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
}

Deno.test("ProviderHost.start after stop() refuses without starting a process", async () => {
  const pidFile = await Deno.makeTempFile();
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify({ ...D0, pidFile }));
  const registry = registryOf(file);
  try {
    const host = registry.host("p0")!;
    await host.stop(1000);
    await assert.rejects(host.start(), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "UNAVAILABLE");
      assert.equal(e.message, "runtime is stopping");
      return true;
    });
    assert.equal(host.session, null);
    assert.equal(host.available, false);
    assert.equal(host.state.phase, "STOPPED");
    // Decided when its turn to spawn came (the registry's spawn queue): nothing was spawned.
    assert.equal(Deno.readTextFileSync(pidFile), "");
  } finally {
    await registry.stopAll(1000);
    await Deno.remove(file);
    await Deno.remove(pidFile);
  }
});

Deno.test("ProviderHost.start waits for WaitReady when Hello advertises it", async () => {
  await withFixture(
    { ...D0, hello: { metadata: { supports_wait_ready: "true" } }, waitReady: { delayMs: 200 } },
    async (fx) => {
      assert.equal(fx.host.available, true);
      assert.deepEqual(fx.host.session!.hello, {
        providerName: "programmable",
        providerVersion: "",
        metadata: { supports_wait_ready: "true" },
      });
      const { hello, waitReady } = await fx.stats("d0");
      assert.deepEqual(hello, {
        protocol_version: ADPP_PROTOCOL_VERSION,
        client_name: "anolis-runtime",
        client_version: RUNTIME_VERSION,
      });
      assert.deepEqual(waitReady, { max_wait_ms_hint: 7000 });
    },
    { readyTimeoutMs: 7000 },
  );
  // WaitReady that never answers: start-up fails within ready_timeout_ms.
  await assert.rejects(
    startProgrammable({
      ...D0,
      hello: { metadata: { supports_wait_ready: "true" } },
      waitReady: { hang: true },
    }, { readyTimeoutMs: 300 }),
    /WaitReady failed: wait_ready got no answer within 300 ms/,
  );
  // Not advertised: never asked, even by a provider that would never answer it.
  await withFixture({ ...D0, waitReady: { hang: true } }, async (fx) => {
    assert.equal(fx.host.available, true);
    assert.equal((await fx.stats("d0")).waitReady, null);
  }, { readyTimeoutMs: 300 });
});

Deno.test("ProviderHost keeps Hello's name, version and metadata, empty when the provider leaves them out", async () => {
  await withFixture({ ...D0, hello: { name: "named", version: "1.2.3" } }, (fx) => {
    assert.deepEqual(fx.host.session!.hello, {
      providerName: "named",
      providerVersion: "1.2.3",
      metadata: {},
    });
    return Promise.resolve();
  });
  await withFixture({ ...D0, hello: { name: null } }, (fx) => {
    assert.deepEqual(fx.host.session!.hello, {
      providerName: "",
      providerVersion: "",
      metadata: {},
    });
    return Promise.resolve();
  });
  await assert.rejects(
    startProgrammable({ ...D0, hello: { protocol: null } }),
    /p0: provider speaks protocol '', expected '/,
  );
});

Deno.test("ProviderHost: a restart attempt that overruns restart_policy.timeout_ms fails and counts", async () => {
  // The first start has no budget (and answers at once); every restart's discovery alone takes
  // as long as its budget.
  await withFixture(D0, async (fx) => {
    await fx.setInventory({ ...D0, describeDelayMs: 2000 });
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("circuit open", () => fx.host.lifecycle === "CIRCUIT_OPEN", 20_000);
    assert.equal(fx.host.available, false);
    assert.equal(fx.host.supervision().attempt_count, 2);
    const failures = fx.lines.filter((l) => /restart attempt \d failed/.test(l));
    assert.equal(failures.length, 1);
    assert.match(
      failures[0]!,
      /Restart timeout exceeded for provider '[\w-]+' during discovery \(\d+ ms >= restart_policy\.timeout_ms 2000 ms\)/,
    );
  }, { restart: { maxAttempts: 1, backoffMs: [0], timeoutMs: 2000 } });
});

Deno.test("ProviderHost: restart_policy.timeout_ms bounds a restart attempt whose provider hangs in the handshake, not only its hello_timeout_ms", async () => {
  // hello_timeout_ms is 60 s; the restart budget 1.5 s: the attempt fails at the budget.
  await withFixture(D0, async (fx) => {
    await fx.setInventory({ ...D0, hello: { hang: true } });
    Deno.kill(fx.host.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => fx.host.lifecycle === "CIRCUIT_OPEN", 20_000);
    const failures = fx.lines.filter((l) => /restart attempt \d failed/.test(l));
    assert.equal(failures.length, 1);
    assert.match(
      failures[0]!,
      /restart attempt 1 failed: Restart timeout exceeded for provider 'p0' during handshake \(\d+ ms >= restart_policy\.timeout_ms 1500 ms\)/,
    );
  }, { helloTimeoutMs: 60_000, restart: { maxAttempts: 1, backoffMs: [0], timeoutMs: 1500 } });
});

Deno.test("ProviderHost.stop ends a provider that is still starting, without waiting for its Hello deadline", async () => {
  const pidFile = await Deno.makeTempFile();
  const fx = await startProgrammable({ ...D0, pidFile }, {
    helloTimeoutMs: 60_000,
    restart: { backoffMs: [0, 0, 0] },
  });
  try {
    // The restarted process never answers Hello.
    await fx.setInventory({ ...D0, pidFile, hello: { hang: true } });
    const pids = () => Deno.readTextFileSync(pidFile).trim().split("\n").map(Number);
    Deno.kill(pids()[0]!, "SIGKILL");
    const starting = await waitFor("restart attempt started", () => pids()[1]);
    await waitFor("the restart attempt waits for Hello", () => fx.host.lifecycle === "RESTARTING");
    assert.ok(processAlive(starting));
    await fx.registry.stopAll(1000);
    // stop() ended it (a Hello deadline of 60 s would have held it far longer).
    assert.equal(processAlive(starting), false);
    assert.equal(fx.host.available, false);
    assert.equal(fx.host.session, null);
    // An attempt ended by stop() is no failed attempt.
    assert.deepEqual(fx.lines.filter((l) => /restart attempt \d failed/.test(l)), []);
  } finally {
    await fx.close();
    await Deno.remove(pidFile);
  }
});

Deno.test("ProviderHost.request waits timeout_ms by default or the given time, and refuses while down", async () => {
  await withFixture(D0, async (fx) => {
    await fx.program("d0", { read: { hang: true } });
    const read = { device_id: "d0", signal_ids: ["x"] };
    await assert.rejects(fx.host.request("read_signals", read, 150), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "DEADLINE_EXCEEDED");
      assert.equal(e.message, "read_signals got no answer within 150 ms");
      return true;
    });
    await assert.rejects(
      fx.host.request("read_signals", read),
      /^RuntimeError: read_signals got no answer within 400 ms$/,
    );
    // A slow request is no reason to give up on the provider.
    assert.equal(fx.host.available, true);
    // Refused from the moment stop() begins, before its session is gone.
    const duringStop: Promise<unknown>[] = [];
    fx.host.onAvailability((up) => {
      if (!up) duringStop.push(fx.host.request("read_signals", read).catch((e) => e));
    });
    await fx.registry.stopAll(1000);
    assert.equal(duringStop.length, 1);
    const refused = await duringStop[0];
    assert.ok(refused instanceof RuntimeError);
    assert.equal(refused.code, "UNAVAILABLE");
    assert.equal(refused.message, "Provider unavailable: p0");
    await assert.rejects(fx.host.request("read_signals", read), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.code, "UNAVAILABLE");
      assert.equal(e.message, "Provider unavailable: p0");
      return true;
    });
  }, { timeoutMs: 400 });
});

Deno.test("ProviderHost.start rejects with its cause's code, and the exit code of a provider that died", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  try {
    await Deno.writeTextFile(file, JSON.stringify({ ...D0, hello: { protocol: "v0" } }));
    const registry = new ProviderRegistry([programmableProvider("p0", file)], {
      spawn: spawnProcess,
      clock: systemClock,
      log: testLogger(),
      bus: new EventBus(),
      cwd: Deno.cwd(),
      shutdownTimeoutMs: 1000,
    });
    try {
      await assert.rejects(registry.host("p0")!.start(), (e) => {
        assert.ok(e instanceof RuntimeError);
        assert.equal(e.code, "FAILED_PRECONDITION");
        assert.ok(!e.message.includes("exit code"), "the process was still running");
        return true;
      });
      assert.equal(registry.host("p0")!.available, false);
      // A provider that exits before answering: the exit code is part of the reason.
      await Deno.writeTextFile(file, "not json");
      await assert.rejects(registry.host("p0")!.start(), (e) => {
        assert.ok(e instanceof RuntimeError);
        assert.equal(e.code, "UNAVAILABLE");
        assert.match(e.message, /^Hello failed: .* \(process exit code 1\)$/);
        // The cause chain: the start-up failure with the provider's last words, the failed
        // Hello it explains, the session end that failed it.
        const withStderr = e.cause;
        assert.ok(withStderr instanceof RuntimeError);
        assert.match(withStderr.message, /^Hello failed: .*; provider's last stderr lines?: /);
        const hello = withStderr.cause;
        assert.ok(hello instanceof RuntimeError);
        assert.match(hello.message, /^Hello failed: /);
        assert.ok(!hello.message.includes("stderr"));
        assert.ok(hello.cause instanceof RuntimeError);
        return true;
      });
    } finally {
      await registry.stopAll(1000);
    }
  } finally {
    await Deno.remove(file);
  }
});

Deno.test("ProviderHost.stop lets a provider finish its graceful exit and ends supervision", async () => {
  await withFixture({ ...D0, exitDelayMs: 300 }, async (fx) => {
    const session = fx.host.session!;
    await fx.registry.stopAll(3000);
    assert.equal(session.exitCode, 0, "exited by itself after stdin closed, not killed");
    assert.equal(fx.host.state.phase, "STOPPED");
    assert.equal(fx.host.lifecycle, "DOWN");
    assert.equal(fx.host.available, false);
  });
});

Deno.test("ProviderHost restarts after the backoff on the monotonic clock, however early its timer fires", async () => {
  // The monotonic clock stands still: every restart timer fires "early" and must wait again.
  await withFixture(D0, async (fx) => {
    // The delays of the timers armed (they run for real).
    const armed: number[] = [];
    const setTimer = fx.clock.setTimer;
    fx.clock.setTimer = (fn, ms) => {
      armed.push(ms);
      return setTimer(fn, ms);
    };
    const timesArmed = (ms: number) => armed.filter((a) => a === ms).length;
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("down", () => fx.host.lifecycle === "RESTARTING");
    await waitFor("the restart timer fired twice", () => timesArmed(100) >= 3);
    assert.equal(fx.host.lifecycle, "RESTARTING", "the backoff has not elapsed on the clock");
    assert.equal(fx.host.supervision().next_restart_in_ms, 100);
    // Announced once, however often the timer was armed again.
    assert.deepEqual(fx.lines.filter((l) => l.includes("restart attempt 1/3 in")).length, 1);
    assert.match(fx.lines.find((l) => l.includes("restart attempt 1/3 in"))!, /in 100 ms$/);
    fx.clock.mono = 10_100;
    await waitFor("restarted", () => fx.host.available);
    assert.notEqual(fx.host.session!.pid, pid);
    assert.equal(fx.host.lifecycle, "RECOVERING");
    // success_reset_ms (200) of healthy running ends the streak, on the same clock: an answer
    // before it keeps the streak, one after it ends it.
    fx.host.noteLiveness(true);
    assert.equal(fx.host.lifecycle, "RECOVERING");
    fx.clock.mono = 10_300;
    fx.host.noteLiveness(true);
    assert.equal(fx.host.lifecycle, "RUNNING");
    assert.equal(fx.host.supervision().attempt_count, 0);
  }, { mono: 10_000, restart: { backoffMs: [100, 100, 100], successResetMs: 200 } });
});

Deno.test("ProviderHost: a restart budget is used up when the elapsed time reaches it", async () => {
  // The monotonic clock stands still: the attempt's elapsed time is 0 ms, its budget 0 ms (spent
  // before its turn to spawn: no process is spawned).
  await withFixture(D0, async (fx) => {
    Deno.kill(fx.host.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => fx.host.lifecycle === "CIRCUIT_OPEN");
    const failures = fx.lines.filter((l) => /restart attempt \d failed/.test(l));
    assert.equal(failures.length, 1);
    assert.match(
      failures[0]!,
      /restart attempt 1 failed: Restart timeout exceeded for provider '[\w-]+' during the wait for its turn to spawn \(0 ms >= restart_policy\.timeout_ms 0 ms\)$/,
    );
    // The operator is told once that supervision gave up.
    assert.deepEqual(circuitOpenLines(fx.lines), [
      "circuit open after 1 failed restart(s); not restarting again",
    ]);
  }, { mono: 10_000, restart: { maxAttempts: 1, backoffMs: [0], timeoutMs: 0 } });
});

/** The log lines (level and message) that say a provider's circuit opened. */
Deno.test("ProviderHost names a configured id of any length cut, in its lines and refusals", async () => {
  // A configured id is any length and any character (the config refuses only "/", "." and ".."):
  // 10 kB, a line break and an ESC in it.
  const id = `p\n\u001b[31m${"x".repeat(10_000)}`;
  const cut = `p\n\u001b[31m${"x".repeat(QUOTED_PROVIDER_ID_CHARS - 7)}\u2026`;
  const scope = `[p\\n\\x1b[31m${"x".repeat(QUOTED_PROVIDER_ID_CHARS - 7)}\u2026]`;
  await withFixture(D0, async (fx) => {
    Deno.kill(fx.host.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => fx.host.lifecycle === "CIRCUIT_OPEN");
    const failure = fx.lines.find((l) => /restart attempt \d failed/.test(l));
    assert.ok(
      failure?.includes(
        `Restart timeout exceeded for provider '${
          cut.replace("\n", "\\n").replace("\u001b", "\\x1b")
        }'`,
      ),
      failure?.slice(0, 300),
    );
    // Every line of the provider is scoped by its id cut and escaped: none is 10 kB, none breaks.
    assert.ok(fx.lines.length > 0);
    for (const line of fx.lines) {
      assert.ok(line.length < 1000, line.slice(0, 300));
      assert.ok(line.includes(scope), line.slice(0, 300));
    }
    // Refused while down, by request, send and sendRead alike.
    const message = `Provider unavailable: ${cut}`;
    await assert.rejects(fx.host.request("read_signals", { device_id: "d0" }), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.equal(e.message, message);
      return true;
    });
    const replies: unknown[] = [];
    fx.host.send("read_signals", { device_id: "d0" }, (err) => replies.push(err));
    fx.host.sendRead(new PreparedRead({ device_id: "d0" }), new SampleBatch(1), (err) => {
      replies.push(err);
    });
    await waitFor("both replied", () => replies.length === 2);
    assert.deepEqual(replies.map((e) => (e as RuntimeError).message), [message, message]);
  }, {
    mono: 10_000,
    providerId: id,
    restart: { maxAttempts: 1, backoffMs: [0], timeoutMs: 0 },
  });
});

function circuitOpenLines(lines: readonly string[]): string[] {
  return lines.filter((l) => l.includes("circuit open")).map((l) => l.replace(/^.*?\] /, ""));
}

Deno.test("ProviderHost with restart_policy disabled stays down after a crash, and says so once", async () => {
  await withFixture(D0, async (fx) => {
    assert.deepEqual(circuitOpenLines(fx.lines), []);
    Deno.kill(fx.host.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => fx.host.lifecycle === "CIRCUIT_OPEN");
    assert.equal(fx.host.available, false);
    assert.equal(fx.host.supervision().attempt_count, 0);
    assert.deepEqual(circuitOpenLines(fx.lines), [
      "restart_policy disabled: provider stays down (circuit open)",
    ]);
    await fx.registry.stopAll(1000);
    assert.equal(circuitOpenLines(fx.lines).length, 1);
  });
});

Deno.test("ProviderHost: a restart whose process cannot be spawned is a failed attempt, said once", async () => {
  const dir = await Deno.makeTempDir();
  const launcher = `${dir}/provider.sh`;
  const file = `${dir}/inventory.json`;
  await Deno.writeTextFile(file, JSON.stringify(D0));
  const inner = programmableProvider("p0", file);
  await Deno.writeTextFile(
    launcher,
    `#!/bin/sh\nexec ${[inner.command, ...inner.args].map((a) => `'${a}'`).join(" ")}\n`,
  );
  await Deno.chmod(launcher, 0o755);
  const lines: string[] = [];
  const registry = new ProviderRegistry([{
    ...programmableProvider("p0", file, { restart: { maxAttempts: 1, backoffMs: [0] } }),
    command: launcher,
    args: [],
  }], {
    spawn: spawnProcess,
    clock: systemClock,
    log: capturingLogger({ level: "warn", now: () => 0, lines }).log,
    bus: new EventBus(),
    cwd: dir,
    shutdownTimeoutMs: 1000,
  });
  try {
    await registry.startAll(30_000, 1000);
    const host = registry.host("p0")!;
    await Deno.remove(launcher);
    Deno.kill(host.session!.pid, "SIGKILL");
    await waitFor("circuit open", () => host.lifecycle === "CIRCUIT_OPEN");
    const failures = lines.filter((l) => l.includes("restart attempt 1 failed"));
    assert.equal(failures.length, 1, lines.join("\n"));
    assert.match(failures[0]!, /restart attempt 1 failed: cannot start provider 'p0' \(/);
  } finally {
    await registry.stopAll(1000);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("ProviderHost.stop during a backoff cancels the restart", async () => {
  await withFixture(D0, async (fx) => {
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("backing off", () => fx.host.supervision().next_restart_in_ms !== null);
    await fx.registry.stopAll(1000);
    assert.equal(fx.host.state.phase, "STOPPED");
    assert.equal(fx.host.supervision().next_restart_in_ms, null);
  }, { restart: { backoffMs: [60_000, 60_000, 60_000] } });
});

Deno.test("ProviderHost after endRestarts (the runtime's stop begun): a crash leaves it down, STOPPED, spawning nothing; a restart pending in backoff is cancelled", async () => {
  let spawned = 0;
  const spawn: SpawnFn = (o) => {
    spawned++;
    return spawnProcess(o);
  };
  await withFixture(D0, async (fx) => {
    fx.registry.endRestarts();
    assert.equal(fx.host.lifecycle, "RUNNING", "the provider up is not touched");
    const pid = fx.host.session!.pid;
    Deno.kill(pid, "SIGKILL");
    await waitFor("down for good", () => fx.host.state.phase === "STOPPED");
    assert.equal(fx.host.available, false);
    assert.equal(fx.host.supervision().next_restart_in_ms, null);
    assert.equal(fx.host.counts().restart_attempts, 0);
    assert.equal(spawned, 1, "no restart spawned");
    // Nothing brings it back: a read-back (the e-stop's, while the stop waits for it) is not
    // read again until verify_timeout_ms, it is unreachable at once.
    const read = await fx.cache.readFresh("p0", "d0", ["x"], 1000);
    assert.equal(read.ok, false);
    assert.equal(!read.ok && read.staysDown, true, JSON.stringify(read));
  }, { spawn, restart: { backoffMs: [0, 0, 0] } });
  await withFixture(D0, async (fx) => {
    Deno.kill(fx.host.session!.pid, "SIGKILL");
    await waitFor("backing off", () => fx.host.supervision().next_restart_in_ms !== null);
    fx.registry.endRestarts();
    assert.equal(fx.host.state.phase, "STOPPED");
    assert.equal(fx.host.supervision().next_restart_in_ms, null, "the restart cancelled");
  }, { restart: { backoffMs: [60_000, 60_000, 60_000] } });
});

Deno.test("ProviderHost after endRestarts: a restart attempt still waiting for its turn to spawn spawns nothing and leaves it down", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(D0));
  let spawned = 0;
  const spawn: SpawnFn = (...args) => {
    spawned++;
    return spawnProcess(...args);
  };
  // Spawns at once, except while the test holds the turn (a queue behind a restart storm).
  let turn: PromiseWithResolvers<void> | null = null;
  let waiting = 0;
  const spawnQueue = {
    run: async <R>(run: () => R) => {
      if (turn !== null) {
        waiting++;
        await turn.promise;
      }
      return run();
    },
  } as unknown as SpawnQueue;
  const host = new ProviderHost(
    programmableProvider("p0", file, { restart: { backoffMs: [0, 0, 0] } }),
    {
      spawn,
      spawnQueue,
      clock: systemClock,
      log: testLogger(),
      bus: new EventBus(),
      cwd: Deno.cwd(),
      shutdownTimeoutMs: 1000,
    },
  );
  const held = Promise.withResolvers<void>();
  try {
    await host.start();
    turn = held;
    Deno.kill(host.session!.pid, "SIGKILL");
    await waitFor("the restart attempt waiting for its turn", () => waiting === 1);
    assert.equal(host.state.phase, "ATTEMPTING");
    host.endRestarts();
    held.resolve();
    await waitFor("down for good", () => host.state.phase === "STOPPED");
    assert.equal(spawned, 1, "the attempt spawned nothing at its turn");
    assert.equal(host.available, false);
  } finally {
    held.resolve();
    await host.stop(1000);
    await Deno.remove(file);
  }
});

/**
 * What a host needs on a clock that moves only when the test moves it (the deadlines are read off
 * the timers armed), with a shutdown_timeout_ms of 60 s; its WARN lines land in `lines`.
 */
function manualDeps(clock: ManualClock, lines: string[]) {
  return {
    spawn: spawnProcess,
    clock,
    log: capturingLogger({ level: "warn", now: () => 0, lines }).log,
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 60_000,
  };
}

Deno.test("ProviderHost ends a provider that failed to start within 2 s, whatever shutdown_timeout_ms allows", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify({ ...D0, hello: { protocol: "v0" } }));
  // Ignores SIGTERM (and so does what it runs once the provider is gone): only SIGKILL ends it.
  const cfg = programmableProvider("p0", file, { sh: "trap '' TERM; PROVIDER; exec sleep 1000" });
  // Time moves only when the test moves it: the deadlines are read off the timers armed.
  const clock = new ManualClock();
  const lines: string[] = [];
  const registry = new ProviderRegistry([cfg], manualDeps(clock, lines));
  const elapse = (ms: number, what: string) => elapseOn(clock, ms, what);
  let settled = false;
  const start = registry.host("p0")!.start().finally(() => settled = true);
  start.catch(() => {}); // asserted below
  try {
    await elapse(500, "the wait for the provider's last stderr lines");
    // Stdin closed: 60 % of 2 s (not of 60 s) for the process to exit on its own, ...
    await elapse(1200, "the exit deadline");
    // ... then 30 % after SIGTERM, which it ignores, ...
    await waitFor("SIGTERM sent", () => lines.some((l) => l.includes("sending SIGTERM")));
    assert.match(lines.join("\n"), /provider did not exit after stdin closed; sending SIGTERM/);
    await elapse(600, "the SIGTERM deadline");
    // ... then SIGKILL: 1.8 s of the 2 s.
    assert.equal(settled, false, "the start failed before the process was gone");
    await assert.rejects(start, /provider speaks protocol 'v0'/);
    assert.ok(lines.some((l) => l.includes("ignored SIGTERM; sending SIGKILL")), lines.join("\n"));
    assert.deepEqual(clock.pendingDelays(), []);
  } finally {
    // After a failure above, the start still ends its process: its deadlines pass as armed.
    await settleMovingTime(clock, start.catch(() => {}).then(() => registry.stopAll(1000)));
    await Deno.remove(file);
  }
});

Deno.test("ProviderHost.stop called while a stop runs resolves once the process has ended, not at once", async () => {
  await withFixture({ ...D0, exitDelayMs: 500 }, async (fx) => {
    const pid = fx.host.session!.pid;
    const first = fx.host.stop(5000);
    // A second stop (a shutdown during a reload's stop, say) finds the session already gone.
    await fx.host.stop(5000);
    assert.equal(processAlive(pid), false, "the second stop waited for the process");
    await first;
  });
});

Deno.test("ProviderHost.stop called again with a shorter budget (a hurried stop joining a failed start's or a reload's) kills what the first stop still ends once that budget runs out", async () => {
  // Time moves only when the test moves it: the deadlines are read off the timers armed.
  const manual = new ManualClock();
  // Lives on past stdin's close, ignoring SIGTERM: only SIGKILL ends it.
  const fx = await startProgrammable(D0, { manual, sh: "trap '' TERM; PROVIDER; exec sleep 1000" });
  const pid = fx.host.session!.pid;
  let settled = false;
  const first = fx.host.stop(60_000).finally(() => settled = true);
  try {
    const second = fx.host.stop(1000);
    // Its 1 s runs out long before the first stop's 36 s share for stdin's close.
    await elapseOn(manual, 1000, "the later stop's budget");
    await waitFor("the stop ended", () => settled);
    await second;
    assert.equal(processAlive(pid), false, "the provider is gone when the stop ends");
    assert.ok(
      fx.lines.some((l) => l.includes("not exited within a later stop's budget (1000 ms")),
      fx.lines.join("\n"),
    );
  } finally {
    await settleMovingTime(manual, first);
    await fx.close();
  }
});

Deno.test("ProviderHost.killStopping (a second stop signal during the runtime's stop) kills what the stop still ends at once, and nothing before a stop", async () => {
  // Time moves only when the test moves it: only the kill may end the stop.
  const manual = new ManualClock();
  // Lives on past stdin's close, ignoring SIGTERM: only SIGKILL ends it.
  const fx = await startProgrammable(D0, { manual, sh: "trap '' TERM; PROVIDER; exec sleep 1000" });
  const pid = fx.host.session!.pid;
  let settled = false;
  fx.host.killStopping(); // not stopping yet: nothing to kill
  assert.equal(processAlive(pid), true, "no stop under way: the provider is left running");
  const stopping = fx.host.stop(60_000).finally(() => settled = true);
  try {
    fx.host.killStopping();
    await waitFor("the stop ended", () => settled);
    assert.equal(processAlive(pid), false, "the provider is gone when the stop ends");
    assert.ok(
      fx.lines.some((l) =>
        l.includes("the runtime's stop was hurried by a second stop signal: sending SIGKILL")
      ),
      fx.lines.join("\n"),
    );
    assert.ok(!fx.lines.some((l) => l.includes("sending SIGTERM")), fx.lines.join("\n"));
  } finally {
    await settleMovingTime(manual, stopping);
    await fx.close();
  }
});

Deno.test("ProviderHost.send while down replies UNAVAILABLE, never synchronously", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  const registry = registryOf(file);
  try {
    const replies: unknown[] = [];
    registry.host("p0")!.send(
      "read_signals",
      { device_id: "d0", signal_ids: ["x"] },
      (err, answer) => replies.push(err ?? answer),
    );
    assert.equal(replies.length, 0, "not within the call");
    await Promise.resolve();
    assert.equal(replies.length, 1);
    const err = replies[0];
    assert.ok(err instanceof RuntimeError);
    assert.deepEqual([err.code, err.message], ["UNAVAILABLE", "Provider unavailable: p0"]);
  } finally {
    await registry.stopAll(1000);
    await Deno.remove(file);
  }
});

Deno.test("ProviderHost tells inventory listeners whether a restart's discovery changed the inventory", async () => {
  await withFixture(D0, async (fx) => {
    const seen: Array<[string[], boolean]> = [];
    fx.host.onInventory((devices, changed) =>
      seen.push([devices.flatMap((d) => d.signals.map((s) => s.signalId)), changed])
    );
    const restart = async (n: number) => {
      const pid = fx.kill();
      await waitFor(`restart ${n}`, () => seen.length === n && fx.host.session?.pid !== pid);
    };
    await restart(1); // the same inventory again
    await fx.setInventory({
      devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }, { id: "y", type: T.INT64 }] } },
    });
    await restart(2);
    await restart(3); // that one again
    assert.deepEqual(seen, [[["x"], false], [["x", "y"], true], [["x", "y"], false]]);
    // Up with devices is said at INFO with their handles (without any: a WARN, not ready).
    assert.ok(
      fx.lines.some((l) =>
        l.startsWith("INFO") && l.endsWith(`up: 1 device(s): "${fx.host.id}/d0"`)
      ),
      fx.lines.join("\n"),
    );
  }, { restart: { backoffMs: [0, 0, 0], maxAttempts: 10 } });
});

Deno.test("ProviderHost's start-up lines quote a Hello name holding a quote and a line break, and each device as quoteDeviceHandle, its id cut to QUOTED_DEVICE_ID_CHARS", async () => {
  // (A device id with a line break is refused at discovery: hasControlCharacter.)
  const forged = 'd"0 ERROR forged';
  const long = "L".repeat(10_000);
  const devices = {
    [forged]: { signals: [{ id: "x", type: T.DOUBLE }] },
    [long]: { signals: [{ id: "x", type: T.DOUBLE }] },
  };
  await withFixture({ hello: { name: 'sim"\nERROR forged', version: "1" }, devices }, (fx) => {
    const hello = fx.lines.find((l) => l.includes("hello: "))!;
    assert.match(hello, /hello: "sim\\"\\nERROR forged" "1" \(pid \d+\)$/);
    const up = fx.lines.find((l) => l.includes("up: 2 device(s)"))!;
    const p = fx.host.id;
    // The same rule as the state cache's and the call router's lines name a device by.
    assert.ok(
      up.endsWith(
        `up: 2 device(s): "${p}/d\\"0 ERROR forged", ` +
          `"${p}/${"L".repeat(QUOTED_DEVICE_ID_CHARS)}\u2026"`,
      ),
      up.slice(0, 300),
    );
    return Promise.resolve();
  });
});

Deno.test("ProviderHost's ready line quotes the init_time_ms a provider reports, cut to PROVIDER_TEXT_CHARS", async () => {
  const long = `1"\nERROR forged ${"9".repeat(10_000)}`;
  await withFixture({
    hello: { metadata: { supports_wait_ready: "true" } },
    waitReady: { diagnostics: { init_time_ms: long } },
    devices: { d0: { signals: [{ id: "x", type: T.DOUBLE }] } },
  }, (fx) => {
    const ready = fx.lines.filter((l) => l.includes("ready (init_time_ms "));
    assert.equal(ready.length, 1, fx.lines.join("\n").slice(0, 2000));
    assert.ok(
      ready[0]!.endsWith(
        `ready (init_time_ms ${JSON.stringify(`${long.slice(0, PROVIDER_TEXT_CHARS)}\u2026`)})`,
      ),
      ready[0]!.slice(0, 300),
    );
    return Promise.resolve();
  });
});

Deno.test("ProviderHost shows the stderr lines of a provider that is still starting", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(
    file,
    JSON.stringify({ ...D0, stderr: ["booting the bus"], hello: { hang: true } }),
  );
  const registry = registryOf(file);
  const host = registry.host("p0")!;
  assert.deepEqual(host.stderrTail, [], "no process yet");
  const start = host.start().catch((e) => e);
  try {
    await waitFor("the line", () => host.stderrTail.includes("booting the bus"));
    assert.equal(host.available, false, "still starting");
  } finally {
    await registry.stopAll(1000);
    await start;
    await Deno.remove(file);
  }
});

Deno.test("ProviderHost refuses an inventory its admission check refuses: FAILED_PRECONDITION with the reason, the process ended within 2 s; without a check it starts", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(D0));
  // Ignores SIGTERM: only SIGKILL, at 1.8 s of the 2 s cap, ends it.
  const cfg = programmableProvider("p0", file, { sh: "trap '' TERM; PROVIDER; exec sleep 1000" });
  const clock = new ManualClock();
  const lines: string[] = [];
  const deps = manualDeps(clock, lines);
  const asked: string[] = [];
  const refused = new ProviderHost(cfg, {
    ...deps,
    admit: (id, devices) => {
      asked.push(`${id}: ${devices.map((d) => d.device.deviceId).join(",")}`);
      return "claim 'gpio:4' held by p9/relay";
    },
  });
  let settled = false;
  const start = refused.start().finally(() => settled = true);
  start.catch(() => {}); // asserted below
  const elapse = (ms: number, what: string) => elapseOn(clock, ms, what);
  try {
    await elapse(1200, "the exit deadline (60 % of 2 s, not of 60 s)");
    await elapse(600, "the SIGTERM deadline");
    await assert.rejects(start, (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.deepEqual([e.code, e.message], [
        "FAILED_PRECONDITION",
        "claim 'gpio:4' held by p9/relay",
      ]);
      return true;
    });
    assert.equal(settled, true);
    assert.deepEqual(asked, ["p0: d0"]);
    assert.equal(refused.available, false);
    assert.ok(lines.some((l) => l.includes("ignored SIGTERM; sending SIGKILL")), lines.join("\n"));

    // No admission check at all (a host outside a registry): the inventory is committed.
    const plain = new ProviderHost(programmableProvider("p1", file), deps);
    await settleOn(clock, plain.start());
    assert.equal(plain.available, true);
    await settleMovingTime(clock, plain.stop(1000));
  } finally {
    await settleMovingTime(clock, start.catch(() => {}).then(() => refused.stop(1000)));
    await Deno.remove(file);
  }
});

Deno.test("ProviderHost.start(budget) fails once the budget runs out while it waits for its turn to spawn, and spawns nothing at that turn", async () => {
  const file = await Deno.makeTempFile({ suffix: ".json" });
  await Deno.writeTextFile(file, JSON.stringify(D0));
  const clock = new ManualClock();
  const lines: string[] = [];
  let spawned = 0;
  const spawn: SpawnFn = (...args) => {
    spawned++;
    return spawnProcess(...args);
  };
  // Its turn comes when the test says (a queue behind a restart storm: up to MAX_QUEUED_SPAWNS
  // paced spawns ahead of it).
  const turn = Promise.withResolvers<void>();
  const spawnQueue = {
    run: <R>(run: () => R) => turn.promise.then(run),
  } as unknown as SpawnQueue;
  const host = new ProviderHost(programmableProvider("p0", file), {
    ...manualDeps(clock, lines),
    spawn,
    spawnQueue,
  });
  let settled = false;
  const start = host.start({ ms: 3000, setting: "runtime.startup_timeout_ms" })
    .finally(() => settled = true);
  start.catch(() => {}); // asserted below
  try {
    await new Promise((r) => setTimeout(r, 10));
    clock.advance(3000);
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(settled, true, "the start failed at its budget, still waiting for its turn");
    await assert.rejects(
      start,
      /provider start not complete within runtime\.startup_timeout_ms \(3000 ms\) during the wait for its turn to spawn \(3000 ms\)/,
    );
    turn.resolve();
    await new Promise((r) => setTimeout(r, 10));
    assert.equal(spawned, 0, "no process spawned for a start that already failed");
    assert.equal(host.available, false);
  } finally {
    turn.resolve();
    await settleMovingTime(clock, start.catch(() => {}).then(() => host.stop(1000)));
    await Deno.remove(file);
  }
});

/**
 * A provider's stdout as the runtime reads it, counted: `ended` settles once the runtime read it to
 * its close ("closed") or gave it up ("cancelled"). The stream pulls only when the runtime asks for
 * more, so once it has read the close every chunk before it has been dispatched.
 */
function watchedOutput(source: ReadableStream<Uint8Array>) {
  const reader = source.getReader();
  const end = Promise.withResolvers<"closed" | "cancelled">();
  const out = {
    bytes: 0,
    ended: end.promise,
    stream: new ReadableStream<Uint8Array>({
      async pull(c) {
        const { done, value } = await reader.read();
        if (done) {
          c.close();
          end.resolve("closed");
          return;
        }
        out.bytes += value.byteLength;
        c.enqueue(value);
      },
      cancel(reason) {
        end.resolve("cancelled");
        return reader.cancel(reason);
      },
    }, { highWaterMark: 0 }),
  };
  return out;
}

Deno.test("ProviderHost.stop during a restart's discovery: the answers that still arrive bring nothing up", async () => {
  // The restarted process answers DescribeDevice after 1000 ms, and still does after stdin closed
  // (it finishes the request in hand, then exits). stop() closes the session's client first: the
  // request in hand fails at once and the late answer goes nowhere. (The check after discovery
  // in #bringUp covers a stop() between discovery's end and its continuation, which no test
  // reaches from outside: docs/mutation-report.md.)
  const outputs: ReturnType<typeof watchedOutput>[] = [];
  const spawn: SpawnFn = (o) => {
    const p = spawnProcess(o);
    const stdout = watchedOutput(p.stdout);
    outputs.push(stdout);
    return {
      pid: p.pid,
      stdin: p.stdin,
      stdout: stdout.stream,
      stderr: p.stderr,
      exited: p.exited,
      kill: (signal) => p.kill(signal),
    };
  };
  const timers = openTimerLedger(ADPP_DEADLINE_TIMER);
  await withFixture(D0, async (fx) => {
    const described = await Deno.makeTempFile();
    try {
      await fx.setInventory({
        ...D0,
        describeDelayMs: 1000,
        exitDelayMs: 1300,
        describedFile: described,
      });
      const told: number[] = [];
      fx.host.onInventory((devices) => told.push(devices.length));
      Deno.kill(fx.host.session!.pid, "SIGKILL");
      await waitFor(
        "restart attempt discovering",
        () => fx.lines.some((l) => /restart attempt 1\/3 in/.test(l)),
      );
      // The handshake done, DescribeDevice in hand (not a fixed sleep: a loaded machine starts
      // the process later).
      await waitFor(
        "DescribeDevice in hand",
        async () => await Deno.readTextFile(described) !== "",
      );
      assert.equal(await Deno.readTextFile(described), "d0\n");
      const before = fx.lines.length;
      const output = outputs.at(-1)!;
      const bytesBefore = output.bytes;
      await fx.registry.stopAll(3000);
      // Not a pause hoping nothing shows: the late answer has reached the runtime (its stdout read
      // to the close, every chunk dispatched), and nothing is armed to happen later.
      assert.equal(await output.ended, "closed", "the provider's stdout read to its close");
      assert.ok(output.bytes > bytesBefore, "the late DescribeDevice answer reached the runtime");
      assert.deepEqual(timers.pending(), [], "nothing armed after stop()");
      assert.deepEqual(told, [], "no inventory told after stop()");
      const after = fx.lines.slice(before).filter((l) => !l.startsWith("DEBUG"));
      assert.deepEqual(after, [], "neither an up line nor a provider down");
      assert.equal(fx.host.available, false);
      assert.equal(fx.host.session, null);
    } finally {
      await Deno.remove(described);
    }
  }, { restart: { backoffMs: [0, 0, 0] }, spawn }).finally(() => timers.close());
});

Deno.test("ProviderHost's start-up lines quote what a provider says cut to a bound: its Hello name and version, and at most 20 device ids", async () => {
  const devices: Record<string, { signals: { id: string; type: number }[] }> = {};
  for (let i = 0; i < 30; i++) devices[`dev${i}`] = { signals: [{ id: "x", type: T.DOUBLE }] };
  const long = "n".repeat(5000);
  await withFixture({ hello: { name: long, version: long }, devices }, (fx) => {
    const hello = fx.lines.find((l) => l.includes("hello: "))!;
    assert.ok(hello.length < 400, `the hello line is ${hello.length} characters`);
    assert.match(hello, /hello: "n{80}\u2026" "n{80}\u2026" \(pid \d+\)$/);
    const up = fx.lines.find((l) => l.includes("up: 30 device(s)"))!;
    const named = Array.from({ length: 20 }, (_, i) => `"${fx.host.id}/dev${i}"`).join(", ");
    assert.ok(up.endsWith(`up: 30 device(s): ${named} and 10 more`), up);
    return Promise.resolve();
  });
});
