/**
 * runService (src/app/process.ts): a start-up that fails for a cause of its own just after a stop
 * signal came (before the stop reached the kernel) is said, one ERROR naming its cause, though the
 * process exits as the stop does (0). The window is held open for real: the runtime, a child
 * process, is started under a NOTIFY_SOCKET the test serves and does not read yet, so its
 * STOPPING=1 (systemd-notify, sent before the kernel's stop) waits for its barrier; a provider hung
 * in Hello is killed meanwhile (SIGKILL): the start fails of that, not of the stop. Once that
 * failure is said the socket is read, which answers the barrier (the read drops the pipe end
 * systemd-notify waits on), and the stop goes on at once. Were it never said, systemd's own bound
 * on the barrier (5 s) would end the window and the test fail on the missing line.
 */
import assert from "node:assert/strict";
import {
  freePort,
  killLeftovers,
  processAlive,
  providerYaml,
  readScriptedLog,
  type RuntimeProcess,
  scriptedCommand,
  spawnRuntime,
  waitFor,
  within,
  writeRuntimeConfig,
} from "../scenarios/process_helpers.ts";

const SYSTEMD_NOTIFY = "systemd-notify";

function systemdNotifyMissing(): boolean {
  try {
    new Deno.Command(SYSTEMD_NOTIFY, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync();
    return false;
  } catch {
    console.error(
      `\n!!!!!!!! ${SYSTEMD_NOTIFY} not found: the start-failed-at-stop test is SKIPPED. ` +
        `Install it with: apt-get install -y systemd !!!!!!!!\n`,
    );
    return true;
  }
}

/**
 * A unix datagram socket at `path`, not read until `answer()`: until then systemd-notify's barrier
 * waits; from then on every datagram is read, which closes the barrier's pipe end passed with it
 * (received without room for it), and the barrier is answered.
 */
async function heldNotifySocket(
  path: string,
): Promise<{ answer(): Promise<void>; close(): Promise<void> }> {
  const holder = new Deno.Command(Deno.execPath(), {
    args: [
      "eval",
      "--unstable-net",
      `const socket = Deno.listenDatagram({ transport: "unixpacket", path: ${
        JSON.stringify(path)
      } });` +
      `console.log("listening");` +
      `await Deno.stdin.read(new Uint8Array(1));` +
      `for (;;) await socket.receive();`,
    ],
    stdin: "piped",
    stdout: "piped",
    stderr: "null",
  }).spawn();
  const reader = holder.stdout.pipeThrough(new TextDecoderStream()).getReader();
  const first = await within(reader.read(), 30000);
  reader.releaseLock();
  void holder.stdout.cancel().catch(() => {});
  assert.ok(first !== "timeout" && first.value?.includes("listening"), "socket holder not up");
  const stdin = holder.stdin.getWriter();
  return {
    answer: () => stdin.write(new Uint8Array([10])),
    async close() {
      await stdin.close().catch(() => {});
      holder.kill("SIGKILL");
      await holder.status;
    },
  };
}

Deno.test({
  name:
    "runService: a start-up that fails of its own (a provider killed) just after SIGTERM is said in one ERROR naming its cause; exit 0, the stop's",
  ignore: systemdNotifyMissing(),
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "runtime-start-failed-at-stop-" });
    const log = `${dir}/provider.log`;
    const notify = await heldNotifySocket(`${dir}/notify.sock`);
    let rt: RuntimeProcess | undefined;
    try {
      const config = await writeRuntimeConfig(dir, {
        port: freePort(), // not bound: the API is disabled
        http: "  enabled: false\n",
        runtime: "  shutdown_timeout_ms: 2000\n  startup_timeout_ms: 120000\n",
        providers: providerYaml(
          "hung",
          scriptedCommand(["--log", log, "--hang", "hello"]),
          "    timeout_ms: 60000\n    hello_timeout_ms: 60000\n    ready_timeout_ms: 60000\n",
        ),
      });
      rt = spawnRuntime(config, { env: { NOTIFY_SOCKET: `${dir}/notify.sock` } });
      await waitFor(
        "provider hanging in hello",
        () => readScriptedLog(log).hangs.length > 0,
        30000,
      );
      rt.child.kill("SIGTERM");
      // Logged just before STOPPING=1 is sent: the kernel's stop waits for it from here.
      await rt.stderrLine(/SIGTERM received during start-up: stopping/);
      const pid = readScriptedLog(log).pids[0]!;
      Deno.kill(pid, "SIGKILL"); // the provider crashes: the start fails of that
      // Said while STOPPING=1 still waits (the stop has not reached the kernel): then let it on.
      await rt.stderrLine(/start-up failed as the runtime was stopping/);
      await notify.answer();
      const exit = await within(rt.exit, 30000);
      if (exit === "timeout") assert.fail("the runtime did not exit");
      assert.equal(exit.code, 0, `the exit is the stop's:\n${exit.stderr}`);
      const failed = exit.stderr.split("\n").filter((l) => l.includes("start-up failed"));
      assert.equal(failed.length, 1, `one line for the start-up failure:\n${exit.stderr}`);
      assert.match(
        failed[0]!,
        /^ERROR .*start-up failed as the runtime was stopping \(SIGTERM\): provider start failed: hung: Hello failed: .*; exiting as the stop does$/,
      );
      assert.equal(processAlive(pid), false);
    } finally {
      await rt?.dispose();
      await notify.close();
      killLeftovers(readScriptedLog(log).pids);
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("runService: a start-up the stop itself ends (a provider hung in Hello, its session closed by the stop) says no start-up failure; exit 0", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-start-failed-at-stop-" });
  const log = `${dir}/provider.log`;
  let rt: RuntimeProcess | undefined;
  try {
    const config = await writeRuntimeConfig(dir, {
      port: freePort(), // not bound: the API is disabled
      http: "  enabled: false\n",
      runtime: "  shutdown_timeout_ms: 2000\n  startup_timeout_ms: 120000\n",
      providers: providerYaml(
        "hung",
        scriptedCommand(["--log", log, "--hang", "hello"]),
        "    timeout_ms: 60000\n    hello_timeout_ms: 60000\n    ready_timeout_ms: 60000\n",
      ),
    });
    rt = spawnRuntime(config);
    await waitFor("provider hanging in hello", () => readScriptedLog(log).hangs.length > 0, 30000);
    rt.child.kill("SIGTERM");
    const exit = await within(rt.exit, 30000);
    if (exit === "timeout") assert.fail("the runtime did not exit");
    assert.equal(exit.code, 0, exit.stderr);
    assert.deepEqual(
      exit.stderr.split("\n").filter((l) => l.includes("start-up failed")),
      [],
      `the stop's own end of the start said as a start-up failure:\n${exit.stderr}`,
    );
  } finally {
    await rt?.dispose();
    killLeftovers(readScriptedLog(log).pids);
    await Deno.remove(dir, { recursive: true });
  }
});
