/**
 * sd_notify readiness through systemd-notify: READY=1 / STOPPING=1 reach the socket named by
 * NOTIFY_SOCKET (a fake one here: a unix datagram socket held by a helper process, since Deno's
 * datagram API needs --unstable-net), nothing happens without NOTIFY_SOCKET, and failures are
 * reported, never thrown.
 */
import assert from "node:assert/strict";
import { notifyReady } from "../../src/host/mod.ts";
import type { Logger } from "../../src/common/mod.ts";
import { LineReader, repoPath } from "./_helpers.ts";
import { compiledEnvPermissions } from "../helpers/compiled_permissions.ts";

const SYSTEMD_NOTIFY = "systemd-notify";

function systemdNotifyMissing(): boolean {
  try {
    new Deno.Command(SYSTEMD_NOTIFY, { args: ["--version"], stdout: "null", stderr: "null" })
      .outputSync();
    return false;
  } catch {
    console.error(
      `\n!!!!!!!! ${SYSTEMD_NOTIFY} not found: sd_notify delivery tests are SKIPPED. ` +
        `Install it with: apt-get install -y systemd !!!!!!!!\n`,
    );
    return true;
  }
}
const ignore = systemdNotifyMissing();

interface ChildResult {
  detached: string | null;
  envAfter: string | null;
  ready: boolean;
  stopping: boolean;
  logs: string[];
}

/** Runs _notify_child.ts with the single binary's permissions (env list, run). */
async function runNotifyChild(notifySocket: string, command?: string): Promise<ChildResult> {
  const out = await new Deno.Command(Deno.execPath(), {
    args: [
      "run",
      "--quiet",
      "--no-prompt",
      ...compiledEnvPermissions(),
      "--allow-run",
      repoPath("tests/deploy/_notify_child.ts"),
      ...(command ? [command] : []),
    ],
    env: { NOTIFY_SOCKET: notifySocket },
    stdin: "null",
    stdout: "piped",
    stderr: "piped",
  }).output();
  const stderr = new TextDecoder().decode(out.stderr);
  assert.equal(out.code, 0, stderr);
  return JSON.parse(new TextDecoder().decode(out.stdout));
}

/** `promise`, or a rejection naming `what` after `ms` (a bound, not a timing assertion). */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no ${what} within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

function recordingLogger(): { log: Logger; lines: string[] } {
  const lines: string[] = [];
  const log: Logger = {
    debug: (m) => lines.push(`debug: ${m}`),
    info: (m) => lines.push(`info: ${m}`),
    warn: (m) => lines.push(`warn: ${m}`),
    error: (m) => lines.push(`error: ${m}`),
    child: () => log,
  };
  return { log, lines };
}

Deno.test("notifyReady and notifyStopping do nothing without NOTIFY_SOCKET", async () => {
  // A command that cannot run: had the functions tried, they would have logged a warning.
  const result = await runNotifyChild("", "/nonexistent/systemd-notify");
  assert.deepEqual(result, {
    detached: null,
    envAfter: null,
    ready: false,
    stopping: false,
    logs: [],
  });
});

Deno.test({
  name: "notifyReady sends READY=1 and notifyStopping STOPPING=1 to NOTIFY_SOCKET",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "runtime-notify-" });
    const socket = `${dir}/notify.sock`;
    const listener = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        "--unstable-net",
        "--allow-net",
        `--allow-read=${dir}`,
        `--allow-write=${dir}`,
        repoPath("tests/deploy/_notify_listener.ts"),
        socket,
      ],
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const lines = new LineReader(listener.stdout);
    const listenerStderr = new Response(listener.stderr).text();
    try {
      const first = await within(lines.next(), 30_000, "fake NOTIFY_SOCKET start");
      assert.equal(first, "listening", "fake NOTIFY_SOCKET did not start");

      const result = await runNotifyChild(socket);
      assert.equal(result.detached, socket);
      assert.equal(result.envAfter, null, "NOTIFY_SOCKET must not be inherited by providers");
      assert.equal(result.ready, true, result.logs.join("\n"));
      assert.equal(result.stopping, true, result.logs.join("\n"));
      assert.deepEqual(result.logs.filter((l) => !l.startsWith("debug:")), []);

      // systemd-notify returned only after its barrier was answered, so all datagrams are in.
      const received: string[] = [];
      while (!received.some((m) => m.startsWith("STOPPING=1"))) {
        const line = await within(lines.next(), 10_000, "the next notify datagram");
        assert.notEqual(line, null, `listener ended early; got ${JSON.stringify(received)}`);
        received.push(JSON.parse(line!));
      }
      assert.deepEqual(received, [
        "READY=1\nSTATUS=ready",
        // The synchronous wait that makes NotifyAccess=all reliable (systemd >= 246).
        "BARRIER=1",
        "STOPPING=1\nSTATUS=stopping",
      ]);
    } finally {
      listener.kill("SIGTERM");
      await listener.status;
      await lines.drain();
      await listenerStderr;
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test({
  name: "notifyReady resolves false and warns when nobody listens on NOTIFY_SOCKET",
  ignore,
  async fn() {
    const dir = await Deno.makeTempDir({ prefix: "runtime-notify-" });
    try {
      const { log, lines } = recordingLogger();
      const sent = await notifyReady(log, { socket: `${dir}/absent.sock` });
      assert.equal(sent, false);
      assert.equal(lines.filter((l) => l.startsWith("warn: ")).length, 1, lines.join("\n"));
    } finally {
      await Deno.remove(dir, { recursive: true });
    }
  },
});

Deno.test("notifyReady resolves false and warns when systemd-notify cannot run", async () => {
  const { log, lines } = recordingLogger();
  const sent = await notifyReady(log, {
    socket: "/run/systemd/notify",
    command: "/nonexistent/systemd-notify",
  });
  assert.equal(sent, false);
  assert.equal(lines.length, 1);
  assert.match(lines[0]!, /^warn: systemd notification READY=1 not sent: cannot run/);
});
