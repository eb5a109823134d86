/**
 * Provider stderr: a line's own level survives into the runtime's log, and a provider that fails
 * its start-up is reported with its last stderr lines (examples/minimal.yaml once failed with
 * "provider closed its stdout" while the reason sat in an INFO line).
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import { EventBus } from "../../src/events/mod.ts";
import { spawnProcess, systemClock } from "../../src/host/mod.ts";
import {
  ProviderRegistry,
  ProviderSession,
  type ProviderSessionDeps,
  STDERR_LINES_PER_SECOND,
  STDERR_READ_BYTES,
  STDERR_TAIL_LINES,
  STDERR_WARN_LINES_PER_SECOND,
  stderrLineLevel,
} from "../../src/providers/mod.ts";
import { byteStream } from "../helpers/byte_stream.ts";
import { waitFor } from "../helpers/kernel.ts";
import { simProvider } from "../helpers/sim_config.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { ManualClock } from "../helpers/clock.ts";

const LEVELS: { line: string; level: string | null }[] = [
  // The SDK's stderr logger (src/provider_sdk/stderr_logger.ts) and the simulated provider.
  { line: "ERROR [sim] config: --config <yaml> is required", level: "error" },
  { line: "WARN [sim] slow bus", level: "warn" },
  { line: "INFO [sim] started", level: "info" },
  { line: "DEBUG [sim] frame", level: "debug" },
  // Bracketed, with or without a space after the bracket, any case.
  { line: "[ERROR] i2c bus /dev/i2c-1: no such device", level: "error" },
  { line: "[warning]retrying", level: "warn" },
  { line: "[Info] ready", level: "info" },
  // With a colon, leading blanks, and the usual synonyms.
  { line: "warning: deprecated option", level: "warn" },
  { line: "  error: cannot open port", level: "error" },
  { line: "FATAL: out of memory", level: "error" },
  { line: "ERR: bus reset", level: "error" },
  { line: "[crit] overheated", level: "error" },
  { line: "crit overheated", level: "error" },
  { line: "CRITICAL sensor lost", level: "error" },
  { line: "TRACE tick", level: "debug" },
  { line: "Error: uncaught exception", level: "error" },
  { line: "ERROR", level: "error" },
  // No level word first: the runtime's default (info).
  { line: "Errors found: 0", level: null },
  { line: "information only", level: null },
  { line: "[sim] ERROR late level word", level: null },
  { line: "starting up", level: null },
  { line: "[ERR", level: null },
];

for (const c of LEVELS) {
  Deno.test(`stderrLineLevel reads ${JSON.stringify(c.line)} as ${c.level ?? "no level"}`, () => {
    assert.equal(stderrLineLevel(c.line), c.level);
  });
}

Deno.test("ProviderSession logs each provider stderr line at the level it starts with", async () => {
  const lines: string[] = [];
  const cfg = {
    ...simProvider("leveled"),
    command: "sh",
    args: [
      "-c",
      'printf "%s\\n" "ERROR [sim] broken" "[WARN] slow" "info: fine" "DEBUG detail" "plain" >&2;' +
      " exec cat",
    ],
  };
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("leveled"),
    clock: systemClock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor(
      "the last stderr line",
      () => lines.some((l) => l.endsWith("stderr: plain")),
      5000,
    );
    const logged = lines.filter((l) => l.includes("stderr: ")).map((l) => l.split(" ")[0]);
    assert.deepEqual(logged, ["ERROR", "WARN", "INFO", "DEBUG", "INFO"]);
  } finally {
    await session.terminate(2000);
  }
  assert.deepEqual(lines.filter((l) => l.includes("suppressed")), [], "nothing was suppressed");
});

Deno.test("ProviderSession reads a provider's stderr STDERR_READ_BYTES at a time, not a 64 KiB buffer per read", async () => {
  const lines: string[] = [];
  const sizes: number[] = [];
  const cfg = {
    ...simProvider("small"),
    command: "sh",
    args: ["-c", 'printf "%s\\n" one two >&2; exec cat'],
  };
  const session = new ProviderSession(cfg, "sh", {
    // The real process, its stderr seen through a byte stream like Deno's child pipes (64 KiB
    // allocated per read for a default reader), recording the size each read asks for.
    spawn: (o) => {
      const p = spawnProcess(o);
      return { ...p, pid: p.pid, stderr: byteStream(p.stderr, sizes, 65_536) };
    },
    log: capturingLogger({ lines, now: () => 0 }).log.child("small"),
    clock: systemClock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor("both stderr lines", () => lines.some((l) => l.endsWith("stderr: two")), 5000);
    assert.ok(lines.some((l) => l.endsWith("stderr: one")));
    assert.ok(sizes.length > 0, "stderr was read");
    assert.ok(
      sizes.every((n) => n <= STDERR_READ_BYTES),
      `reads asked for ${sizes.join(", ")} bytes`,
    );
  } finally {
    await session.terminate(2000);
  }
});

/** Starts one provider through the registry and returns the start-up error. */
async function startupError(
  script: string,
  o: { helloTimeoutMs?: number } = {},
): Promise<RuntimeError> {
  const provider = {
    ...simProvider("p0"),
    command: "sh",
    args: ["-c", script],
    ...(o.helloTimeoutMs ? { helloTimeoutMs: o.helloTimeoutMs } : {}),
  };
  const registry = new ProviderRegistry([provider], {
    spawn: spawnProcess,
    clock: systemClock,
    log: capturingLogger({ now: () => 0 }).log,
    bus: new EventBus(),
    cwd: Deno.cwd(),
    shutdownTimeoutMs: 1000,
  });
  try {
    await registry.startAll(20000, 1000);
  } catch (e) {
    assert.ok(e instanceof RuntimeError, String(e));
    return e;
  } finally {
    await registry.stopAll(1000);
  }
  throw new Error("the provider started");
}

Deno.test("A provider that exits during start-up is reported with its last stderr lines", async () => {
  const count = STDERR_TAIL_LINES + 3;
  const e = await startupError(
    `for i in $(seq 1 ${count}); do echo "ERROR line $i" >&2; done; exit 1`,
  );
  assert.equal(e.code, "UNAVAILABLE");
  const quoted = Array.from(
    { length: STDERR_TAIL_LINES },
    (_, i) => JSON.stringify(`ERROR line ${count - STDERR_TAIL_LINES + i + 1}`),
  ).join(", ");
  assert.ok(
    e.message.includes(`provider's last stderr lines: ${quoted} (process exit code 1)`),
    e.message,
  );
  assert.ok(!e.message.includes(`"ERROR line ${count - STDERR_TAIL_LINES}"`), e.message);
  assert.match(e.message, /^provider start failed: p0: Hello failed: /);
});

Deno.test("A provider that never answers Hello is reported with what it wrote to stderr", async () => {
  const e = await startupError('echo "WARN waiting for the bus" >&2; exec sleep 30', {
    helloTimeoutMs: 300,
  });
  assert.equal(e.code, "UNAVAILABLE");
  assert.match(
    e.message,
    /^provider start failed: p0: Hello failed: hello got no answer within 300 ms; provider's last stderr line: "WARN waiting for the bus"$/,
  );
});

Deno.test("A start-up failure waits for the provider's exit to name its exit code", async () => {
  // stdout and stderr close at once (Hello fails), the process exits 300 ms later.
  const e = await startupError("exec 1>&- 2>&-; sleep 0.3; exit 5");
  assert.match(e.message, /^provider start failed: p0: Hello failed: .*\(process exit code 5\)$/);
});

Deno.test("A provider that fails start-up silently is reported without a stderr part", async () => {
  const e = await startupError("exit 7");
  assert.ok(!e.message.includes("stderr"), e.message);
  assert.match(e.message, /\(process exit code 7\)$/);
});

Deno.test("ProviderSession rate-limits stderr per one-second window and logs again in the next", async () => {
  const lines: string[] = [];
  // 25 lines, then 3 more once the provider reads a byte on stdin (the test sends one when it
  // has moved the clock into the next window).
  const cfg = {
    ...simProvider("noisy"),
    command: "sh",
    args: [
      "-c",
      'for i in $(seq 1 25); do echo "a$i" >&2; done; head -c 1 >/dev/null;' +
      ' for i in 1 2 3; do echo "b$i" >&2; done; exec cat >/dev/null',
    ],
  };
  const clock = new ManualClock();
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("noisy"),
    clock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor("the first window's lines", () => session.stderrTail.at(-1) === "a25", 5000);
    clock.advance(1000);
    // Any request puts bytes on the provider's stdin (it never answers).
    session.request("hello", { protocol_version: "x" }, 60_000).catch(() => {});
    await waitFor("the second window's lines", () => lines.some((l) => l.endsWith(": b3")), 5000);
    const logged = lines.filter((l) => l.includes("stderr: ")).map((l) => l.split(": ")[1]);
    assert.deepEqual(logged, [
      ...Array.from({ length: STDERR_LINES_PER_SECOND }, (_, i) => `a${i + 1}`),
      "b1",
      "b2",
      "b3",
    ]);
    const notices = lines.filter((l) => l.includes("suppressed"));
    assert.deepEqual(notices.map((l) => l.split("] ")[1]), [
      `${25 - STDERR_LINES_PER_SECOND} stderr lines suppressed (rate limit)`,
    ]);
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("ProviderSession: a flood of chatty stderr lines does not suppress the provider's warnings and errors, which are bounded apart", async () => {
  const lines: string[] = [];
  // A provider logging every frame at DEBUG (the runtime logs at INFO: none of them is shown),
  // then an error and a warning, then a flood of errors, all within one window of the clock.
  const cfg = {
    ...simProvider("chatty"),
    command: "sh",
    args: [
      "-c",
      'for i in $(seq 1 25); do echo "DEBUG frame $i" >&2; done;' +
      ' echo "INFO polled" >&2; echo "ERROR i2c bus: no such device" >&2;' +
      ' echo "WARN retrying" >&2; for i in $(seq 1 25); do echo "ERROR e$i" >&2; done;' +
      " exec cat >/dev/null",
    ],
  };
  const clock = new ManualClock();
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, level: "info", now: () => 0 }).log.child("chatty"),
    clock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor("every line read", () => session.stderrTail.at(-1) === "ERROR e25", 5000);
    const logged = lines.filter((l) => l.includes("stderr: "));
    assert.deepEqual(logged.map((l) => l.split("stderr: ")[1]), [
      "ERROR i2c bus: no such device",
      "WARN retrying",
      ...Array.from({ length: STDERR_WARN_LINES_PER_SECOND - 2 }, (_, i) => `ERROR e${i + 1}`),
    ]);
    assert.match(logged[0]!, /^ERROR /);
    assert.match(logged[1]!, /^WARN /);
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("ProviderSession starts a new stderr window when exactly one second has passed on its monotonic clock", async () => {
  const lines: string[] = [];
  const clock = new ManualClock();
  // The provider writes a full window of lines, then one more once it reads a byte on stdin.
  const cfg = {
    ...simProvider("window"),
    command: "sh",
    args: [
      "-c",
      `for i in $(seq 1 ${STDERR_LINES_PER_SECOND}); do echo "a$i" >&2; done;` +
      ` head -c 1 >/dev/null; echo next >&2; exec cat >/dev/null`,
    ],
  };
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("window"),
    clock,
    cwd: Deno.cwd(),
  });
  try {
    const last = `stderr: a${STDERR_LINES_PER_SECOND}`;
    await waitFor("a full window", () => lines.some((l) => l.endsWith(last)), 5000);
    clock.advance(1000);
    // Any request puts bytes on the provider's stdin (it never answers).
    session.request("hello", { protocol_version: "x" }, 60_000).catch(() => {});
    await waitFor(
      "the line after the window",
      () => lines.some((l) => l.endsWith("stderr: next") || l.includes("suppressed")),
      5000,
    );
    assert.ok(lines.some((l) => l.endsWith("stderr: next")), lines.join("\n"));
    assert.deepEqual(lines.filter((l) => l.includes("suppressed")), []);
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("ProviderSession cuts a stderr line of more than 2000 characters, strips CR line ends and skips blank lines", async () => {
  const lines: string[] = [];
  const cfg = {
    ...simProvider("long"),
    command: "sh",
    args: [
      "-c",
      `printf 'x%.0s' $(seq 1 2500) >&2;` +
      ` printf '\\ncrlf\\r\\n\\n   \\nin\\rner\\r\\nlast\\n' >&2; exec cat`,
    ],
  };
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("long"),
    clock: systemClock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor("the last line", () => lines.some((l) => l.endsWith("stderr: last")), 5000);
    const logged = lines.filter((l) => l.includes("stderr: ")).map((l) => l.split("stderr: ")[1]);
    assert.deepEqual(logged.filter((l) => !l!.startsWith("in")), [
      `${"x".repeat(2000)}…`,
      "crlf",
      "last",
    ]);
    assert.deepEqual(session.stderrTail, ["x".repeat(2000), "crlf", "in\rner", "last"]);
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("ProviderSession keeps a stderr line of exactly 2000 characters whole, and a start-up failure quotes one of exactly 300 whole", async () => {
  const lines: string[] = [];
  const session = shSession(
    `printf 'v%.0s' $(seq 1 300) >&2; echo >&2; printf 'w%.0s' $(seq 1 2000) >&2; echo >&2; exit 1`,
    lines,
  );
  try {
    await assert.rejects(session.handshake(), (e) => {
      assert.ok(e instanceof RuntimeError);
      assert.ok(
        e.message.endsWith(
          `; provider's last stderr lines: "${"v".repeat(300)}", "${"w".repeat(300)}…"`,
        ),
        e.message,
      );
      return true;
    });
    // The start-up failure waited for stderr to end: every line was handled by now.
    assert.deepEqual(
      lines.filter((l) => l.includes("stderr: ")).map((l) => l.split("stderr: ")[1]),
      ["v".repeat(300), "w".repeat(2000)],
    );
    assert.deepEqual(session.stderrTail, ["v".repeat(300), "w".repeat(2000)]);
    assert.deepEqual(lines.filter((l) => l.includes("suppressed")), [], "nothing was suppressed");
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("A start-up failure quotes at most 300 characters of each stderr line, and no blank ones", async () => {
  const e = await startupError(
    `printf 'y%.0s' $(seq 1 400) >&2; printf '\\n\\n   \\nshort\\n' >&2; exit 3`,
  );
  assert.ok(
    e.message.endsWith(
      `provider's last stderr lines: ${JSON.stringify(`${"y".repeat(300)}…`)}, "short" ` +
        "(process exit code 3)",
    ),
    e.message,
  );
});

Deno.test("A start-up failure quotes the provider's last stderr line even without a newline", async () => {
  const e = await startupError(`printf 'first\\nlast words' >&2; exit 2`);
  assert.ok(
    e.message.endsWith(`provider's last stderr lines: "first", "last words" (process exit code 2)`),
    e.message,
  );
});

Deno.test("ProviderSession bounds a stderr line without newline: flushed in pieces past 64 KiB", async () => {
  const lines: string[] = [];
  const cfg = {
    ...simProvider("flood"),
    command: "sh",
    args: ["-c", `head -c 300000 /dev/zero | tr '\\0' z >&2; printf '\\nend\\n' >&2; exec cat`],
  };
  const session = new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("flood"),
    clock: systemClock,
    cwd: Deno.cwd(),
  });
  try {
    await waitFor("the last line", () => lines.some((l) => l.endsWith("stderr: end")), 5000);
    const pieces = lines.filter((l) => l.includes("stderr: ") && !l.endsWith("stderr: end"));
    // 300 000 characters, flushed whenever more than 65 536 wait for a newline (how many pieces
    // depends on how the pipe delivers them; never one 300 000-character line). Each flushed piece
    // is longer than a logged line and is cut; the last piece is what was left when the newline
    // came, which may be short enough to be logged whole.
    assert.ok(pieces.length >= 2, `${pieces.length} pieces`);
    for (const p of pieces.slice(0, -1)) assert.match(p, /stderr: z{2000}…$/);
    assert.match(pieces.at(-1)!, /stderr: z+…?$/);
  } finally {
    await session.terminate(2000);
  }
});

/** A session of `sh -c script` whose log lines land in `lines`, on `clock`. */
function shSession(
  script: string,
  lines: string[],
  clock: ProviderSessionDeps["clock"] = systemClock,
): ProviderSession {
  const cfg = { ...simProvider("sh"), command: "sh", args: ["-c", script] };
  return new ProviderSession(cfg, "sh", {
    spawn: spawnProcess,
    log: capturingLogger({ lines, now: () => 0 }).log.child("sh"),
    clock,
    cwd: Deno.cwd(),
  });
}

Deno.test("ProviderSession reports even one suppressed stderr line when its window closes", async () => {
  const lines: string[] = [];
  const clock = new ManualClock();
  const session = shSession(
    `for i in $(seq 1 ${STDERR_LINES_PER_SECOND}); do echo "a$i" >&2; done;` +
      ` echo late >&2; exec cat`,
    lines,
    clock,
  );
  try {
    await waitFor("every stderr line read", () => session.stderrTail.at(-1) === "late", 5000);
    // Said when the one-second window of the first line closes, not when the line came.
    clock.advance(999);
    assert.deepEqual(lines.filter((l) => l.includes("suppressed")), []);
    clock.advance(1);
    const notices = lines.filter((l) => l.includes("suppressed"));
    assert.equal(notices.length, 1);
    assert.match(notices[0]!, /\] 1 stderr lines suppressed \(rate limit\)$/);
    assert.ok(!lines.some((l) => l.endsWith("stderr: late")));
  } finally {
    await session.terminate(2000);
  }
});

Deno.test("ProviderSession reports suppressed stderr lines when the provider exits before the window closes", async () => {
  const lines: string[] = [];
  // The window never closes: the clock stands still.
  const clock = new ManualClock();
  const session = shSession(
    `for i in $(seq 1 ${STDERR_LINES_PER_SECOND + 3}); do echo "a$i" >&2; done; exit 0`,
    lines,
    clock,
  );
  try {
    await session.ended;
    await waitFor("the notice", () => lines.some((l) => l.includes("suppressed")));
    assert.deepEqual(
      lines.filter((l) => l.includes("suppressed")).map((l) => l.split("] ")[1]),
      ["3 stderr lines suppressed (rate limit)"],
    );
    // Said at the end of stderr: the notice due when the window closes is cancelled.
    assert.equal(clock.pendingTimers, 0);
  } finally {
    await session.terminate(2000);
  }
});
