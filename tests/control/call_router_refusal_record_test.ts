/**
 * CallRouter keeps one record of what refused a call before it was sent: the audit entry's
 * `refused_by` and refusedBeforeSending (what automation status reads to list the tree's refused
 * calls in `refused_calls`, not `device_outages`) are the same name for every refusal cause. A
 * refusal path that named one and forgot the other fails here. Against the plant (device plant0,
 * in-process) and the policy provider (pol/act0: requires_lease, min_interval), with a router of
 * their own (no mode gates: the gates are the test's).
 */
import assert from "node:assert/strict";
import { RuntimeError } from "../../src/common/mod.ts";
import {
  type AuditDecision,
  type CallGate,
  CallRouter,
  refusedBeforeSending,
} from "../../src/control/mod.ts";
import { testLogger } from "../helpers/kernel.ts";
import { policyProvider } from "../helpers/policy_provider.ts";
import { rig } from "../helpers/rig.ts";
import { d, plantProvider } from "../safety/_fixture.ts";

/** What one refused call left: its audit entry's refused_by ("none": no entry) and the mark. */
interface Seen {
  readonly audit: string | null | "none";
  readonly marked: string | null;
}

Deno.test("CallRouter: every refusal before sending names the same check in the audit entry and in refusedBeforeSending", async () => {
  await using r = await rig({ providers: [plantProvider("plant"), policyProvider()] });
  const rt = r.kernel;
  const entries: AuditDecision[] = [];
  const router = new CallRouter({
    registry: rt.registry,
    cache: rt.cache,
    log: testLogger(),
    clock: r.clock,
  });
  router.setAuditSink({ record: (e) => entries.push(e) });

  /** Runs one call that must be refused; what the audit and the mark say of it. */
  const refused = async (
    req: Partial<Parameters<CallRouter["call"]>[0]>,
  ): Promise<Seen> => {
    const before = entries.length;
    const err = await router.call({
      providerId: "plant",
      deviceId: "plant0",
      functionName: "set_fan",
      args: { duty: d(0.5) },
      origin: "automated",
      ...req,
    }).then(() => assert.fail("the call was not refused"), (e: unknown) => e);
    const entry = entries.slice(before).find((e) => e.action === "call");
    assert.ok(entry === undefined || entry.outcome === "refused", JSON.stringify(entry));
    return {
      audit: entry === undefined ? "none" : entry.refused_by ?? null,
      marked: refusedBeforeSending(err),
    };
  };

  const seen: Record<string, Seen> = {};
  /** A gate `name` refusing set_fan only, by answering or by throwing. */
  const only = (how: "answers" | "throws" | "crashes"): CallGate => ({ fn }) => {
    if (fn.name !== "set_fan") return null;
    const refusal = new RuntimeError("FAILED_PRECONDITION", `refused by a gate that ${how}`);
    if (how === "answers") return refusal;
    throw how === "throws" ? refusal : new Error("the gate crashed");
  };
  for (const how of ["answers", "throws", "crashes"] as const) {
    const gate = only(how);
    router.addGate(gate, `gate_${how}`);
    seen[`gate ${how}`] = await refused({});
    router.replaceGate(gate, () => null);
  }
  seen["validation"] = await refused({ args: { duty: d(5) } });
  seen["no selector"] = await refused({ functionName: "" });
  seen["id and name disagree"] = await refused({ functionId: 1, functionName: "set_fan" });
  seen["unknown_function"] = await refused({ functionName: "no_such_function" });
  seen["unknown_provider"] = await refused({ providerId: "nope" });
  seen["queue"] = await refused({ signal: AbortSignal.abort() });
  seen["requires_lease"] = await refused({
    providerId: "pol",
    deviceId: "act0",
    functionName: "leased",
    args: {},
  });
  await router.call({
    providerId: "pol",
    deviceId: "act0",
    functionName: "pulse",
    args: {},
    origin: "automated",
  });
  seen["min_interval"] = await refused({
    providerId: "pol",
    deviceId: "act0",
    functionName: "pulse",
    args: {},
  });

  assert.deepEqual(seen, {
    "gate answers": { audit: "gate_answers", marked: "gate_answers" },
    // A gate that throws its refusal instead of answering it still refused.
    "gate throws": { audit: "gate_throws", marked: "gate_throws" },
    // A gate that crashes is named as the refuser; no refusal of the caller's (INTERNAL).
    "gate crashes": { audit: "gate_crashes", marked: null },
    "validation": { audit: "validation", marked: "validation" },
    // The function is not known: no audit entry (it may not actuate), still the caller's mistake.
    "no selector": { audit: "none", marked: "validation" },
    "id and name disagree": { audit: "none", marked: "validation" },
    "unknown_function": { audit: "none", marked: "unknown_function" },
    "unknown_provider": { audit: "none", marked: "unknown_provider" },
    // The provider's queue: audited as a refusal, but nothing about the caller.
    "queue": { audit: "queue", marked: null },
    "requires_lease": { audit: "requires_lease", marked: "requires_lease" },
    "min_interval": { audit: "min_interval", marked: "min_interval" },
  });
});
