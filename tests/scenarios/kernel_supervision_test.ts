import assert from "node:assert/strict";
import { RuntimeError, type TypedValue } from "../../src/common/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { processAlive, recordEvents, startArmed, waitFor } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { scriptedProvider } from "./process_helpers.ts";

function chaos(
  rt: Kernel,
  providerId: string,
  functionName: string,
  args: Record<string, TypedValue> = {},
) {
  return rt.router.call({
    providerId,
    deviceId: "chaos_control",
    functionName,
    args,
    origin: "manual",
  });
}

Deno.test("a provider killed with SIGKILL restarts after its backoff and its devices come back", async () => {
  const rt = await startArmed(
    testConfig({ providers: [simProvider("sim0", { restart: { backoffMs: [300, 300, 300] } })] }),
  );
  const rec = recordEvents(rt);
  try {
    const host = rt.registry.host("sim0")!;
    const oldPid = host.session!.pid;
    Deno.kill(oldPid, "SIGKILL");
    await waitFor("UNAVAILABLE", () => !host.available);
    assert.equal(host.lifecycle, "RESTARTING");
    const sup = host.supervision();
    assert.equal(sup.attempt_count, 1);
    assert.equal(sup.crash_detected, true);
    assert.ok(sup.next_restart_in_ms !== null && sup.next_restart_in_ms <= 300);
    // Signals keep their last values but are reported UNAVAILABLE while the provider is down.
    assert.equal(rt.cache.signal("sim0", "tempctl0", "tc1_temp")?.quality, "UNAVAILABLE");
    assert.equal(rt.cache.deviceQuality(rt.cache.device("sim0", "tempctl0")!), "UNAVAILABLE");
    await waitFor("restart", () => host.available);
    assert.notEqual(host.session!.pid, oldPid);
    assert.equal(host.lifecycle, "RECOVERING");
    await waitFor(
      "fresh samples",
      () => rt.cache.signal("sim0", "tempctl0", "tc1_temp")?.quality === "OK",
    );
    assert.equal(rt.registry.devices().length, 5, "devices rediscovered");
    await waitFor("streak reset after success_reset_ms", () => host.lifecycle === "RUNNING", 5000);
    const kinds = rec.events.map((e) => e.kind);
    const healthChanges = rec.events.filter((e) => e.kind === "provider_health_change");
    assert.deepEqual(healthChanges.map((e) => e.kind === "provider_health_change" && e.state), [
      "UNAVAILABLE",
      "AVAILABLE",
    ]);
    assert.ok(kinds.includes("device_availability"));
    assert.ok(
      rec.events.some((e) => e.kind === "quality_change" && e.new_quality === "UNAVAILABLE"),
    );
    assert.ok(
      rec.events.some((e) =>
        e.kind === "quality_change" && e.old_quality === "UNAVAILABLE" && e.new_quality === "OK"
      ),
    );
    assert.equal(processAlive(oldPid), false);
  } finally {
    rec.stop();
    await rt.stop();
  }
});

Deno.test("a provider that keeps crashing opens the circuit after max_attempts restarts", async () => {
  const rt = await startArmed(testConfig({
    providers: [simProvider("sim0", {
      extraArgs: ["--crash-after", "0.4"],
      restart: { maxAttempts: 2, backoffMs: [50, 50], successResetMs: 60000 },
    })],
  }));
  try {
    const host = rt.registry.host("sim0")!;
    await waitFor("circuit open", () => host.lifecycle === "CIRCUIT_OPEN", 20000);
    const sup = host.supervision();
    assert.equal(sup.circuit_open, true);
    assert.equal(sup.attempt_count, 3);
    assert.equal(sup.next_restart_in_ms, null);
    assert.equal(host.available, false);
    await assert.rejects(
      rt.router.call({
        providerId: "sim0",
        deviceId: "relayio0",
        functionId: 1,
        args: { enabled: { type: "bool", bool: false } },
        origin: "manual",
      }),
      (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE",
    );
  } finally {
    await rt.stop();
  }
});

Deno.test("restart_policy disabled: the first crash opens the circuit", async () => {
  const rt = await startArmed(
    testConfig({ providers: [simProvider("sim0", { restart: false })] }),
  );
  try {
    const host = rt.registry.host("sim0")!;
    await chaos(rt, "sim0", "crash", { exit_code: { type: "int64", int64: 7 } }).catch(() => {});
    await waitFor("circuit open", () => host.lifecycle === "CIRCUIT_OPEN");
    assert.equal(host.supervision().enabled, false);
  } finally {
    await rt.stop();
  }
});

Deno.test("a hung provider is detected by failing liveness checks and restarted", async () => {
  const rt = await startArmed(testConfig({
    pollingIntervalMs: 100,
    providers: [simProvider("sim0", { timeoutMs: 300 })],
  }));
  try {
    const host = rt.registry.host("sim0")!;
    const pid = host.session!.pid;
    await chaos(rt, "sim0", "hang", { duration_ms: { type: "int64", int64: 0 } });
    await waitFor("declared unresponsive", () => !host.available, 10000);
    await waitFor("restarted", () => host.available && host.session!.pid !== pid, 10000);
    await waitFor("old process gone", () => !processAlive(pid));
  } finally {
    await rt.stop();
  }
});

Deno.test("one slow call answers DEADLINE_EXCEEDED without restarting the provider", async () => {
  const rt = await startArmed(
    testConfig({ providers: [simProvider("sim0", { timeoutMs: 400 })] }),
  );
  try {
    const host = rt.registry.host("sim0")!;
    const pid = host.session!.pid;
    await chaos(rt, "sim0", "inject_call_latency", {
      device_id: { type: "string", string: "relayio0" },
      latency_ms: { type: "int64", int64: 600 },
    });
    await assert.rejects(
      rt.router.call({
        providerId: "sim0",
        deviceId: "relayio0",
        functionId: 1,
        args: { enabled: { type: "bool", bool: true } },
        origin: "manual",
      }),
      (e) => e instanceof RuntimeError && e.code === "DEADLINE_EXCEEDED",
    );
    await chaos(rt, "sim0", "clear_faults");
    // The late reply was discarded by request id; the same session keeps serving.
    const r = await rt.router.call({
      providerId: "sim0",
      deviceId: "relayio0",
      functionId: 1,
      args: { enabled: { type: "bool", bool: false } },
      origin: "manual",
    });
    assert.equal(r.functionName, "set_relay_ch1");
    assert.equal(host.session!.pid, pid);
    assert.equal(host.supervision().attempt_count, 0);
  } finally {
    await rt.stop();
  }
});

for (const fault of ["send_garbage_frame", "send_oversize_frame"]) {
  Deno.test(`a ${fault.replace("send_", "").replaceAll("_", " ")} ends only that provider's session`, async () => {
    const rt = await startArmed(
      testConfig({ providers: [simProvider("sim0"), simProvider("sim1")] }),
    );
    try {
      const a = rt.registry.host("sim0")!;
      const b = rt.registry.host("sim1")!;
      const pidA = a.session!.pid;
      const pidB = b.session!.pid;
      await assert.rejects(
        chaos(rt, "sim0", fault),
        (e) => e instanceof RuntimeError && e.code === "UNAVAILABLE",
      );
      await waitFor("sim0 restarted", () => a.available && a.session!.pid !== pidA);
      assert.equal(b.session!.pid, pidB);
      assert.equal(b.supervision().attempt_count, 0);
      assert.equal(processAlive(pidA), false);
    } finally {
      await rt.stop();
    }
  });
}

Deno.test("two providers: while one is down the other keeps serving state and calls", async () => {
  const rt = await startArmed(testConfig({
    providers: [
      simProvider("sim0", { restart: { backoffMs: [60000, 60000, 60000] } }),
      simProvider("sim1"),
    ],
  }));
  try {
    Deno.kill(rt.registry.host("sim0")!.session!.pid, "SIGKILL");
    await waitFor("sim0 down", () => !rt.registry.host("sim0")!.available);
    const before = rt.cache.device("sim1", "motorctl0")!.lastPollMs;
    await rt.router.call({
      providerId: "sim1",
      deviceId: "motorctl0",
      functionId: 10,
      args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.5 } },
      origin: "manual",
    });
    assert.deepEqual(rt.cache.signal("sim1", "motorctl0", "motor1_duty")?.value, {
      type: "double",
      double: 0.5,
    });
    await waitFor(
      "sim1 keeps polling",
      () => rt.cache.device("sim1", "motorctl0")!.lastPollMs > before,
    );
    assert.equal(rt.cache.deviceQuality(rt.cache.device("sim1", "motorctl0")!), "OK");
    assert.equal(rt.cache.deviceQuality(rt.cache.device("sim0", "motorctl0")!), "UNAVAILABLE");
  } finally {
    await rt.stop();
  }
});

Deno.test("a provider that hangs soon after every restart is not 'healthy running': its failures in a row open the circuit", async () => {
  // Each process answers one ReadSignals (the priming poll, or the poll right after a restart),
  // then never answers again: it is found unresponsive (two polls unanswered within timeout_ms)
  // long after success_reset_ms has passed on the clock.
  const p = scriptedProvider("probe", ["--hang-after-reads", "1"], { timeoutMs: 1000 });
  const rt = await startArmed(testConfig({
    pollingIntervalMs: 100,
    providers: [{
      ...p,
      restartPolicy: {
        enabled: true,
        maxAttempts: 2,
        backoffMs: [50, 50],
        timeoutMs: 30000,
        successResetMs: 1500,
      },
    }],
  }));
  try {
    const host = rt.registry.host("probe")!;
    // The first process, then one per restart: three failures in a row with max_attempts 2.
    await waitFor("three failures", () => host.counts().failures >= 3, 30_000);
    assert.equal(host.lifecycle, "CIRCUIT_OPEN");
    assert.equal(host.counts().restart_attempts, 2);
    assert.equal(host.supervision().attempt_count, 3);
  } finally {
    await rt.stop();
  }
});
