/**
 * The runtime's stderr is a pipe (or journald's socket): a reader that stops (journald stalled, a
 * pager or `tee` that stopped reading, a terminal paused with Ctrl-S) fills it. The runtime's log
 * lines must then be dropped and counted, never block it: a synchronous write to a full pipe held
 * the whole process, its API and e-stop included.
 */
import assert from "node:assert/strict";
import { type RuntimeChild, startRuntimeWithConfigOnFreePort } from "../helpers/runtime_process.ts";
import { SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { LOG_QUEUE_MAX_BYTES } from "../../src/host/mod.ts";
import { EXIT_INTERNAL_ERROR } from "../../src/app/exit_codes.ts";

/** How long one request may take before the runtime counts as frozen. */
const REQUEST_BOUND_MS = 10_000;
/** A path this long makes each request's DEBUG line (`GET <path> -> 404`) about 2 KiB. */
const PATH_CHARS = 2000;

async function request(url: string, init: RequestInit = {}): Promise<Response> {
  try {
    return await fetch(url, { ...init, signal: AbortSignal.timeout(REQUEST_BOUND_MS) });
  } catch (err) {
    throw new Error(`${url.slice(0, 80)}: no answer within ${REQUEST_BOUND_MS} ms: ${err}`);
  }
}

/**
 * Run before the runtime's own module (`deno run --preload`): throws an uncaught error once the
 * file `crash-now` appears in the runtime's folder, so the test can crash a real runtime.
 */
const CRASH_PRELOAD = `const flag = new URL("./crash-now", import.meta.url).pathname;
const id = setInterval(() => {
  let now = false;
  try { Deno.statSync(flag); now = true; } catch { /* not yet */ }
  if (now) throw new Error("preloaded crash");
}, 50);
Deno.unrefTimer(id); // a preloaded module's pending timers would hold the main module back
`;

/** A runtime (one inert sim) whose stderr is not read until `readStderr()`, logging at DEBUG. */
async function startUnread(o: { crashable?: boolean; readAtOnce?: boolean } = {}): Promise<
  {
    rt: RuntimeChild;
    readStderr: () => void;
    crash: () => Promise<void>;
    dispose: () => Promise<void>;
  }
> {
  const dir = await Deno.makeTempDir({ prefix: "runtime-stderr-" });
  await Deno.writeTextFile(`${dir}/crash.js`, CRASH_PRELOAD);
  let readStderr!: () => void;
  const rt = await startRuntimeWithConfigOnFreePort(
    `${dir}/runtime.yaml`,
    (port) =>
      `runtime: {data_dir: ${dir}/data, shutdown_timeout_ms: 2000}
http: {port: ${port}}
providers:
  - {id: p0, command: ${Deno.execPath()}, args: [run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}]}
`,
    {
      args: ["--log-level", "debug"],
      ...(o.crashable ? { denoFlags: ["--preload", `${dir}/crash.js`] } : {}),
      ...(o.readAtOnce ? {} : { stderrReadAfter: new Promise<void>((r) => readStderr = r) }),
    },
  );
  return {
    rt,
    readStderr: () => readStderr?.(),
    crash: () => Deno.writeTextFile(`${dir}/crash-now`, ""),
    dispose: () => Deno.remove(dir, { recursive: true }),
  };
}

/** Enough DEBUG lines (one per 404) to fill the pipe (64 KiB) and the log queue behind it. */
async function fillStderr(rt: RuntimeChild): Promise<number> {
  const path = `/v0/${"x".repeat(PATH_CHARS)}`;
  const requests = Math.ceil((LOG_QUEUE_MAX_BYTES + 128 * 1024) / PATH_CHARS) + 50;
  for (let i = 0; i < requests; i++) {
    const r = await request(`${rt.base}${path}`);
    assert.equal(r.status, 404);
    await r.body?.cancel();
  }
  return requests;
}

Deno.test("with its stderr not read, the runtime drops and counts log lines, and its API and e-stop keep answering", async () => {
  const { rt, readStderr, dispose } = await startUnread();
  try {
    const requests = await fillStderr(rt);
    const stop = await request(`${rt.base}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "stderr not read" }),
    });
    assert.equal(stop.status, 200);
    assert.equal((await stop.json()).latched, true);
    // Read again: the lines queued come out in order, then the count of those dropped.
    readStderr();
    const notice = await waitFor(
      "the dropped-lines notice",
      () =>
        rt.stderr().split("\n").find((l) =>
          /^WARN .* \d+ log line\(s\) dropped: stderr was not taking them/.test(l)
        ),
      20_000,
    );
    const dropped = Number(/ (\d+) log line/.exec(notice)![1]);
    assert.ok(dropped > 0 && dropped < requests, notice);
    // The DEBUG flood filled only its share: the e-stop's WARN, logged after it, is kept.
    const lines = rt.stderr().split("\n");
    const latched = lines.findIndex((l) => /^WARN .*\[estop\] E-STOP latched$/.test(l));
    assert.ok(latched >= 0, lines.filter((l) => !l.startsWith("DEBUG")).join("\n"));
    assert.ok(lines.some((l) => /^WARN .*\[estop\] E-STOP reason: stderr not read$/.test(l)));
    assert.ok(latched < lines.indexOf(notice), "in order: the latch, then the count of drops");
  } finally {
    readStderr();
    assert.equal(await rt.stop(), 0, rt.stderr().slice(-2000));
    await dispose();
  }
});

Deno.test("with its stderr not read, the runtime still stops on SIGTERM: it waits for its last lines at most LOG_FLUSH_AT_EXIT_MS", async () => {
  const { rt, readStderr, dispose } = await startUnread();
  try {
    await fillStderr(rt);
    rt.signal("SIGTERM");
    // Its shutdown (shutdown_timeout_ms 2000) and the bounded wait for the log, well within this.
    await waitFor("the runtime's exit", () => !processAlive(rt.pid), 12_000);
    readStderr();
    assert.equal(await rt.stop(), 0, rt.stderr().slice(-2000));
  } finally {
    readStderr();
    await rt.stop();
    await dispose();
  }
});

Deno.test("a crashed runtime writes its crash line before it exits with EXIT_INTERNAL_ERROR", async () => {
  const { rt, crash, dispose } = await startUnread({ crashable: true, readAtOnce: true });
  try {
    await crash();
    await waitFor("the runtime's exit", () => !processAlive(rt.pid), 12_000);
    assert.equal(await rt.stop(), EXIT_INTERNAL_ERROR);
    assert.match(rt.stderr(), /^ERROR .* crash: Error: preloaded crash/m);
  } finally {
    await rt.stop();
    await dispose();
  }
});

Deno.test("with its stderr not read, a crashed runtime still exits with EXIT_INTERNAL_ERROR: it waits for its crash line at most LOG_FLUSH_AT_EXIT_MS", async () => {
  const { rt, readStderr, crash, dispose } = await startUnread({ crashable: true });
  try {
    await fillStderr(rt);
    await crash();
    await waitFor("the runtime's exit", () => !processAlive(rt.pid), 12_000);
    readStderr();
    assert.equal(await rt.stop(), EXIT_INTERNAL_ERROR);
  } finally {
    readStderr();
    await rt.stop();
    await dispose();
  }
});
