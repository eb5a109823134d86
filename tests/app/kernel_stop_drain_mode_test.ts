/**
 * A stop after a start that succeeded halts the tree (its "automation" stage) before it closes the
 * API and drains the HTTP server: a POST /v0/mode whose body was still arriving when the stop
 * began is answered in that drain. Entering AUTO then would commit AUTO for a tree that will never
 * tick again (the last telemetry, audit entry and mode_change event saying AUTO): refused (409,
 * the mode unchanged), as is one asked before the stop whose before_transition hooks were still
 * running (refused at its commit). FAULT and MANUAL are entered as ever. Real kernel, real child,
 * real HTTP.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../../src/app/kernel.ts";
import { startServing, waitFor } from "../helpers/kernel.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { routedPost } from "../helpers/pending_body.ts";
import { testConfig } from "../helpers/sim_config.ts";
import { call, hook, inertSim, manualCall } from "../safety/_fixture.ts";
import { STOP_MOTOR_ON_FAULT } from "../scenarios/automation_helpers.ts";

/** What the sim's motor controller takes to answer a call while a MANUAL -> AUTO hook runs. */
const HOOK_LATENCY_MS = 1500;

function automationConfig(beforeAuto: ReturnType<typeof hook>[] = []) {
  return testConfig({
    http: { port: 0 },
    providers: [inertSim("sim0")],
    automation: {
      enabled: true,
      modeTransitionHooks: {
        // AUTO's gate wants a hook into FAULT while anything actuates.
        beforeTransition: [STOP_MOTOR_ON_FAULT, ...beforeAuto],
        afterTransition: [],
      },
    },
  });
}

/** POST /v0/mode {mode} sent once the stop has begun (its body held until then). */
async function modeInTheDrain(
  rt: Kernel,
  mode: string,
): Promise<{ status: number; body: { status?: { message?: string } }; stopped: Promise<void> }> {
  const request = await routedPost(rt, "/v0/mode");
  const stopped = rt.stop();
  request.send(JSON.stringify({ mode }));
  const { status, body } = await request.answer;
  return { status, body, stopped };
}

Deno.test("Kernel.stop after a normal start: a POST /v0/mode AUTO answered in the HTTP drain is refused, the tree halted", async () => {
  const rt = await startServing(automationConfig());
  let stopped: Promise<void> | null = null;
  try {
    await rt.modes.request("MANUAL");
    assert.equal(rt.modes.autoGateProblem(), null, "AUTO's gate would let it in before the stop");
    const sent = await modeInTheDrain(rt, "AUTO");
    stopped = sent.stopped;
    assert.equal(rt.modes.current(), "MANUAL", `AUTO entered: ${JSON.stringify(sent.body)}`);
    assert.equal(sent.status, 409, JSON.stringify(sent.body));
    assert.match(sent.body.status!.message!, /refusing AUTO: the runtime is stopping/);
    await stopped;
    stopped = null;
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});

Deno.test("Kernel.stop after a normal start: FAULT, then MANUAL, requested in the HTTP drain are entered", async () => {
  for (const [from, to] of [["MANUAL", "FAULT"], ["FAULT", "MANUAL"]] as const) {
    const rt = await startServing(automationConfig());
    let stopped: Promise<void> | null = null;
    try {
      await rt.modes.request(from === "FAULT" ? "MANUAL" : from);
      if (from === "FAULT") await rt.modes.request("FAULT");
      const sent = await modeInTheDrain(rt, to);
      stopped = sent.stopped;
      assert.equal(sent.status, 200, `${from} -> ${to}: ${JSON.stringify(sent.body)}`);
      assert.equal(rt.modes.current(), to);
      await stopped;
      stopped = null;
    } finally {
      await (stopped ?? rt.stop()).catch(() => {});
    }
  }
});

Deno.test("Kernel.stop while a MANUAL -> AUTO request's before_transition hook runs: AUTO is refused at its commit", async () => {
  const { log, lines } = capturingLogger({ level: "info" });
  const rt = await startServing(
    automationConfig([
      hook(
        "MANUAL",
        "AUTO",
        [call("sim0/motorctl0", "set_motor_duty", { motor_index: 1, duty: { double: 0 } })],
        true,
        "automation.mode_transition_hooks.before_transition[1]",
      ),
    ]),
    { log },
  );
  let stopped: Promise<void> | null = null;
  try {
    await rt.modes.request("MANUAL");
    // The motor controller answers the hook's call HOOK_LATENCY_MS after it gets it.
    await manualCall(rt, "sim0", "chaos_control", 3, {
      device_id: { type: "string", string: "motorctl0" },
      latency_ms: { type: "int64", int64: HOOK_LATENCY_MS },
    });
    const answer = fetch(`http://127.0.0.1:${rt.http!.port}/v0/mode`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ mode: "AUTO" }),
    }).then(async (r) => ({ status: r.status, body: await r.json() }));
    await waitFor(
      "the MANUAL -> AUTO hooks running",
      () => lines.some((l) => l.includes("transition MANUAL -> AUTO (requested)")),
    );
    stopped = rt.stop();
    const { status, body } = await answer;
    assert.equal(rt.modes.current(), "MANUAL", `AUTO entered: ${JSON.stringify(body)}`);
    assert.equal(status, 409, JSON.stringify(body));
    assert.match(body.status.message, /refusing AUTO: the runtime is stopping/);
    await stopped;
    stopped = null;
  } finally {
    await (stopped ?? rt.stop()).catch(() => {});
  }
});
