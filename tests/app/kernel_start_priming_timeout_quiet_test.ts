/**
 * A start-up whose first poll pass outlasts runtime.startup_timeout_ms stops the providers already
 * up on purpose (Kernel #primeCache): their going is the failed start's cleanup, not a device
 * loss, so none of it reaches the event bus (telemetry's signal rows, the history, SSE, the
 * incident records all read it). Real kernel, real children: the simulated provider `s1` answers
 * its first poll; a scripted provider `hung` never answers its own.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import { newKernel, recordEvents } from "../helpers/kernel.ts";
import { simProvider, testConfig } from "../helpers/sim_config.ts";
import { killLeftovers, readScriptedLog, scriptedProvider } from "../scenarios/process_helpers.ts";

/** What of an event tells of a signal or device going (UNAVAILABLE, or not available). */
function going(e: RuntimeEvent): boolean {
  switch (e.kind) {
    case "state_update":
      return e.quality === "UNAVAILABLE";
    case "quality_change":
      return e.new_quality === "UNAVAILABLE";
    case "device_availability":
      return !e.available;
    default:
      return false;
  }
}

Deno.test("Kernel.start failing at runtime.startup_timeout_ms on a first poll not answered publishes no UNAVAILABLE sample or device loss of the providers it stops", async () => {
  const dir = await Deno.makeTempDir({ prefix: "start-prime-quiet-" });
  const scripted = `${dir}/provider.log`;
  const rt = newKernel(
    testConfig({
      // Room for s1 to come up and answer its first poll on a busy machine: only hung fails.
      runtime: { startupTimeoutMs: 3000 },
      providers: [
        simProvider("s1", { restart: false }),
        // timeout_ms far beyond the start-up budget: only the budget ends its first poll.
        scriptedProvider("hung", ["--log", scripted, "--hang", "read_signals"], {
          timeoutMs: 60000,
        }),
      ],
    }),
  );
  const recorded = recordEvents(rt);
  try {
    const failed = await rt.start().then(() => null, (e: Error) => e.message);
    assert.match(failed ?? "start succeeded", /first poll of hung not answered/);
  } finally {
    await rt.stop();
    recorded.stop();
    killLeftovers(readScriptedLog(scripted).pids);
    await Deno.remove(dir, { recursive: true });
  }
  const s1 = recorded.events.filter((e) => "provider_id" in e && e.provider_id === "s1");
  assert.ok(
    s1.some((e) => e.kind === "state_update" && e.quality === "OK"),
    "s1's first poll is published",
  );
  assert.deepEqual(recorded.events.filter(going), [], "nothing of the providers' going");
});
