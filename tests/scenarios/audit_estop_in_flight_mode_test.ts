/**
 * A call sent before the e-stop latched and answered after it (its provider was hung meanwhile)
 * is on the audit trail, and in the run's events, with the mode it was decided in
 * (docs/http-api.md "Audit trail": `mode` is the runtime mode when the decision was made), not the
 * FAULT the stop entered while it was on the wire: an HTTP call `accepted` in FAULT would read as
 * a call the latch let through. So too when the audit journal's folder cannot be opened (nothing
 * reaches the disk; the run's events say it).
 */
import assert from "node:assert/strict";
import { waitFor } from "../helpers/kernel.ts";
import { startHttpFixture } from "../helpers/runtime_fixture.ts";
import { expectation, inertSim } from "../safety/_fixture.ts";
import { hangSim0, jsonPoster, MOTOR1_HALF_DUTY } from "./_hung_sim.ts";

/** How long the provider stops reading after the chaos `hang` call (its call timeout is 5 s). */
const HANG_MS = 1500;

Deno.test("GET /v0/audit gives a call answered after the e-stop latched the mode it was decided in, MANUAL", async () => {
  await estopInFlight({ journal: "ok" });
});

Deno.test("A run's events give a call answered after the e-stop latched the mode it was decided in, MANUAL, when the audit journal's folder cannot be opened", async () => {
  const dir = await Deno.makeTempDir({ prefix: "audit_estop_in_flight_" });
  try {
    // A file where the journal's folder should be: nothing of the trail reaches the disk.
    await Deno.writeTextFile(`${dir}/audit`, "not a folder\n");
    await estopInFlight({ journal: "failing", dataDir: dir });
  } finally {
    await Deno.remove(dir, { recursive: true });
  }
});

/**
 * A call sent in MANUAL to a hung provider, an e-stop while it is on the wire, the answer after:
 * its entry (when the journal works) and its run event say MANUAL.
 */
async function estopInFlight(
  o: { journal: "ok" | "failing"; dataDir?: string },
): Promise<void> {
  const fx = await startHttpFixture({
    config: {
      ...(o.dataDir === undefined ? {} : { runtime: { dataDir: o.dataDir } }),
      providers: [inertSim("sim0", { restart: false })],
      // No poll while the provider hangs: the one request on the wire is then the call.
      pollingIntervalMs: 60_000,
      safety: {
        zeroIsSafe: true,
        expect: [expectation("sim0/motorctl0/motor1_duty", { equals: 0 })],
      },
    },
  });
  const server = await fx.serve();
  const base = `http://127.0.0.1:${server.port}`;
  const post = jsonPoster(base);
  const get = async (path: string) => await (await fetch(`${base}${path}`)).json();
  try {
    const run = await post("/v0/runs", { experiment_label: "in-flight" });
    assert.equal(run.status, 200, JSON.stringify(run.json));
    assert.equal((await post("/v0/mode", { mode: "MANUAL" })).status, 200);
    await hangSim0(post, HANG_MS);

    const session = fx.runtime.registry.host("sim0")!.session!;
    const callAnswer = post("/v0/call", MOTOR1_HALF_DUTY);
    await waitFor("the call on the wire", () => session.inFlight > 0 ? true : null);
    const stop = await post("/v0/estop", { reason: "call in flight" });
    assert.equal(stop.status, 200, JSON.stringify(stop.json));
    const call = await callAnswer;
    assert.equal(
      call.status,
      200,
      `sent before the latch, answered after: ${JSON.stringify(call.json)}`,
    );
    assert.equal(
      stop.json.verification.outcome,
      "verified",
      "the ladder's zero was the last write",
    );

    const health = (await get("/v0/providers/health")).audit as { journal: string };
    assert.equal(health.journal, o.journal);
    if (o.journal === "ok") {
      const entries = (await get("/v0/audit")).entries as Array<Record<string, unknown>>;
      const at = (pred: (e: Record<string, unknown>) => boolean) => entries.findIndex(pred);
      const manual = at((e) =>
        e.function === "set_motor_duty" && (e.origin as { kind: string }).kind === "http"
      );
      assert.ok(manual >= 0, JSON.stringify(entries));
      assert.equal(entries[manual]!.outcome, "accepted");
      assert.equal(entries[manual]!.mode, "MANUAL", JSON.stringify(entries[manual]));
      // The stop's own entries say FAULT; the ladder's zero follows the call on the trail.
      const ladder = at((e) =>
        e.function === "set_motor_duty" && (e.origin as { kind: string }).kind === "estop"
      );
      assert.ok(ladder > manual, JSON.stringify(entries));
      assert.equal(entries[ladder]!.mode, "FAULT");
    }

    const events = (await get(`/v0/runs/${run.json.run.run_id}/events`)).events as Array<
      { category: string; payload: Record<string, unknown> }
    >;
    const event = events.find((e) =>
      e.category === "call" && e.payload.function === "set_motor_duty" &&
      (e.payload.origin as { kind: string }).kind === "http"
    );
    assert.equal(event?.payload.mode, "MANUAL", JSON.stringify(event));
  } finally {
    await fx.close();
  }
}
