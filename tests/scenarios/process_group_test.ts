/**
 * A provider runs in its own process group and stopping it stops the group: a helper process the
 * provider spawned (the runtime's grandchild) does not survive a shutdown or a supervised restart.
 */
import assert from "node:assert/strict";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import {
  killLeftovers,
  processAlive,
  providerYaml,
  readScriptedLog,
  runtimeStatus,
  scriptedCommand,
  scriptedProvider,
  startRuntimeOnFreePort,
  waitFor,
  writeRuntimeConfig,
} from "./process_helpers.ts";

/** Process group id of `pid` (from /proc). */
function pgidOf(pid: number): number {
  const stat = Deno.readTextFileSync(`/proc/${pid}/stat`);
  return Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[2]);
}

Deno.test("Runtime.stop ends the helper a provider spawned, with the provider", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-group-" });
  const log = `${dir}/provider.log`;
  const rt = await startRuntime(testConfig({
    providers: [scriptedProvider("helped", ["--log", log, "--spawn-helper"])],
  }));
  try {
    const { pids, helpers } = readScriptedLog(log);
    assert.equal(helpers.length, 1);
    assert.equal(pgidOf(pids[0]!), pids[0], "the provider leads its own process group");
    assert.equal(pgidOf(helpers[0]!), pids[0], "its helper is in that group");
    assert.notEqual(pgidOf(pids[0]!), pgidOf(Deno.pid), "not in the runtime's group");
    await rt.stop();
    assert.equal(processAlive(pids[0]!), false);
    // SIGKILL was sent before stop() resolved; the kernel ends the helper right after.
    await waitFor("helper gone", () => !processAlive(helpers[0]!), 2000);
  } finally {
    await rt.stop();
    const { pids, helpers } = readScriptedLog(log);
    killLeftovers([...pids, ...helpers]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("a supervised restart ends the helper the crashed provider left behind", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-group-" });
  const log = `${dir}/provider.log`;
  const rt = await startRuntime(testConfig({
    providers: [scriptedProvider("helped", ["--log", log, "--spawn-helper"], { restart: true })],
  }));
  try {
    const first = readScriptedLog(log);
    const host = rt.registry.host("helped")!;
    Deno.kill(first.pids[0]!, "SIGKILL"); // the provider alone dies: its helper lives on
    await waitFor("restarted", () => readScriptedLog(log).pids.length === 2 && host.available);
    await waitFor("first helper gone", () => !processAlive(first.helpers[0]!), 5000);
    const second = readScriptedLog(log);
    assert.ok(processAlive(second.helpers[1]!), "the new provider's helper runs");
  } finally {
    await rt.stop();
    const { pids, helpers } = readScriptedLog(log);
    killLeftovers([...pids, ...helpers]);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("after SIGTERM the runtime process exits leaving neither its provider nor the provider's helper", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-group-" });
  const log = `${dir}/provider.log`;
  const { port, rt } = await startRuntimeOnFreePort(async (port) => {
    await Deno.remove(log).catch(() => {}); // a try that lost its port to a stranger
    return await writeRuntimeConfig(dir, {
      port,
      providers: providerYaml("helped", scriptedCommand(["--log", log, "--spawn-helper"])),
    });
  });
  try {
    assert.ok(await runtimeStatus(port), "API answering");
    const { pids, helpers } = readScriptedLog(log);
    rt.child.kill("SIGTERM");
    const exit = await rt.exit;
    assert.equal(exit.code, 0, exit.stderr);
    assert.equal(
      processAlive(pids[0]!),
      false,
      "the provider was reaped before the runtime exited",
    );
    await waitFor("helper gone", () => !processAlive(helpers[0]!), 2000);
  } finally {
    await rt.dispose();
    const { pids, helpers } = readScriptedLog(log);
    killLeftovers([...pids, ...helpers]);
    await Deno.remove(dir, { recursive: true });
  }
});
