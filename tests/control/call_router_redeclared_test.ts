/**
 * CallRouter against a provider that restarts, while a call waits under its lock, with another
 * declaration of the same device: the call is resolved and validated again against what the
 * provider declares now (call_router.ts #redeclared), never sent as validated against the old one.
 *
 * The provider (in-process, `valve` below) declares in its first process `set_opening(pct in
 * [0, 100])` as function 1 and `open_drain(pct)` as function 2; every later process swaps the
 * ids and narrows `set_opening` to [0, 50] (and may declare a policy for it); like an anolis
 * provider it selects by function_id only. The call waits under the lock where the router writes
 * its decision ahead to the audit trail; the test holds that write until the provider is back.
 */
import assert from "node:assert/strict";
import type { ProviderConfig } from "../../src/config/mod.ts";
import { RuntimeError } from "../../src/common/mod.ts";
import { refusedBeforeSending } from "../../src/control/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { DeviceProvider, type FunctionDefinition } from "../../src/provider_sdk/mod.ts";
import { waitFor } from "../helpers/kernel.ts";
import type { ProgramHost } from "../helpers/in_process_provider.ts";
import { TEST_PROGRAMS } from "../helpers/programs.ts";
import { rig } from "../helpers/rig.ts";
import { d } from "../safety/_fixture.ts";

const VALVE = "valve-provider";

/** What each process of the valve provider ran: `${process}:${function}(${pct})`. */
/** What a later process of the valve changes: see valveProgram. */
interface ValveChanges {
  /** set_opening is read-only in a later process. */
  readLater?: boolean;
  /** set_opening is read-only in the first process. */
  actuateLater?: boolean;
  /** A later process names its device valve1. */
  renamedLater?: boolean;
  /** A later process declares a policy for set_opening (docs/http-api.md "Provider policies"). */
  policyLater?: Pick<FunctionDefinition, "requiresLease" | "allowedModes" | "minIntervalMs">;
}

function valveProgram(ran: string[], o: ValveChanges = {}) {
  let processes = 0;
  return (_host: ProgramHost) => {
    const process = ++processes;
    const first = process === 1;
    const fn = (id: number, name: string, max: number): FunctionDefinition => ({
      id,
      name,
      // readLater: a later process declares set_opening read-only (a reading of the opening);
      // actuateLater: the first one does.
      category: name === "set_opening" && (first ? o.actuateLater : o.readLater)
        ? "READ"
        : "ACTUATE",
      args: [{ name: "pct", type: "double", min: 0, max }],
      ...(name === "set_opening" && !first ? o.policyLater : {}),
      handler: (args) => {
        ran.push(`${process}:${name}(${args.double("pct")})`);
      },
    });
    const provider = new DeviceProvider({ name: "valve", version: "0.0.1" }, [{
      deviceId: o.renamedLater && !first ? "valve1" : "valve0",
      typeId: "test.valve",
      typeVersion: "1.0",
      label: "Valve and drain",
      signals: [{
        id: "ok",
        name: "OK",
        type: "bool",
        pollHintHz: 2,
        staleAfterMs: 2000,
        read: () => true,
      }],
      functions: first
        ? [fn(1, "set_opening", 100), fn(2, "open_drain", 100)]
        : [fn(1, "open_drain", 100), fn(2, "set_opening", 50)],
    }]);
    // As an anolis provider: function_id is ADPP's one selector (spec, CallRequest); the name
    // the runtime sends along is not looked at (the SDK would refuse a mismatch).
    const call = provider.call.bind(provider);
    provider.call = (req, ctx) => call({ ...req, function_name: "" }, ctx);
    return provider;
  };
}

function valveProvider(): ProviderConfig {
  return {
    id: "valve",
    command: VALVE,
    args: [],
    timeoutMs: 5000,
    helloTimeoutMs: 10000,
    readyTimeoutMs: 10000,
    restartPolicy: {
      enabled: true,
      maxAttempts: 3,
      backoffMs: [50],
      timeoutMs: 30000,
      successResetMs: 1000,
    },
  };
}

/**
 * Calls `set_opening` as `selector` says while the provider is killed and comes back: the call
 * takes the lock, its write-ahead is held until the new process is up, then goes on.
 */
async function callAcrossRestart(
  selector: { functionId?: number; functionName?: string },
  pct: number,
  o: ValveChanges = {},
): Promise<{ outcome: unknown; ran: string[]; audit: Kernel["audit"] }> {
  const ran: string[] = [];
  await using r = await rig({
    providers: [valveProvider()],
    programs: { ...TEST_PROGRAMS, [VALVE]: valveProgram(ran, o) },
    arm: true,
  });
  const rt = r.kernel;
  const host = rt.registry.host("valve")!;
  const trail = rt.audit as unknown as { writeAhead: (...a: unknown[]) => Promise<unknown> };
  const writeAhead = trail.writeAhead.bind(rt.audit);
  let held = false;
  trail.writeAhead = async (...a: unknown[]) => {
    held = true;
    const first = host.devices;
    r.kill("valve");
    await waitFor(
      "valve back with its new declaration",
      () => host.available && host.devices !== first && host.devices.length === 1,
    );
    return await writeAhead(...a);
  };
  let outcome: unknown;
  try {
    outcome = await rt.router.call({
      providerId: "valve",
      deviceId: "valve0",
      ...selector,
      args: { pct: d(pct) },
      origin: "manual",
    }).catch((err: unknown) => err);
  } finally {
    trail.writeAhead = writeAhead;
  }
  assert.ok(held, "the call waited under the lock");
  return { outcome, ran: [...ran], audit: rt.audit };
}

function refusal(outcome: unknown): RuntimeError {
  assert.ok(outcome instanceof RuntimeError, `refused, not ${JSON.stringify(outcome)}`);
  return outcome;
}

Deno.test("CallRouter: a call by function_id whose id now selects another function after a restart is refused, not sent to that function", async () => {
  const { outcome, ran, audit } = await callAcrossRestart({ functionId: 1 }, 30);
  // Before: the call went out as function 1 -- the new process's open_drain.
  assert.deepEqual(ran, [], "nothing ran in either process");
  const e = refusal(outcome);
  assert.equal(e.code, "FAILED_PRECONDITION");
  assert.match(e.message, /function_id 1 of valve\/valve0 is now "open_drain", not "set_opening"/);
  const entry = (await audit.query({ limit: 10 })).entries.find((x) => x.action === "call");
  assert.equal(entry?.outcome, "refused");
  assert.equal(entry?.refused_by, "validation");
  assert.equal(refusedBeforeSending(e), "validation", "the audit and the refusal disagree");
});

Deno.test("CallRouter: a call by function_id and name whose id names another function after a restart is refused by validation, in the audit entry and refusedBeforeSending alike", async () => {
  const { outcome, ran, audit } = await callAcrossRestart(
    { functionId: 1, functionName: "set_opening" },
    30,
  );
  assert.deepEqual(ran, [], "nothing ran in either process");
  const e = refusal(outcome);
  assert.equal(e.code, "INVALID_ARGUMENT");
  assert.match(e.message, /function_id 1 is "open_drain", not "set_opening".*restarted/);
  const entry = (await audit.query({ limit: 10 })).entries.find((x) => x.action === "call");
  assert.deepEqual(
    [entry?.outcome, entry?.refused_by, refusedBeforeSending(e)],
    ["refused", "validation", "validation"],
  );
});

Deno.test("CallRouter: a call by name is sent under the function's new id after a restart, its arguments validated against the new bounds", async () => {
  // Within the new bounds: it goes out as the new process's set_opening (function 2).
  const within = await callAcrossRestart({ functionName: "set_opening" }, 30);
  assert.deepEqual(within.ran, ["2:set_opening(30)"]);
  assert.equal((within.outcome as { functionId: number }).functionId, 2);

  // Beyond the new bound (50), within the old (100): refused, nothing ran.
  const beyond = await callAcrossRestart({ functionName: "set_opening" }, 80);
  assert.deepEqual(beyond.ran, [], "the narrowed bound holds");
  assert.equal(refusal(beyond.outcome).code, "INVALID_ARGUMENT");
});

Deno.test("CallRouter: an actuating call whose function is read-only after a restart is refused, its decision written ahead settled", async () => {
  const { outcome, ran, audit } = await callAcrossRestart({ functionName: "set_opening" }, 30, {
    readLater: true,
  });
  assert.deepEqual(
    audit.inFlightCalls().map((c) => c.function),
    [],
    "the decision written ahead is never settled",
  );
  assert.deepEqual(ran, [], "sent as validated (actuating), or not at all");
  const e = refusal(outcome);
  assert.equal(e.code, "FAILED_PRECONDITION");
  assert.match(e.message, /"set_opening" of valve\/valve0 is now read-only, not actuating/);
  const entry = (await audit.query({ limit: 10 })).entries.find((x) => x.action === "call");
  assert.deepEqual([entry?.outcome, entry?.refused_by], ["refused", "validation"]);
});

Deno.test("CallRouter: a read-only call whose function is actuating after a restart is refused, not sent with no decision written ahead", async () => {
  const ran: string[] = [];
  await using r = await rig({
    providers: [valveProvider()],
    programs: { ...TEST_PROGRAMS, [VALVE]: valveProgram(ran, { actuateLater: true }) },
    arm: true,
  });
  const rt = r.kernel;
  const host = rt.registry.host("valve")!;
  const trail = rt.audit as unknown as { writeAhead: (...a: unknown[]) => Promise<unknown> };
  const writeAhead = trail.writeAhead.bind(rt.audit);
  const written: string[] = [];
  const call = (functionName: string) =>
    rt.router.call({
      providerId: "valve",
      deviceId: "valve0",
      functionName,
      args: { pct: d(30) },
      origin: "manual",
    }).catch((err: unknown) => err);
  let second: Promise<unknown> | null = null;
  // open_drain (actuating) holds the lock in its write ahead while the provider restarts; the
  // read of set_opening waits behind it, validated as a read (nothing written ahead for it).
  trail.writeAhead = async (...a: unknown[]) => {
    written.push(String((a[0] as { function?: string }).function));
    if (second === null) {
      second = call("set_opening");
      const first = host.devices;
      r.kill("valve");
      await waitFor(
        "valve back with its new declaration",
        () => host.available && host.devices !== first && host.devices.length === 1,
      );
    }
    return await writeAhead(...a);
  };
  try {
    await call("open_drain");
    const outcome = await second;
    assert.deepEqual(
      [ran, written],
      [["2:open_drain(30)"], ["open_drain"]],
      "set_opening went out actuating with no decision written ahead",
    );
    const e = refusal(outcome);
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.match(e.message, /"set_opening" of valve\/valve0 is now actuating, not read-only/);
  } finally {
    trail.writeAhead = writeAhead;
  }
});

Deno.test("CallRouter: a call whose device is gone after a restart is refused as `unavailable` (the device's business, not the caller's)", async () => {
  const { outcome, ran, audit } = await callAcrossRestart({ functionName: "set_opening" }, 30, {
    renamedLater: true,
  });
  assert.deepEqual(ran, []);
  const e = refusal(outcome);
  assert.equal(e.code, "NOT_FOUND");
  assert.match(e.message, /Device not found: valve\/valve0 \(its provider restarted/);
  const entry = (await audit.query({ limit: 10 })).entries.find((x) => x.action === "call");
  assert.deepEqual(
    [entry?.outcome, entry?.refused_by, refusedBeforeSending(e)],
    ["refused", "unavailable", null],
  );
});

Deno.test("CallRouter: a call whose function a restart declares with requires_lease or allowed_modes leaving the mode out is refused by that policy at its turn, audited so, its decision written ahead settled", async () => {
  const cases = [
    { policy: { requiresLease: true }, by: "requires_lease", text: /requires a lease/ },
    { policy: { allowedModes: ["AUTO"] }, by: "allowed_modes", text: /allowed only in "AUTO"/ },
  ];
  for (const c of cases) {
    const { outcome, ran, audit } = await callAcrossRestart({ functionName: "set_opening" }, 30, {
      policyLater: c.policy,
    });
    assert.deepEqual(ran, [], `${c.by}: sent under the old declaration's (absent) policy`);
    const e = refusal(outcome);
    assert.equal(e.code, "FAILED_PRECONDITION");
    assert.match(e.message, c.text);
    assert.deepEqual(audit.inFlightCalls().map((x) => x.function), [], `${c.by}: left in flight`);
    const entry = (await audit.query({ limit: 10 })).entries.find((x) => x.action === "call");
    assert.deepEqual(
      [entry?.outcome, entry?.refused_by, refusedBeforeSending(e)],
      ["refused", c.by, c.by],
    );
  }
});

Deno.test("CallRouter: a call sooner than the min_interval_ms a provider restart declares after the last call sent to the process before is refused with 429 (the last send is known though no interval was declared then)", async () => {
  const ran: string[] = [];
  await using r = await rig({
    providers: [valveProvider()],
    programs: {
      ...TEST_PROGRAMS,
      [VALVE]: valveProgram(ran, { policyLater: { minIntervalMs: 600_000 } }),
    },
    arm: true,
  });
  const rt = r.kernel;
  const host = rt.registry.host("valve")!;
  const call = () =>
    rt.router.call({
      providerId: "valve",
      deviceId: "valve0",
      functionName: "set_opening",
      args: { pct: d(30) },
      origin: "manual",
    }).catch((err: unknown) => err);
  await call();
  assert.deepEqual(ran, ["1:set_opening(30)"]);
  const first = host.devices;
  r.kill("valve");
  await waitFor("valve back", () => host.available && host.devices !== first);
  // Sent moments ago, and the provider now asks for ten minutes between two.
  const e = refusal(await call());
  assert.deepEqual(ran, ["1:set_opening(30)"], "sent sooner than the declared interval");
  assert.equal(e.code, "RESOURCE_EXHAUSTED");
  assert.match(e.message, /min_interval_ms is 600000 ms/);
  assert.equal(refusedBeforeSending(e), "min_interval");
});
