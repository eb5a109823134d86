/**
 * More calls in flight across a run's close than the audit trail lists (AUDIT_MAX_UNSETTLED):
 * the outcome of every call decided before the next run opened -- listed or not -- is no event
 * of that next run. The calls are written ahead and settled through the kernel's own audit trail
 * (as the router does, one per provider lock: many providers at once), the sim provider running.
 */
import assert from "node:assert/strict";
import { AUDIT_MAX_UNSETTLED } from "../../src/audit/mod.ts";
import type { AuditIntent } from "../../src/control/mod.ts";
import { startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

const IN_FLIGHT = AUDIT_MAX_UNSETTLED + 44;

const decision = (i: number) => ({
  origin: { kind: "http" as const, address: "127.0.0.1", token_name: "local" },
  device_handle: "sim0/motorctl0",
  function: "set_motor_duty",
  args: { duty: { type: "double", double: i } },
});

Deno.test("Kernel: the outcomes of calls in flight past AUDIT_MAX_UNSETTLED when a run closes are no events of the next run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_inflight_overflow_" });
  const rt = await startRuntime(
    testConfig({ runtime: { dataDir: dir }, history: { enabled: false } }),
  );
  try {
    const a = (await rt.runs.open({})).run;
    const intents: AuditIntent[] = [];
    for (let i = 0; i < IN_FLIGHT; i++) {
      const intent = await rt.audit.writeAhead(decision(i));
      assert.ok(intent !== null);
      intents.push(intent);
    }
    await rt.runs.close(a.run_id, {});
    const b = (await rt.runs.open({})).run;
    intents.forEach((intent, i) =>
      rt.audit.record({ ...decision(i), action: "call", outcome: "accepted", intent })
    );
    rt.audit.flushOpen();
    await rt.runs.close(b.run_id, {});
    const calls = async (id: string) =>
      (await rt.runs.listEvents(id, { limit: 1000 })).events.filter((e) => e.category === "call");
    assert.equal(
      (await calls(b.run_id)).length,
      0,
      "every call was decided before run B opened",
    );
    const inFlight = await calls(a.run_id);
    assert.ok(inFlight.every((e) => e.payload.outcome === "in_flight"));
    // Those the audit trail does not list (past AUDIT_MAX_UNSETTLED) are counted by run A.
    const closed = (await rt.runs.listEvents(a.run_id, { limit: 1000 })).events.at(-1)!;
    assert.deepEqual(
      closed.payload,
      { events_not_recorded: IN_FLIGHT - inFlight.length },
      "run A says how many of its calls in flight it could not list",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel: the outcome of a call decided before a run opened never collapses with an identical call of that run into one of its events", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_collapse_boundary_" });
  const rt = await startRuntime(
    testConfig({ runtime: { dataDir: dir }, history: { enabled: false } }),
  );
  try {
    const done = (intent: AuditIntent | null) =>
      rt.audit.record({ ...decision(1), action: "call", outcome: "accepted", intent });
    // Before run B: X in flight. Run B: X answers, then Y, identical, is decided and answers.
    const x = await rt.audit.writeAhead(decision(1));
    const b = (await rt.runs.open({})).run;
    done(x);
    done(await rt.audit.writeAhead(decision(1)));
    rt.audit.flushOpen();
    // Run C: Y' decided and answered, then X', decided before C opened, answers.
    const x2 = await rt.audit.writeAhead(decision(1));
    await rt.runs.close(b.run_id, {});
    const c = (await rt.runs.open({})).run;
    done(await rt.audit.writeAhead(decision(1)));
    done(x2);
    await rt.runs.close(c.run_id, {});
    const counts = async (id: string) =>
      (await rt.runs.listEvents(id, { limit: 1000 })).events.filter((e) => e.category === "call")
        .map((e) => [e.payload.outcome, e.payload.count]);
    assert.deepEqual(await counts(b.run_id), [["accepted", 1], ["in_flight", 1]], "Y, then X'");
    assert.deepEqual(await counts(c.run_id), [["accepted", 1]], "Y' only");
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel: repeats of the open call entry in flight past AUDIT_MAX_UNSETTLED when a run closes are counted by it, and their outcomes are no events of the next run", async () => {
  const dir = await Deno.makeTempDir({ prefix: "run_repeat_overflow_" });
  const rt = await startRuntime(
    testConfig({ runtime: { dataDir: dir }, history: { enabled: false } }),
  );
  try {
    const a = (await rt.runs.open({})).run;
    // The open entry: one answered call; every identical call decided next is a repeat of it.
    const first = await rt.audit.writeAhead(decision(1));
    rt.audit.record({ ...decision(1), action: "call", outcome: "accepted", intent: first });
    const intents: (AuditIntent | null)[] = [];
    for (let i = 0; i < IN_FLIGHT; i++) intents.push(await rt.audit.writeAhead(decision(1)));
    await rt.runs.close(a.run_id, {});
    const b = (await rt.runs.open({})).run;
    for (const intent of intents) {
      rt.audit.record({ ...decision(1), action: "call", outcome: "accepted", intent });
    }
    rt.audit.flushOpen();
    await rt.runs.close(b.run_id, {});
    const events = async (id: string) => (await rt.runs.listEvents(id, { limit: 1000 })).events;
    assert.deepEqual(
      (await events(b.run_id)).filter((e) => e.category === "call").map((e) => e.payload.count),
      [],
      "every repeat was decided before run B opened",
    );
    const ofA = await events(a.run_id);
    const inFlight = ofA.filter((e) => e.payload.outcome === "in_flight").length;
    assert.deepEqual(
      ofA.at(-1)!.payload,
      { events_not_recorded: IN_FLIGHT - inFlight },
      "run A says how many of its repeats in flight it could not list",
    );
  } finally {
    await rt.stop();
    await Deno.remove(dir, { recursive: true });
  }
});
