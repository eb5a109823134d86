/**
 * A provider's declared FunctionPolicy is enforced through the real HTTP API on a real socket,
 * against a real provider process on the provider SDK (tests/helpers/_policy_provider.ts):
 * min_interval_ms (429 + Retry-After), allowed_modes and requires_lease (409), each refusal
 * audited, never sent to the provider; the e-stop's ladder and the hooks into FAULT pass all three;
 * capabilities show every declared policy. docs/http-api.md, "Provider policies".
 */
import assert from "node:assert/strict";
import type { CallConfig } from "../../src/config/mod.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { recordEvents, startRuntime, waitFor } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { enterAuto, eventsOf, TreeDir, treeXml } from "./automation_helpers.ts";
import { policyProvider, policyStats } from "../helpers/policy_provider.ts";

const call = (fn: string): CallConfig => ({
  deviceHandle: "pol/act0",
  functionId: 0,
  functionName: fn,
  args: {},
  path: `safety.safe_state.hooks[${fn}]`,
});

async function withServed(
  body: (
    post: (path: string, json: unknown) => Promise<Response>,
    fx: Awaited<ReturnType<typeof startHttpFixture>>,
  ) => Promise<void>,
  o: { safeState?: boolean } = {},
): Promise<void> {
  const fx = await startHttpFixture({
    config: {
      providers: [policyProvider()],
      pollingIntervalMs: 5000,
      ...(o.safeState
        ? { safety: { hooks: [call("pulse"), call("auto_only"), call("leased")] } }
        : {}),
    },
  });
  try {
    const { port } = await fx.serve();
    const base = `http://127.0.0.1:${port}`;
    const post = (path: string, json: unknown) =>
      fetch(`${base}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(json),
      });
    await body(post, fx);
  } finally {
    await fx.close();
  }
}

const callBody = (functionId: number, args: Record<string, unknown> = {}) => ({
  provider_id: "pol",
  device_id: "act0",
  function_id: functionId,
  args,
});

Deno.test("POST /v0/call: a call sooner than min_interval_ms is 429 with Retry-After, audited, not sent", async () => {
  await withServed(async (post, fx) => {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    const first = await post("/v0/call", callBody(1));
    assert.equal(first.status, 200, await first.text());
    const second = await post("/v0/call", callBody(1));
    const body = await second.json();
    assert.equal(second.status, 429);
    assert.equal(body.status.code, "RESOURCE_EXHAUSTED");
    assert.match(
      body.status.message,
      /^Call refused: "pol\/act0" "pulse" was last called \d+ ms ago and its provider policy min_interval_ms is 1000 ms \(retry in \d+ ms\)$/,
    );
    assert.equal(second.headers.get("retry-after"), "1");
    // Another function of the same device has its own interval (none): not affected.
    const other = await post("/v0/call", callBody(5, { level: { type: "double", double: 0.5 } }));
    assert.equal(other.status, 200, await other.text());
    const stats = await policyStats(rt);
    assert.equal(stats.calls_pulse, 1, "the refused call never reached the provider");
    assert.equal(stats.calls_set_level, 1);

    const refused = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
      e.function === "pulse" && e.outcome === "refused"
    );
    assert.equal(refused.length, 1);
    assert.equal(refused[0]!.refused_by, "min_interval");
    assert.match(
      refused[0]!.reason ?? "",
      /^RESOURCE_EXHAUSTED: Call refused: "pol\/act0" "pulse"/,
    );

    // Once the interval has passed, the next call goes through.
    const wait = Number(/retry in (\d+) ms/.exec(body.status.message)![1]);
    await new Promise((r) => setTimeout(r, wait + 5));
    const third = await post("/v0/call", callBody(1));
    assert.equal(third.status, 200, await third.text());
    assert.equal((await policyStats(rt)).calls_pulse, 2);
  });
});

Deno.test("POST /v0/call from a page with a CORS grant: the 429's Retry-After is exposed to the page", async () => {
  // A browser hands a cross-origin page only the CORS-safelisted response headers and those
  // Access-Control-Expose-Headers lists (Fetch standard): Retry-After is not safelisted.
  const origin = "http://localhost:3000";
  const fx = await startHttpFixture({
    config: {
      providers: [policyProvider()],
      pollingIntervalMs: 5000,
      http: { corsAllowedOrigins: [origin] },
    },
  });
  try {
    const { port } = await fx.serve();
    await fx.runtime.modes.request("MANUAL");
    const post = () =>
      fetch(`http://127.0.0.1:${port}/v0/call`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify(callBody(1)),
      });
    const first = await post();
    assert.equal(first.status, 200, await first.text());
    const second = await post();
    await second.body?.cancel();
    assert.equal(second.status, 429);
    assert.equal(second.headers.get("access-control-allow-origin"), origin);
    assert.equal(second.headers.get("retry-after"), "1");
    const exposed = (second.headers.get("access-control-expose-headers") ?? "")
      .split(",").map((h) => h.trim().toLowerCase());
    assert.ok(exposed.includes("retry-after"), `exposed: ${exposed.join(", ")}`);
  } finally {
    await fx.close();
  }
});

Deno.test("POST /v0/call: allowed_modes and requires_lease refuse with 409, audited, not sent", async () => {
  await withServed(async (post, fx) => {
    const rt = fx.runtime;
    // IDLE: `peek` is READ (the mode gate lets it through) but declares allowed_modes [MANUAL].
    const idlePeek = await post("/v0/call", callBody(4));
    const idleBody = await idlePeek.json();
    assert.equal(idlePeek.status, 409);
    assert.equal(idleBody.status.code, "FAILED_PRECONDITION");
    assert.equal(
      idleBody.status.message,
      'Call refused in IDLE mode: "pol/act0" "peek" is allowed only in "MANUAL" (provider policy allowed_modes)',
    );
    await rt.modes.request("MANUAL");
    assert.equal((await post("/v0/call", callBody(4))).status, 200);

    // MANUAL: `auto_only` is allowed in AUTO only.
    const auto = await post("/v0/call", callBody(2));
    assert.equal(auto.status, 409);
    assert.equal(
      (await auto.json()).status.message,
      'Call refused in MANUAL mode: "pol/act0" "auto_only" is allowed only in "AUTO" (provider policy allowed_modes)',
    );
    // requires_lease: this runtime grants no leases.
    const leased = await post("/v0/call", callBody(3));
    assert.equal(leased.status, 409);
    assert.equal(
      (await leased.json()).status.message,
      'Call refused: "pol/act0" "leased" requires a lease (provider policy requires_lease) and this runtime grants no leases',
    );

    const stats = await policyStats(rt);
    assert.equal(stats.calls_peek, 1);
    assert.equal(stats.calls_auto_only, 0);
    assert.equal(stats.calls_leased, 0);
    const refusals = (await rt.audit.query({ limit: 100 })).entries
      .filter((e) => e.outcome === "refused")
      .map((e) => [e.function, e.refused_by]);
    // `peek` is read-only: not audited (as every read-only call).
    assert.deepEqual(refusals.sort(), [["auto_only", "allowed_modes"], [
      "leased",
      "requires_lease",
    ]]);
  });
});

Deno.test("The e-stop's safe-state ladder passes min_interval_ms, allowed_modes and requires_lease", async () => {
  await withServed(async (post, fx) => {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    assert.equal((await post("/v0/call", callBody(1))).status, 200);
    // Within pulse's 1000 ms; auto_only outside AUTO; leased without a lease: a stop goes through.
    const estop = await post("/v0/estop", { reason: "policy test" });
    const answer = await estop.json();
    assert.equal(estop.status, 200, JSON.stringify(answer));
    assert.deepEqual(answer.hook_failures, []);
    const stats = await policyStats(rt);
    assert.equal(
      stats.calls_pulse,
      2,
      "the ladder's pulse was sent 0-1000 ms after the manual one",
    );
    assert.equal(stats.calls_auto_only, 1);
    assert.equal(stats.calls_leased, 1);
  }, { safeState: true });
});

Deno.test("GET capabilities shows every declared function policy and signal hint", async () => {
  await withServed(async (_post, fx) => {
    const caps = await fx.request("GET", "/v0/devices/pol/act0/capabilities");
    assert.equal(caps.status, 200);
    const policies = Object.fromEntries(
      caps.json.capabilities.functions.map((f: { name: string; policy: unknown }) => [
        f.name,
        f.policy,
      ]),
    );
    const none = {
      allowed_modes: [],
      requires_lease: false,
      min_interval_ms: 0,
      is_idempotent: false,
      safety_profile: "",
    };
    assert.deepEqual(policies, {
      pulse: { ...none, min_interval_ms: 1000 },
      auto_only: { ...none, allowed_modes: ["AUTO"] },
      leased: { ...none, requires_lease: true },
      peek: {
        ...none,
        allowed_modes: ["MANUAL"],
        is_idempotent: true,
        safety_profile: "read_only",
      },
      set_level: none,
    });
    const slow = await fx.request("GET", "/v0/devices/pol/slow0/capabilities");
    assert.deepEqual(slow.json.capabilities.signals, [
      {
        signal_id: "t",
        value_type: "double",
        label: "t",
        poll_hint_hz: 0.5,
        stale_after_ms: 10000,
      },
    ]);
  });
});

/** A runtime polling the policy provider, running `tree` in AUTO (with the AUTO -> FAULT hook). */
function policyTreeConfig(tree: string) {
  return testConfig({
    providers: [policyProvider()],
    pollingIntervalMs: 5000,
    automation: {
      enabled: true,
      behaviorTree: tree,
      tickRateHz: 20,
      modeTransitionHooks: {
        beforeTransition: [{
          from: "AUTO",
          to: "FAULT",
          failOnError: false,
          path: "automation.mode_transition_hooks.before_transition[0]",
          calls: [{
            deviceHandle: "pol/act0",
            functionId: 0,
            functionName: "set_level",
            args: { level: { type: "double", double: 0 } },
            path: "automation.mode_transition_hooks.before_transition[0].calls[0]",
          }],
        }],
        afterTransition: [],
      },
    },
  });
}

Deno.test("A behavior-tree CallDevice sooner than min_interval_ms fails with the refusal", async () => {
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "pulses.xml",
      treeXml(
        `<Sequence>
      <CallDevice device_handle="pol/act0" function_name="pulse" args="json:{}" />
      <CallDevice device_handle="pol/act0" function_name="pulse" args="json:{}" />
    </Sequence>`,
      ),
    );
    const rt = await startRuntime(policyTreeConfig(tree));
    const rec = recordEvents(rt);
    try {
      await enterAuto(rt);
      const error = await waitFor("bt_error", () => eventsOf(rec.events, "bt_error")[0]);
      assert.equal(error.node, "Main/Sequence[0]/CallDevice[1]");
      assert.equal(rt.modes.current(), "AUTO", "a refused call fails the node, not the runtime");
      await rt.modes.request("MANUAL"); // stops the tree
      const refused = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
        e.function === "pulse" && e.outcome === "refused"
      );
      assert.ok(refused.length >= 1);
      assert.equal(refused[0]!.origin.kind, "automation");
      assert.equal(refused[0]!.refused_by, "min_interval");
      assert.match(refused[0]!.reason ?? "", /min_interval_ms is 1000 ms/);
      assert.ok((await policyStats(rt)).calls_pulse! >= 1, "the first CallDevice went through");
    } finally {
      rec.stop();
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("AUTO is refused when the tree calls a function whose policy never lets it run in AUTO, naming each", async () => {
  // Before, AUTO was entered and the tree failed at its first call to `peek` (MANUAL only) or
  // `leased` (a lease this runtime never grants).
  const dir = await TreeDir.create();
  try {
    const tree = await dir.write(
      "policies.xml",
      treeXml(
        `<Sequence>
      <CallDevice device_handle="pol/act0" function_name="auto_only" args="json:{}" />
      <CallDevice device_handle="pol/act0" function_name="peek" args="json:{}" />
      <CallDevice device_handle="pol/act0" function_name="leased" args="json:{}" />
      <CallDevice device_handle="{dev}" function_name="peek" args="json:{}" />
      <Script code="dev := 'pol/act0'" _skipIf="true" />
    </Sequence>`,
      ),
    );
    const rt = await startRuntime(policyTreeConfig(tree));
    try {
      await rt.modes.request("MANUAL");
      await assert.rejects(rt.modes.request("AUTO"), (err: Error) => {
        assert.match(err.message, /refusing AUTO: the behavior tree calls pol\/act0 peek \(/);
        assert.match(err.message, /allowed only in "MANUAL" \(provider policy allowed_modes\)/);
        assert.match(err.message, /; pol\/act0 leased \(/);
        assert.doesNotMatch(err.message, /auto_only/, "AUTO is among auto_only's allowed modes");
        return true;
      });
      assert.equal(rt.modes.current(), "MANUAL");
      assert.equal((await policyStats(rt)).calls_auto_only ?? 0, 0, "the tree never ran");
    } finally {
      await rt.stop();
    }
    // The same runtime without those calls enters AUTO and runs the tree.
    const allowed = await dir.write(
      "allowed.xml",
      treeXml(`<CallDevice device_handle="pol/act0" function_name="auto_only" args="json:{}" />`),
    );
    const ok = await startRuntime(policyTreeConfig(allowed));
    try {
      await enterAuto(ok);
      await waitFor("auto_only called", async () => (await policyStats(ok)).calls_auto_only! >= 1);
      // A reload to the tree with peek and leased: the gate reads the new tree's calls.
      await ok.modes.request("MANUAL");
      assert.equal(await ok.automation!.reloadTree(tree, 20), "replaced");
      await assert.rejects(ok.modes.request("AUTO"), /the behavior tree calls pol\/act0 peek/);
    } finally {
      await ok.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("Of two calls racing within min_interval_ms, exactly one is sent", async () => {
  await withServed(async (_post, fx) => {
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    const pulse = () =>
      rt.router.call({
        providerId: "pol",
        deviceId: "act0",
        functionName: "pulse",
        args: {},
        origin: "manual",
      });
    // Both pass the first check before either is sent; the second is refused under the lock.
    const outcomes = await Promise.allSettled([pulse(), pulse()]);
    assert.equal(outcomes[0].status, "fulfilled");
    assert.equal(outcomes[1].status, "rejected");
    assert.equal((outcomes[1] as PromiseRejectedResult).reason.code, "RESOURCE_EXHAUSTED");
    assert.equal((await policyStats(rt)).calls_pulse, 1);
  });
});

Deno.test("AUTO refused for the tree's calls is audited as refused by allowed_modes / requires_lease, not device_loss", async () => {
  const dir = await TreeDir.create();
  try {
    const peek = await dir.write(
      "peek.xml",
      treeXml(`<CallDevice device_handle="pol/act0" function_name="peek" args="json:{}" />`),
    );
    const leased = await dir.write(
      "leased.xml",
      treeXml(`<CallDevice device_handle="pol/act0" function_name="leased" args="json:{}" />`),
    );
    const rt = await startRuntime(policyTreeConfig(peek));
    try {
      await rt.modes.request("MANUAL");
      const refusedBy = async () => {
        await assert.rejects(rt.modes.request("AUTO"), /the behavior tree calls pol\/act0/);
        const entries = (await rt.audit.query({ limit: 100 })).entries.filter((e) =>
          e.action === "mode" && e.function === "AUTO" && e.outcome === "refused"
        );
        return entries.at(-1)?.refused_by;
      };
      assert.equal(await refusedBy(), "allowed_modes");
      assert.equal(await rt.automation!.reloadTree(leased, 20), "replaced");
      assert.equal(await refusedBy(), "requires_lease");
    } finally {
      await rt.stop();
    }
  } finally {
    await dir.dispose();
  }
});

Deno.test("The hooks into FAULT pass min_interval_ms, allowed_modes and requires_lease, also made again for a provider that comes back while FAULT stands", async () => {
  const hookCall = (fn: string, i: number): CallConfig => ({
    ...call(fn),
    path: `automation.mode_transition_hooks.before_transition[0].calls[${i}]`,
  });
  const fx = await startHttpFixture({
    config: {
      providers: [{
        ...policyProvider(),
        restartPolicy: { ...policyProvider().restartPolicy, enabled: true, backoffMs: [0, 0, 0] },
      }],
      pollingIntervalMs: 5000,
      automation: {
        modeTransitionHooks: {
          beforeTransition: [{
            from: "*",
            to: "FAULT",
            failOnError: true,
            path: "automation.mode_transition_hooks.before_transition[0]",
            calls: ["pulse", "auto_only", "leased"].map(hookCall),
          }],
          afterTransition: [],
        },
      },
    },
  });
  try {
    const { port } = await fx.serve();
    const post = (path: string, json: unknown) =>
      fetch(`http://127.0.0.1:${port}${path}`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify(json),
      });
    const rt = fx.runtime;
    await rt.modes.request("MANUAL");
    assert.equal((await post("/v0/call", callBody(1))).status, 200);
    // An operator's FAULT (no e-stop): its hooks are stop actions all the same.
    const fault = await post("/v0/mode", { mode: "FAULT" });
    const answer = await fault.json();
    assert.equal(fault.status, 200, JSON.stringify(answer));
    assert.deepEqual(answer.hook_failures, []);
    const stats = await policyStats(rt);
    assert.deepEqual([stats.calls_pulse, stats.calls_auto_only, stats.calls_leased], [2, 1, 1]);
    // The provider crashes and comes back while FAULT stands: it gets the hooks' calls again,
    // within pulse's interval of the hook's pulse to the process before.
    const host = rt.registry.host("pol")!;
    const first = host.session!.pid;
    Deno.kill(first, "SIGKILL");
    await waitFor("pol back", () => host.available && host.session?.pid !== first);
    const again = await waitFor("the hooks made again", async () => {
      const s = await policyStats(rt);
      return s.calls_pulse! + s.calls_auto_only! + s.calls_leased! >= 3 ? s : undefined;
    });
    assert.deepEqual(
      [again.calls_pulse, again.calls_auto_only, again.calls_leased],
      [1, 1, 1],
      JSON.stringify(await (await fetch(`http://127.0.0.1:${port}/v0/audit?limit=20`)).json()),
    );
    assert.equal(rt.modes.current(), "FAULT");
  } finally {
    await fx.close();
  }
});
