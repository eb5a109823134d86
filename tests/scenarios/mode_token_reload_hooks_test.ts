/**
 * An operator's MANUAL -> AUTO request whose token a reload removes while its before_transition
 * hooks run (docs/http-api.md, "Roles"): asked again before AUTO commits, as the arming checks are;
 * answered 401, the mode stays MANUAL, audited as a refused mode request with refused_by auth. A
 * reload that keeps the token arms AUTO. Real HTTP on loopback (loopback not exempt); the simulated
 * provider runs as a child process and holds the hook's call by its `inject_call_latency`. And a
 * mode request made with a token a reload puts in, as soon as it admits (the reload still
 * re-checking the open event streams), follows the reload's `config` entry on the audit trail.
 */
import assert from "node:assert/strict";
import type { ApiTokenConfig } from "../../src/config/mod.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, i, inertSim, manualCall } from "../safety/_fixture.ts";
import { automationOptions, STOP_MOTOR_ON_FAULT, TreeDir, treeXml } from "./automation_helpers.ts";
import {
  ADMIN,
  fetchAs,
  NIGHT,
  OPERATOR,
  refusedEntries,
  reloadTokens,
  SHIFT,
  tokenHttp,
} from "./_token_reload_rig.ts";

/**
 * How long the sim holds the hook's call: long enough for the reload to happen while it runs
 * (checked, not assumed), within the provider's timeout_ms.
 */
const LATENCY_MS = 3000;

/** POST /v0/mode AUTO by 'shift', a reload to `tokens` while its before-hook runs. */
async function autoThenReload(tokens: readonly ApiTokenConfig[]) {
  const dir = await TreeDir.create();
  const tree = await dir.write("idle.xml", treeXml(`<Sleep msec="60000" />`));
  const base = automationOptions(tree, {
    config: { providers: [inertSim("sim0", { timeoutMs: 10_000 })], pollingIntervalMs: 60_000 },
  });
  const path = "automation.mode_transition_hooks.before_transition[1]";
  const rt = await startServing(testConfig({
    ...base,
    http: tokenHttp(),
    automation: {
      ...base.automation!,
      modeTransitionHooks: {
        beforeTransition: [
          STOP_MOTOR_ON_FAULT,
          hook(
            "MANUAL",
            "AUTO",
            [call("sim0/motorctl0", 10, { motor_index: 1, duty: 0 })],
            true,
            path,
          ),
        ],
        afterTransition: [],
      },
    },
  }));
  try {
    await rt.modes.request("MANUAL");
    await manualCall(rt, "sim0", "chaos_control", 3, {
      device_id: { type: "string", string: "motorctl0" },
      latency_ms: i(LATENCY_MS),
    });
    const session = rt.registry.host("sim0")!.session!;
    const answer = fetchAs(rt, "/v0/mode", OPERATOR, { mode: "AUTO" });
    await waitFor("the before-hook's call at sim0", () => session.inFlight > 0, 10_000, 0);
    await reloadTokens(rt, tokens);
    assert.ok(session.inFlight > 0, "the hook's call still ran when the reload was done");
    const res = await answer;
    const refused = (await refusedEntries(rt, "mode"))
      .map((e) => [e.origin.token_name, e.function, e.refused_by, e.reason]);
    return {
      status: res.status,
      challenge: res.headers.get("www-authenticate"),
      body: await res.json(),
      mode: rt.modes.current(),
      refused,
    };
  } finally {
    await rt.stop();
    await dir.dispose();
  }
}

Deno.test("POST /v0/mode AUTO whose token a reload removes while its before-hooks run is answered 401, AUTO not armed, audited as refused by auth", async () => {
  const r = await autoThenReload([]);
  assert.equal(r.status, 401, JSON.stringify(r.body));
  assert.equal(r.challenge, "Bearer");
  assert.equal(r.body.status.message, "Missing or invalid bearer token");
  assert.equal(r.mode, "MANUAL", "AUTO was not armed");
  assert.deepEqual(r.refused, [[
    "shift",
    "AUTO",
    "auth",
    "UNAUTHENTICATED: token 'shift' no longer admits: the API tokens were replaced " +
    "(configuration reload) while it waited to act (its turn, or its hooks)",
  ]]);
});

Deno.test("POST /v0/mode AUTO through a reload that keeps its token while its before-hooks run arms AUTO", async () => {
  const r = await autoThenReload([SHIFT, NIGHT]);
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.mode, "AUTO");
  assert.deepEqual(r.refused, []);
});

/**
 * Wraps crypto.subtle.digest until `restore()`: from the call, the second digest of a text of
 * `bytes` bytes waits for `release()` (`held` once it does); every other is let through.
 */
function holdSecondDigest(bytes: number) {
  const subtle = crypto.subtle;
  const real = subtle.digest;
  let release!: () => void;
  const released = new Promise<void>((resolve) => release = resolve);
  let seen = 0;
  let held = false;
  Object.defineProperty(subtle, "digest", {
    configurable: true,
    writable: true,
    value: (algorithm: AlgorithmIdentifier, data: BufferSource) => {
      if (data.byteLength === bytes && ++seen === 2) {
        held = true;
        return released.then(() => real.call(subtle, algorithm, data));
      }
      return real.call(subtle, algorithm, data);
    },
  });
  return {
    held: () => held,
    release,
    restore: () => void delete (subtle as unknown as Record<string, unknown>).digest,
  };
}

Deno.test("A reload replacing a token records its config entry before any request the new token admits: a POST /v0/mode made as soon as it works follows it on the audit trail", async () => {
  const rotated = "operator-token-rotated-5e2a9c7b";
  const rt = await startServing(testConfig({ providers: [], http: tokenHttp() }));
  let digests: ReturnType<typeof holdSecondDigest> | null = null;
  try {
    // An event stream open with ADMIN (the only token of its length): the reload re-checks it.
    const stream = await fetchAs(rt, "/v0/events", ADMIN);
    assert.equal(stream.status, 200);
    digests = holdSecondDigest(new TextEncoder().encode(ADMIN).byteLength);
    // ADMIN's digests from here on: the new tokens' (let through), then the stream's re-check, held
    // once the new tokens are in force.
    const reload = reloadTokens(rt, [{ ...SHIFT, token: rotated }]);
    await waitFor("the reload re-checking the open stream", digests.held, 10_000);
    const res = await fetchAs(rt, "/v0/mode", rotated, { mode: "MANUAL" });
    assert.equal(res.status, 200, await res.text());
    digests.release();
    await reload;
    await stream.body?.cancel();
    const audit = await (await fetchAs(rt, "/v0/audit", ADMIN)).json();
    // deno-lint-ignore no-explicit-any
    const entries = audit.entries.map((e: any) => [e.seq, e.action, e.function]);
    const config = entries.findIndex((e: unknown[]) => e[1] === "config");
    const mode = entries.findIndex((e: unknown[]) => e[1] === "mode" && e[2] === "MANUAL");
    assert.ok(config >= 0 && mode >= 0, JSON.stringify(entries));
    assert.ok(
      config < mode,
      `the config entry after the request it let in: ${JSON.stringify(entries)}`,
    );
    assert.ok(entries[config][0] < entries[mode][0]);
    assert.ok(!JSON.stringify(audit).includes(rotated), "no token on the trail");
  } finally {
    digests?.restore();
    await rt.stop();
  }
});
