/**
 * Every start-up that fails, or that stop() ends before it resolved, stops the providers already
 * up on purpose: their going is the failed start's cleanup, not a device loss, so none of it
 * reaches the event bus (telemetry's signal rows, the history, SSE, the incident records all read
 * it) -- not only the priming timeout's (kernel_start_priming_timeout_quiet_test): a start failing
 * after the priming poll (the HTTP port in use), a stop during the priming poll, a stop during
 * the rest of start-up (while the API is being bound). Real kernel, real children, real HTTP.
 */
import assert from "node:assert/strict";
import type { RuntimeEvent } from "../../src/events/mod.ts";
import type { Kernel } from "../../src/app/kernel.ts";
import { checkServe, serveHttp } from "../../src/host/mod.ts";
import { newKernel, recordEvents, waitFor } from "../helpers/kernel.ts";
import { freePort } from "../helpers/ports.ts";
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

/** s1's first poll was published (the provider was up and its devices seen). */
function s1Polled(events: readonly RuntimeEvent[]): boolean {
  return events.some((e) =>
    e.kind === "state_update" && e.provider_id === "s1" && e.quality === "OK"
  );
}

/** Stops `rt` (the stop after the failed start), then asserts nothing of the providers' going. */
async function assertQuiet(rt: Kernel, recorded: ReturnType<typeof recordEvents>) {
  try {
    await rt.stop();
  } finally {
    recorded.stop();
  }
  assert.ok(s1Polled(recorded.events), "s1's first poll is published");
  assert.deepEqual(recorded.events.filter(going), [], "nothing of the providers' going");
}

Deno.test("Kernel.start failing after the priming poll (the HTTP port taken after its probe) publishes no UNAVAILABLE sample or device loss of the providers its stop ends", async () => {
  const port = freePort();
  // Whoever takes the port between the start's probe (before any spawn) and its bind.
  let holder: Deno.Listener | null = null;
  const rt = newKernel(
    testConfig({ http: { port }, providers: [simProvider("s1", { restart: false })] }),
    {
      serve: serveHttp,
      checkServe: async (options) => {
        await checkServe(options);
        holder = Deno.listen({ hostname: "127.0.0.1", port });
      },
    },
  );
  const recorded = recordEvents(rt);
  try {
    const failed = await rt.start().then(() => null, (e: Error) => e.message);
    assert.ok(holder !== null, "the port was taken after the probe");
    assert.ok(failed !== null, "the start fails: its port is in use");
    await assertQuiet(rt, recorded);
  } finally {
    await rt.stop().catch(() => {});
    (holder as Deno.Listener | null)?.close();
  }
});

Deno.test("Kernel.stop during the priming poll publishes no UNAVAILABLE sample or device loss of the providers it stops", async () => {
  const dir = await Deno.makeTempDir({ prefix: "start-stop-priming-quiet-" });
  const scripted = `${dir}/provider.log`;
  const rt = newKernel(
    testConfig({
      providers: [
        simProvider("s1", { restart: false }),
        // Its first poll never answers: the priming poll waits until the stop.
        scriptedProvider("hung", ["--log", scripted, "--hang", "read_signals"], {
          timeoutMs: 60000,
        }),
      ],
    }),
  );
  const recorded = recordEvents(rt);
  try {
    const starting = rt.start().then(() => null, (e: Error) => e.message);
    await waitFor("s1's first poll", () => s1Polled(recorded.events), 30000);
    const stopping = assertQuiet(rt, recorded);
    assert.match((await starting) ?? "start succeeded", /stopping/);
    await stopping;
  } finally {
    await rt.stop().catch(() => {});
    killLeftovers(readScriptedLog(scripted).pids);
    await Deno.remove(dir, { recursive: true });
  }
});

Deno.test("Kernel.stop during the rest of start-up (the API being bound) publishes no UNAVAILABLE sample or device loss of the providers it stops", async () => {
  let rt: Kernel | null = null;
  let stopping: Promise<void> | null = null;
  rt = newKernel(
    testConfig({ providers: [simProvider("s1", { restart: false })] }),
    {
      // The stop signal arrives while the start binds its API, after the priming poll.
      serve: (options) => {
        stopping = assertQuiet(rt!, recorded);
        return serveHttp(options);
      },
    },
  );
  const recorded = recordEvents(rt);
  try {
    const failed = await rt.start().then(() => null, (e: Error) => e.message);
    assert.match(failed ?? "start succeeded", /stopping/);
    assert.ok(stopping !== null, "the stop was asked while the API was bound");
    await stopping;
  } finally {
    await rt.stop().catch(() => {});
  }
});
