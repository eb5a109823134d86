/**
 * Nothing is read from the source tree at run time: the demo service starts and serves with
 * --allow-read limited to its config folder, the behavior-tree folder and the provider binary,
 * with the single binary's exact --allow-env list, and stops cleanly (exit 0) on SIGTERM.
 *
 * The runtime is the bundle the compile task compiles (`deno task bundle`); module loading (its
 * chunks, the npm cache) is not gated by --allow-read, so this stands in for the compiled binary,
 * which embeds those modules. The simulated provider
 * is a separate `deno run --allow-read ...` process: its reads are its own permissions.
 */
import assert from "node:assert/strict";
import { parse, stringify } from "yaml";
import { EXIT_OK } from "../../src/app/exit_codes.ts";
import { startOnFreePort } from "../helpers/ports.ts";
import { repoPath } from "./_helpers.ts";
import { compiledEnvPermissions } from "../helpers/compiled_permissions.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { BUNDLE_RUN_CONFIG, bundles } from "../helpers/bundles.ts";

const EXAMPLES = repoPath("examples");
/** Bound on start-up (providers + HTTP); generous for a busy 2-core CI machine. */
const START_BOUND_MS = 30_000;
/** Bound on SIGTERM -> exit; above the demo's shutdown_timeout_ms (default 2000) + grace. */
const STOP_BOUND_MS = 15_000;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/**
 * examples/demo.yaml moved into `dir`: free port, data_dir in `dir`, and every relative path
 * (provider arguments, behavior tree) made absolute, since relative paths resolve against the
 * config's folder. The provider command `deno` becomes this Deno's absolute path.
 */
async function demoConfigIn(dir: string, port: number): Promise<string> {
  // deno-lint-ignore no-explicit-any
  const cfg: any = parse(await Deno.readTextFile(`${EXAMPLES}/demo.yaml`));
  cfg.http.port = port;
  cfg.runtime = { ...cfg.runtime, data_dir: `${dir}/data` };
  for (const p of cfg.providers) {
    if (p.command === "deno") p.command = Deno.execPath();
    p.args = (p.args ?? []).map((a: string) => {
      if (a.startsWith("-")) return a;
      try {
        Deno.statSync(`${EXAMPLES}/${a}`);
        return `${EXAMPLES}/${a}`;
      } catch {
        return a;
      }
    });
  }
  assert.ok(cfg.automation?.behavior_tree, "demo.yaml is expected to run a behavior tree");
  cfg.automation.behavior_tree = `${EXAMPLES}/${cfg.automation.behavior_tree}`;
  const path = `${dir}/demo.yaml`;
  await Deno.writeTextFile(path, stringify(cfg));
  return path;
}

/** SIGKILL unless the process already ended (kill() throws then, hiding the real failure). */
function kill(child: Deno.ChildProcess): void {
  try {
    child.kill("SIGKILL");
  } catch {
    // already exited
  }
}

/** GET `url` until it answers 200 (the runtime may still be starting); its JSON body. */
async function pollUntilOk(url: string, child: { exited: boolean }): Promise<unknown> {
  const deadline = Date.now() + START_BOUND_MS;
  let last = "no answer yet";
  while (Date.now() < deadline && !child.exited) {
    try {
      const res = await apiFetch(url, { signal: AbortSignal.timeout(2_000) });
      const body = await res.text();
      if (res.status === 200) return JSON.parse(body);
      last = `HTTP ${res.status}: ${body}`;
    } catch (e) {
      last = e instanceof Error ? e.message : String(e);
    }
    await sleep(250);
  }
  if (child.exited) throw new Error(`runtime exited before ${url} answered 200 (${last})`);
  throw new Error(`${url} did not answer 200 within ${START_BOUND_MS} ms: ${last}`);
}

Deno.test("runtime starts and serves the demo with --allow-read limited to config, behavior tree and provider binary", async () => {
  const dir = await Deno.makeTempDir({ prefix: "runtime-restricted-" });
  await Deno.mkdir(`${dir}/data`);
  const allowRead = [dir, `${EXAMPLES}/behaviors`, Deno.execPath()].join(",");
  const runtimeBundle = (await bundles()).runtime;
  /** The runtime with the demo on `port`, its output collected. */
  const start = async (port: number) => {
    const configPath = await demoConfigIn(dir, port);
    const child = new Deno.Command(Deno.execPath(), {
      args: [
        "run",
        "--quiet",
        "--no-prompt",
        BUNDLE_RUN_CONFIG,
        "--allow-net=127.0.0.1",
        "--allow-run",
        ...compiledEnvPermissions(),
        `--allow-read=${allowRead}`,
        `--allow-write=${dir}/data`,
        runtimeBundle,
        "--config",
        configPath,
      ],
      env: { NO_COLOR: "1", JOURNAL_STREAM: "", NOTIFY_SOCKET: "" },
      stdin: "null",
      stdout: "piped",
      stderr: "piped",
    }).spawn();
    const state = { exited: false };
    const status = child.status.finally(() => (state.exited = true));
    const stdout = new Response(child.stdout).text();
    const stderr = new Response(child.stderr).text();
    return { child, state, status, stdout, stderr };
  };
  let started: Awaited<ReturnType<typeof start>>;
  let port: number;
  try {
    // startOnFreePort: returns once this runtime listens on its port (another port when a
    // stranger took the first); pollUntilOk below still bounds the start-up.
    ({ port, started } = await startOnFreePort(
      start,
      (s) => ({ pid: s.child.pid, ended: s.status }),
      async (s) => {
        kill(s.child);
        await Promise.all([s.status, s.stdout, s.stderr]);
        console.error(`runtime output:\n${await s.stderr}`);
      },
      { timeoutMs: START_BOUND_MS },
    ));
  } catch (err) {
    await Deno.remove(dir, { recursive: true });
    throw err;
  }
  const { child, state, status, stdout, stderr } = started;
  let stopped = false;
  try {
    const base = `http://127.0.0.1:${port}/v0`;
    // deno-lint-ignore no-explicit-any
    const runtimeStatus: any = await pollUntilOk(`${base}/runtime/status`, state);
    assert.equal(runtimeStatus.status.code, "OK");
    assert.deepEqual(
      // deno-lint-ignore no-explicit-any
      runtimeStatus.providers.map((p: any) => [p.provider_id, p.state]),
      [["sim0", "AVAILABLE"]],
    );
    // The behavior tree was read from its folder and built.
    const tree = await apiFetch(`${base}/automation/tree`);
    assert.equal(tree.status, 200, await tree.text());
    // A run record is written to the data dir (--allow-write).
    const run = await apiFetch(`${base}/runs`, { method: "POST" });
    assert.equal(run.status, 200, await run.text());
    const written = [];
    for await (const e of Deno.readDir(`${dir}/data`)) written.push(e.name);
    assert.ok(written.length > 0, "nothing written to data_dir");
    // What the bundle loads on first use, each from its own chunk: the console's files, the
    // OpenAPI document, the request validators (a POST body), and the e-stop answers.
    const page = await fetch(`http://127.0.0.1:${port}/`);
    assert.equal(page.status, 200);
    assert.match(await page.text(), /<!doctype html>/i);
    const doc = await apiFetch(`${base}/openapi.json`);
    assert.equal(doc.status, 200);
    assert.equal((await doc.json()).openapi, "3.1.0");
    const bad = await apiFetch(`${base}/mode`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mode: 7 }),
    });
    assert.equal(bad.status, 400, "the request validators refuse a mode that is not a string");
    await bad.body?.cancel();
    const manual = await apiFetch(`${base}/mode`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mode: "MANUAL" }),
    });
    assert.equal(manual.status, 200, await manual.text());
    const estop = await apiFetch(`${base}/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "bundle check" }),
    });
    assert.equal(estop.status, 200, await estop.text());
    // deno-lint-ignore no-explicit-any
    const latched: any = await pollUntilOk(`${base}/runtime/status`, state);
    assert.equal(latched.estop.latched, true);

    child.kill("SIGTERM");
    stopped = true;
    const timer = setTimeout(() => kill(child), STOP_BOUND_MS);
    const { code } = await status.finally(() => clearTimeout(timer));
    const log = await stderr;
    assert.equal(code, EXIT_OK, log);
    // A denied permission that some layer caught and logged would otherwise go unnoticed.
    assert.ok(!/NotCapable|Requires (read|write|env|net|run) access/.test(log), log);
  } finally {
    if (!stopped) kill(child);
    await status;
    await stdout;
    const log = await stderr;
    if (!stopped) console.error(`runtime output:\n${log}`);
    await Deno.remove(dir, { recursive: true });
  }
});
