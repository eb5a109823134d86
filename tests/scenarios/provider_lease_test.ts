/**
 * Providers that go safe on their own (docs/safety.md), end to end: the runtime as users run it
 * (`src/main.ts --config FILE`, its own process) with the simulated provider on a 500 ms lease.
 * When the runtime stops polling (SIGSTOP) the provider applies its safe state by itself (the
 * runtime stays stopped until the provider's own log says so); after SIGCONT the runtime shows the
 * safe values and the provider's health message, from the same provider process (no restart reset
 * the outputs).
 */
import assert from "node:assert/strict";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { startOnFreePort } from "../helpers/ports.ts";
import { REPO, SIM_INERT_YAML, SIM_MAIN } from "../helpers/sim_config.ts";
import { apiFetch } from "../helpers/openapi_check.ts";
import { compiledPermissions } from "../helpers/compiled_permissions.ts";

const MAIN = `${REPO}src/main.ts`;
const LEASE_MS = 500;
const POLL_MS = 100;
const PROVIDER_TIMEOUT_MS = 15_000;
/**
 * Longest the runtime stays stopped waiting for the provider to log its lease expiry (a starved
 * provider writes its last reply, from which the lease counts, late): well under the provider's
 * timeout_ms (a request that outlives it would restart the provider, which resets its outputs by
 * another path).
 */
const STOPPED_MAX_MS = PROVIDER_TIMEOUT_MS / 2;
/** What the provider logs on stderr when its lease ran out (examples/providers/sim/README.md). */
const EXPIRY_LINE = `WARN [sim] lease expired (no request for ${LEASE_MS} ms): safe state applied`;
/** How long polling alone must keep the duty the call set: several lease lengths. */
const HELD_MS = 2 * LEASE_MS;
/**
 * Calls that set the duty again after a window in which the runtime was starved for a lease
 * length (a loaded machine): then the lease rightly expired, and that window says nothing of the
 * heartbeat.
 */
const STARVED_ATTEMPTS = 5;
/** Bound for each wait below; reported health is refreshed every 5 s. */
const WAIT_MS = 20_000;

/**
 * The runtime's YAML. The provider's stderr goes to `${dir}/provider.log` (through /bin/sh,
 * `exec`: the same pid), where the test sees it while the runtime is stopped.
 */
async function writeConfig(dir: string, port: number): Promise<string> {
  const path = `${dir}/runtime.yaml`;
  const log = providerLog(dir);
  await Deno.writeTextFile(
    path,
    `runtime:
  name: lease
  data_dir: ${dir}/data
  shutdown_timeout_ms: 2000
http:
  port: ${port}
providers:
  - id: sim0
    command: /bin/sh
    args: [-c, 'exec "$@" 2>>"$0"', ${log}, ${Deno.execPath()}, run, --quiet, --allow-read, --allow-env, ${SIM_MAIN}, --config, ${SIM_INERT_YAML}, --lease-ms, "${LEASE_MS}"]
    timeout_ms: ${PROVIDER_TIMEOUT_MS}
polling:
  interval_ms: ${POLL_MS}
`,
  );
  return path;
}

function providerLog(dir: string): string {
  return `${dir}/provider.log`;
}

/** The provider's stderr so far ("" before its first line). */
async function providerStderr(dir: string): Promise<string> {
  try {
    return await Deno.readTextFile(providerLog(dir));
  } catch (err) {
    if (err instanceof Deno.errors.NotFound) return "";
    throw err;
  }
}

/** Pids of the direct children of `pid` (from /proc). */
function childrenOf(pid: number): number[] {
  const out: number[] = [];
  for (const e of Deno.readDirSync("/proc")) {
    if (!/^\d+$/.test(e.name)) continue;
    try {
      const stat = Deno.readTextFileSync(`/proc/${e.name}/stat`);
      const ppid = Number(stat.slice(stat.lastIndexOf(")") + 2).split(" ")[1]);
      if (ppid === pid) out.push(Number(e.name));
    } catch {
      // process ended while listing
    }
  }
  return out;
}

type Json = Record<string, unknown>;

async function api(port: number, method: string, path: string, body?: unknown): Promise<Json> {
  const r = await apiFetch(`http://127.0.0.1:${port}${path}`, {
    method,
    ...(body === undefined
      ? {}
      : { body: JSON.stringify(body), headers: { "content-type": "application/json" } }),
  });
  const json = await r.json() as Json;
  assert.equal(r.status, 200, `${method} ${path}: ${JSON.stringify(json)}`);
  return json;
}

/** The cached value of one signal, or undefined. */
async function signal(port: number, device: string, id: string): Promise<unknown> {
  const r = await apiFetch(`http://127.0.0.1:${port}/v0/state/sim0/${device}?signal_id=${id}`);
  if (!r.ok) return void await r.body?.cancel();
  const json = await r.json() as { values?: Array<{ value: Record<string, unknown> }> };
  const v = json.values?.[0]?.value;
  return v === undefined ? undefined : v[String(v.type)];
}

/** motorctl0's polls since `sinceMs` from the runtime's history: each poll's time and duty. */
async function dutyPolls(port: number, sinceMs: number): Promise<{ t: number; duty: unknown }[]> {
  const h = await api(
    port,
    "GET",
    `/v0/history/sim0/motorctl0?signal_id=motor1_duty&since_ms=${sinceMs}`,
  );
  const [duty] = h.signals as { points: { t_ms: number; last: unknown }[] }[];
  return duty!.points.map((p) => ({ t: p.t_ms, duty: p.last }));
}

/**
 * Where in `times` (the call's start, then motorctl0's polls: the time each poll was stored) no
 * request may have reached the provider for a lease length, or null. A silence of LEASE_MS from
 * the provider's last reply holds at most one poll's store of motorctl0 (its next request follows
 * that store), so it spans two gaps of polls in a row.
 */
function starvedAt(times: readonly number[]): number | null {
  for (let i = 2; i < times.length; i++) {
    if (times[i]! - times[i - 2]! > LEASE_MS) return times[i - 2]!;
  }
  return null;
}

/**
 * Sets motor1_duty to 0.7 and reads motorctl0's polls until they show it for HELD_MS, then
 * asserts every poll from the first 0.7 on read 0.7 (the polls renewed the lease) and resolves
 * null; or resolves with what it saw when the runtime went a lease length without polling first
 * (the lease may rightly have expired: nothing to judge).
 */
async function dutyHeldByPolls(port: number): Promise<string | null> {
  const since = Date.now();
  await api(port, "POST", "/v0/call", {
    provider_id: "sim0",
    device_id: "motorctl0",
    function_id: 10,
    args: { motor_index: { type: "int64", int64: 1 }, duty: { type: "double", double: 0.7 } },
  });
  const seen = await waitFor("duty 0.7 polled for HELD_MS, or a starved runtime", async () => {
    const polls = await dutyPolls(port, since);
    const starved = starvedAt([since, ...polls.map((p) => p.t)]);
    if (starved !== null) return { polls, starved };
    const first = polls.findIndex((p) => p.duty === 0.7);
    return first >= 0 && polls.at(-1)!.t - polls[first]!.t >= HELD_MS
      ? { polls: polls.slice(first), starved }
      : null;
  }, WAIT_MS);
  if (seen.starved !== null) {
    return `no poll for a lease length from ${seen.starved}: ${JSON.stringify(seen.polls)}`;
  }
  // Still 0.7 after several lease lengths of normal polling: the heartbeat keeps the lease.
  for (const p of seen.polls) assert.equal(p.duty, 0.7, JSON.stringify(seen.polls));
  return null;
}

async function apiUp(port: number): Promise<Json | null> {
  try {
    const r = await apiFetch(`http://127.0.0.1:${port}/v0/runtime/status`);
    return r.ok ? await r.json() : (await r.body?.cancel(), null);
  } catch {
    return null;
  }
}

Deno.test("a provider on a lease goes safe while the runtime is stopped, and the runtime shows it after SIGCONT", async () => {
  const dir = await Deno.makeTempDir({ prefix: "provider-lease-" });
  const { port, started: { child, stderr, stdout } } = await startOnFreePort(
    async (port) => {
      const child = new Deno.Command(Deno.execPath(), {
        args: [
          "run",
          ...compiledPermissions(),
          "--quiet",
          MAIN,
          "--config",
          await writeConfig(dir, port),
        ],
        env: { NO_COLOR: "1" },
        stdin: "null",
        stdout: "piped",
        stderr: "piped",
      }).spawn();
      return {
        child,
        stderr: new Response(child.stderr).text(),
        stdout: new Response(child.stdout).text(),
      };
    },
    (s) => ({ pid: s.child.pid, ended: s.child.status }),
    async (s) => {
      try {
        s.child.kill("SIGKILL");
      } catch { /* already gone */ }
      await Promise.all([s.child.status, s.stdout, s.stderr]);
    },
  );
  let stopped = false;
  try {
    await waitFor("API answering", () => apiUp(port), 30000);
    await waitFor(
      "motorctl0 polled",
      async () => (await signal(port, "motorctl0", "motor1_duty")) === 0 || null,
      WAIT_MS,
    );
    const [provider] = childrenOf(child.pid);
    assert.ok(provider !== undefined, "the provider runs as a child of the runtime");

    await api(port, "POST", "/v0/mode", { mode: "MANUAL" });
    const starved: string[] = [];
    for (let s = await dutyHeldByPolls(port); s !== null; s = await dutyHeldByPolls(port)) {
      starved.push(s);
      assert.ok(
        starved.length < STARVED_ATTEMPTS,
        `starved at every attempt:\n${starved.join("\n")}`,
      );
    }

    // Expiries logged before here (a starved attempt above) are not the one this waits for.
    const logged = (await providerStderr(dir)).length;
    child.kill("SIGSTOP");
    stopped = true;
    // The provider goes safe on its own, seen in its log while the runtime cannot poll; a fixed
    // sleep would not know a provider starved past its lease (its last reply written late).
    await waitFor(
      "the provider's lease expiry in its stderr",
      async () => (await providerStderr(dir)).slice(logged).includes(EXPIRY_LINE) || null,
      STOPPED_MAX_MS,
    );
    child.kill("SIGCONT");
    stopped = false;

    await waitFor(
      "the safe duty in /v0/state",
      async () => (await signal(port, "motorctl0", "motor1_duty")) === 0 || null,
      WAIT_MS,
    );
    const reported = await waitFor("the lease expiry in /v0/providers/health", async () => {
      const h = await api(port, "GET", "/v0/providers/health");
      const p = (h.providers as Json[])[0];
      const r = p!.reported as { state: string; message: string; metrics: Record<string, string> };
      return r?.message.startsWith("lease expired") ? { p, r } : null;
    }, WAIT_MS);
    assert.match(
      reported.r.message,
      /^lease expired: safe state applied at \d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/,
    );
    assert.equal(reported.r.state, "STATE_DEGRADED");
    assert.equal(reported.r.metrics.lease_ms, String(LEASE_MS));
    assert.equal(reported.r.metrics.safe_state_reason, "lease_expired");
    assert.equal(reported.p!.state, "AVAILABLE");
    assert.equal(reported.p!.degraded, true);
    // The same process: the lease made it safe, not a restart.
    assert.deepEqual(childrenOf(child.pid), [provider]);
    // Polling resumed and does not undo it.
    assert.equal(await signal(port, "motorctl0", "motor1_duty"), 0);

    child.kill("SIGTERM");
    assert.equal((await child.status).code, 0);
    assert.equal(processAlive(provider), false);
  } finally {
    try {
      if (stopped) child.kill("SIGCONT");
      child.kill("SIGKILL");
    } catch { /* already gone */ }
    await child.status;
    await stdout;
    await stderr;
    await Deno.remove(dir, { recursive: true });
  }
});
