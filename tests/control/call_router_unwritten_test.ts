/**
 * A call whose request could not be written to its provider (the provider closed its stdin: a
 * failed write, EPIPE) while the session still waits for the answer to a request written before:
 * the session has not ended yet (AdppClient: it ends once drained), so the provider still counts
 * as up when the call is sent. Nothing reached the provider: the call is a refusal by
 * `unavailable` on the audit trail (docs/http-api.md, "Audit trail": `refused` -- nothing was
 * sent), not a `failed` call that may have acted, and reachedProvider says so. Nor is it the
 * last call sent of its function: a declared min_interval_ms counts from the calls the provider
 * was sent (docs/http-api.md, "Provider policies").
 *
 * So is a call whose request still waits for a pipe its provider does not read (it stopped reading
 * its stdin: a write is held) at its deadline or at the session's end: taken back, it is never
 * written, so the provider cannot carry it out after its caller was told it failed.
 */
import assert from "node:assert/strict";
import type { ProviderProcess, SpawnFn } from "../../src/common/mod.ts";
import {
  type AuditDecision,
  CallRouter,
  reachedProvider,
  refusedBeforeSending,
} from "../../src/control/mod.ts";
import { spawnProcess } from "../../src/host/mod.ts";
import type { FakeProvider } from "../helpers/fake_provider.ts";
import { testLogger, waitFor } from "../helpers/kernel.ts";
import { type InProcessSpawn, inProcessSpawn } from "../helpers/in_process_provider.ts";
import { policyProvider } from "../helpers/policy_provider.ts";
import { TEST_PROGRAMS } from "../helpers/programs.ts";
import { rig } from "../helpers/rig.ts";
import { d, plantProvider } from "../safety/_fixture.ts";

const SET_FAN = 2;

/**
 * The in-process providers, each with a stdin that goes deaf on demand: the first frame written
 * after `deafen()` is taken and never read (the provider stopped reading), every later write
 * fails, as writes into a pipe whose reader closed it do.
 */
function deafeningSpawn(): { spawn: SpawnFn; deafen(): void } {
  const base = inProcessSpawn(TEST_PROGRAMS, { otherwise: spawnProcess });
  let deaf = false;
  const spawn: SpawnFn = (o) => {
    const proc: ProviderProcess = base.spawn(o);
    const writer = proc.stdin.getWriter();
    let swallowed = false;
    const stdin = new WritableStream<Uint8Array>({
      write(chunk) {
        if (!deaf) return writer.write(chunk);
        if (!swallowed) {
          swallowed = true;
          return;
        }
        throw new Error("Broken pipe (os error 32)");
      },
      close() {
        return writer.close().catch(() => {});
      },
      abort(reason) {
        return writer.abort(reason).catch(() => {});
      },
    });
    return {
      pid: proc.pid,
      stdin,
      stdout: proc.stdout,
      stderr: proc.stderr,
      exited: proc.exited,
      kill: (signal) => proc.kill(signal),
    };
  };
  return { spawn, deafen: () => void (deaf = true) };
}

Deno.test("CallRouter: a call whose request could not be written (the provider went deaf) is refused by `unavailable`, not failed after sending", async () => {
  const spawner = deafeningSpawn();
  await using r = await rig({
    providers: [plantProvider("plant", { timeoutMs: 2000 })],
    host: { spawn: spawner.spawn },
  });
  const rt = r.kernel;
  const entries: AuditDecision[] = [];
  const router = new CallRouter({
    registry: rt.registry,
    cache: rt.cache,
    log: testLogger(),
    clock: r.clock,
  });
  router.setAuditSink({ record: (e) => entries.push(e) });
  const host = rt.registry.host("plant")!;
  spawner.deafen();
  // Written into the pipe, never read: the session waits for its answer (up to timeout_ms).
  const held = host.request("get_health", {}).then(() => "answered", (e) => `${e}`);
  const err = await router.call({
    providerId: "plant",
    deviceId: "plant0",
    functionId: SET_FAN,
    args: { duty: d(0.4) },
    origin: "manual",
  }).then(() => null, (e) => e);
  assert.ok(err !== null, "the call cannot succeed");
  assert.match(`${err}`, /write failed/);
  assert.equal(reachedProvider(err), false, "nothing reached the provider");
  assert.equal(refusedBeforeSending(err), null, "a provider gone is the device's business");
  const fan = entries.filter((e) => e.function === "set_fan");
  assert.equal(fan.length, 1);
  assert.equal(fan[0]!.outcome, "refused");
  assert.equal(fan[0]!.refused_by, "unavailable");
  await held;
});

Deno.test("CallRouter: a call whose request could not be written notes no min_interval_ms: the next one is not refused as called too soon", async () => {
  const spawner = deafeningSpawn();
  // The policy provider's act0 `pulse` declares min_interval_ms 1000; timeout_ms bounds the wait
  // for the request held below.
  await using r = await rig({
    providers: [{ ...policyProvider("pol"), timeoutMs: 2000 }],
    host: { spawn: spawner.spawn },
  });
  const router = new CallRouter({
    registry: r.kernel.registry,
    cache: r.kernel.cache,
    log: testLogger(),
    clock: r.clock,
  });
  const host = r.kernel.registry.host("pol")!;
  spawner.deafen();
  const held = host.request("get_health", {}).then(() => "answered", (e) => `${e}`);
  const pulse = () =>
    router.call({
      providerId: "pol",
      deviceId: "act0",
      functionName: "pulse",
      args: {},
      origin: "manual",
    }).then(() => null, (e) => e);
  const first = await pulse();
  assert.match(`${first}`, /write failed/);
  assert.equal(reachedProvider(first), false);
  // Nothing was sent: the next call is no call sooner than min_interval_ms after the last one
  // sent (it is refused only because the provider still does not read).
  const second = await pulse();
  assert.ok(second !== null, "the provider does not read: the call cannot succeed");
  assert.equal(refusedBeforeSending(second), null, `${second}`);
  assert.doesNotMatch(`${second}`, /min_interval_ms/);
  assert.equal(reachedProvider(second), false);
  await held;
});

/**
 * The in-process providers, each with a stdin that stops being read on demand: after `clog()`,
 * a write is held (as one into a full pipe waits for its reader) until `unclog()` or the process
 * ends (the reader gone: the write then fails, as into a broken pipe). `held` counts the writes
 * held now; `fakes` holds the processes.
 */
function cloggingSpawn(): {
  spawn: SpawnFn;
  fakes: InProcessSpawn;
  clog(): void;
  unclog(): void;
  held(): number;
} {
  const base = inProcessSpawn(TEST_PROGRAMS, { otherwise: spawnProcess });
  let gate: PromiseWithResolvers<void> | null = null;
  let held = 0;
  const unclog = () => {
    gate?.resolve();
    gate = null;
  };
  const spawn: SpawnFn = (o) => {
    const proc: ProviderProcess = base.spawn(o);
    const writer = proc.stdin.getWriter();
    void proc.exited.then(unclog);
    const stdin = new WritableStream<Uint8Array>({
      async write(chunk) {
        if (gate !== null) {
          held++;
          await gate.promise;
          held--;
        }
        return writer.write(chunk);
      },
      close() {
        return writer.close().catch(() => {});
      },
      abort(reason) {
        return writer.abort(reason).catch(() => {});
      },
    });
    return {
      pid: proc.pid,
      stdin,
      stdout: proc.stdout,
      stderr: proc.stderr,
      exited: proc.exited,
      kill: (signal) => proc.kill(signal),
    };
  };
  return {
    spawn,
    fakes: base,
    clog: () => void (gate ??= Promise.withResolvers()),
    unclog,
    held: () => held,
  };
}

/**
 * A router on `r`'s plant, auditing into `entries`, and a get_health handed to a pipe the provider
 * no longer reads (`held`: how it ended): every later frame waits behind it.
 */
async function clogged(
  r: Awaited<ReturnType<typeof rig>>,
  spawner: ReturnType<typeof cloggingSpawn>,
) {
  const entries: AuditDecision[] = [];
  const router = new CallRouter({
    registry: r.kernel.registry,
    cache: r.kernel.cache,
    log: testLogger(),
    clock: r.clock,
  });
  router.setAuditSink({ record: (e) => entries.push(e) });
  const host = r.kernel.registry.host("plant")!;
  spawner.clog();
  const held = host.request("get_health", {}, 10_000).then(() => "answered", (e) => `${e}`);
  await waitFor("a write held by the pipe", () => spawner.held() > 0);
  return { entries, router, host, held };
}

Deno.test("CallRouter: a call still waiting for a pipe its provider does not read at its deadline is refused by `unavailable`, and never reaches the provider when the pipe drains", async () => {
  const spawner = cloggingSpawn();
  await using r = await rig({
    providers: [plantProvider("plant", { timeoutMs: 1000 })],
    host: { spawn: spawner.spawn },
  });
  const { entries, router, host, held } = await clogged(r, spawner);
  const err = await router.call({
    providerId: "plant",
    deviceId: "plant0",
    functionId: SET_FAN,
    args: { duty: d(0.4) },
    origin: "manual",
  }).then(() => null, (e) => e);
  assert.ok(err !== null, "the call cannot succeed");
  // The provider reads again: what was handed to the pipe is answered, the call never arrives
  // (its caller was told it failed: it must not act now).
  spawner.unclog();
  assert.equal(await held, "answered");
  await host.request("get_health", {}, 5000);
  const plant = spawner.fakes.running()[0]!.handler as FakeProvider;
  assert.equal(plant.count("call"), 0, "the call was never written");
  assert.match(`${err}`, /could not be written within 1000 ms .*never sent/);
  assert.equal(err.code, "UNAVAILABLE", "refused as a provider down is, not a timeout");
  assert.equal(reachedProvider(err), false, "nothing reached the provider");
  const fan = entries.filter((e) => e.function === "set_fan");
  assert.equal(fan.length, 1);
  assert.equal(fan[0]!.outcome, "refused");
  assert.equal(fan[0]!.refused_by, "unavailable");
});

Deno.test("CallRouter: a call still waiting for a pipe its provider does not read when its session ends is refused by `unavailable`, not failed after sending", async () => {
  const spawner = cloggingSpawn();
  await using r = await rig({
    providers: [plantProvider("plant", { timeoutMs: 5000 })],
    host: { spawn: spawner.spawn },
  });
  const { entries, router, held } = await clogged(r, spawner);
  let sent = false;
  const call = router.call({
    providerId: "plant",
    deviceId: "plant0",
    functionId: SET_FAN,
    args: { duty: d(0.4) },
    origin: "manual",
    onSent: () => void (sent = true),
  }).then(() => null, (e) => e);
  await waitFor("the call handed to the session", () => sent);
  // The provider dies with the call's frame still waiting for the pipe: its session ends.
  spawner.fakes.running()[0]!.kill("SIGKILL");
  const err = await call;
  assert.ok(err !== null, "the call cannot succeed");
  assert.match(`${err}`, /provider session ended/);
  assert.equal(reachedProvider(err), false, "nothing reached the provider");
  const fan = entries.filter((e) => e.function === "set_fan");
  assert.equal(fan.length, 1);
  assert.equal(fan[0]!.outcome, "refused");
  assert.equal(fan[0]!.refused_by, "unavailable");
  assert.match(await held, /provider session ended/, "handed to the pipe: it may have been read");
});
