/**
 * A second SIGINT/SIGTERM hurries shutdown but never orphans a provider: the runtime (a child
 * process of the test) kills its providers at once and exits only after they are gone. One Ctrl-C
 * delivered twice (the terminal signals the whole foreground process group, and `deno task`
 * forwards the SIGINT it got to the runtime as well) is one stop: the providers still get their
 * graceful stop and apply their safe state.
 */
import assert from "node:assert/strict";
import { STOP_SIGNAL_REPEAT_WINDOW_MS } from "../../src/app/process.ts";
import {
  killLeftovers,
  processAlive,
  providerYaml,
  readScriptedLog,
  type RuntimeProcess,
  runtimeStatus,
  scriptedCommand,
  startRuntimeOnFreePort,
  waitFor,
  within,
  writeRuntimeConfig,
} from "./process_helpers.ts";

Deno.test("a second stop signal kills a provider that ignores stdin EOF and SIGTERM, and the runtime exits only once it is gone", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-signals-" });
  const log = `${dir}/provider.log`;
  // A long shutdown budget: without the second signal the stop ladder would wait 9 s for it.
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    await Deno.remove(log).catch(() => {}); // a try that lost its port to a stranger
    return await writeRuntimeConfig(dir, {
      port,
      runtime: "  shutdown_timeout_ms: 10000\n",
      providers: providerYaml(
        "stubborn",
        scriptedCommand(["--log", log, "--ignore-sigterm", "--ignore-stdin-eof", "--spawn-helper"]),
      ),
    });
  });
  try {
    assert.ok(await runtimeStatus(port), "API answering");
    const { pids, helpers } = readScriptedLog(log);
    assert.equal(pids.length, 1);
    assert.equal(helpers.length, 1);
    rt.child.kill("SIGINT");
    await gracefulStopReached(log);
    assert.ok(processAlive(pids[0]!), "the provider is still being stopped after the first signal");
    rt.child.kill("SIGTERM");
    const exit = await within(rt.exit, 5000);
    if (exit === "timeout") assert.fail("the second signal must hurry shutdown");
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(processAlive(pids[0]!), false, "the provider is gone when the runtime has exited");
    await waitFor("helper gone", () => !processAlive(helpers[0]!), 2000);
  } finally {
    await rt.dispose();
    const { pids, helpers } = readScriptedLog(log);
    killLeftovers([...pids, ...helpers]);
    await Deno.remove(dir, { recursive: true });
  }
});

/** Waits until the runtime has logged taking the first SIGINT (bounded: a runtime deaf to it fails). */
async function firstSignalTaken(rt: RuntimeProcess): Promise<void> {
  const taken = await within(rt.stderrLine(/SIGINT received: shutting down/), 30_000);
  if (taken === "timeout") assert.fail("the runtime did not take the first SIGINT");
}

/**
 * Waits until the runtime's graceful stop has reached a provider run with --ignore-stdin-eof (its
 * stdin closed: the ADPP stop signal, the ladder's first step; bounded): a first signal that
 * killed the provider at once would end it before, and it would log nothing.
 */
async function gracefulStopReached(log: string): Promise<void> {
  await waitFor(
    "the provider's stdin closed by the graceful stop",
    () => readScriptedLog(log).stdinEofs > 0,
    30_000,
  );
}

/**
 * How long the provider's safe state takes (`--safe-state-ms`): a provider SIGKILLed by a hurried
 * shutdown is killed well before it, and never logs `safe`.
 */
const SLOW_SAFE_STATE_MS = 1000;

Deno.test("one Ctrl-C delivered twice (to the process group, then forwarded) is one stop: the provider gets its graceful stop, not SIGINT, and applies its safe state", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-signals-" });
  const log = `${dir}/provider.log`;
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    await Deno.remove(log).catch(() => {}); // a try that lost its port to a stranger
    return await writeRuntimeConfig(dir, {
      port,
      runtime: "  shutdown_timeout_ms: 10000\n",
      providers: providerYaml(
        "slow",
        scriptedCommand(["--log", log, "--safe-state-ms", String(SLOW_SAFE_STATE_MS)]),
      ),
    });
  }, { ownProcessGroup: true }); // a foreground job of a terminal leads its own process group
  try {
    assert.ok(await runtimeStatus(port), "API answering");
    // The terminal's Ctrl-C: SIGINT to every process of the foreground group.
    Deno.kill(-rt.child.pid, "SIGINT");
    // `deno task`'s copy, sent once the runtime has taken the first (two pending SIGINTs would
    // be merged into one by the kernel): well within STOP_SIGNAL_REPEAT_WINDOW_MS of it.
    await firstSignalTaken(rt);
    rt.child.kill("SIGINT");
    const exit = await rt.exit;
    assert.equal(exit.code, 0, exit.stderr);
    // stdin_eof: the runtime closed the session (its graceful stop); the provider, in a process
    // group of its own, got no SIGINT; and it was not killed before its safe state was applied.
    assert.deepEqual(readScriptedLog(log).safe, ["stdin_eof"], exit.stderr);
  } finally {
    await rt.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("the same stop signal again after STOP_SIGNAL_REPEAT_WINDOW_MS hurries shutdown: a stubborn provider is killed and the runtime exits", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-signals-" });
  const log = `${dir}/provider.log`;
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    await Deno.remove(log).catch(() => {}); // a try that lost its port to a stranger
    return await writeRuntimeConfig(dir, {
      port,
      runtime: "  shutdown_timeout_ms: 10000\n",
      providers: providerYaml(
        "stubborn",
        scriptedCommand(["--log", log, "--ignore-sigterm", "--ignore-stdin-eof"]),
      ),
    });
  });
  try {
    assert.ok(await runtimeStatus(port), "API answering");
    const { pids } = readScriptedLog(log);
    rt.child.kill("SIGINT");
    await firstSignalTaken(rt);
    await gracefulStopReached(log);
    // The scenario's input, not a proof that nothing happened: the second signal must come
    // after the window, which the runtime timed from before it logged that line (a longer wait
    // under load is still past it).
    await new Promise((r) => setTimeout(r, STOP_SIGNAL_REPEAT_WINDOW_MS + 100));
    assert.ok(processAlive(pids[0]!), "the provider is still being stopped after the first signal");
    rt.child.kill("SIGINT");
    // Without the hurry the stop ladder would wait 9 s for the provider.
    const exit = await within(rt.exit, 5000);
    if (exit === "timeout") assert.fail("the second signal must hurry shutdown");
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(processAlive(pids[0]!), false, "the provider is gone when the runtime has exited");
  } finally {
    await rt.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});
