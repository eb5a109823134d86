/**
 * A provider that comes back while the e-stop is latched gets its securing run (the ladder's call
 * for it) and then the hook calls into FAULT made again (docs/safety.md, "A provider that comes
 * back while in FAULT"). A configuration reload that restarts it while its securing call runs
 * waits for that call and for the hook call made again after it before it stops the process
 * (docs/safety.md, step 2): both are answered, no `hook_failure` is published, and the old process
 * is gone once the reload answers. Real child processes: the plant provider, killed and restarted
 * by its supervisor; each of its actuating calls answers LATENCY_MS after it arrived.
 */
import assert from "node:assert/strict";
import { processAlive, waitFor } from "../helpers/kernel.ts";
import { rig } from "../helpers/rig.ts";
import { call, fanIntoFault, plantProvider } from "../safety/_fixture.ts";

/** How long the plant holds each actuating call: the reload arrives during the securing call. */
const LATENCY_MS = 1000;

Deno.test("Estop latched: a provider that comes back gets its securing call and its hook call into FAULT made again, both answered before a reload that restarts it during the securing call stops its process", async () => {
  await using r = await rig({
    programs: false,
    providers: [plantProvider("plant", { latencyMs: LATENCY_MS, restartBackoffMs: 100 })],
    pollingIntervalMs: 60000, // no polls waiting behind the slow calls
    automation: {
      enabled: true,
      manualGatingPolicy: "BLOCK",
      modeTransitionHooks: { beforeTransition: [], afterTransition: [fanIntoFault(0.5)] },
    },
    safety: { hooks: [call("plant/plant0", "set_heater", { enabled: false })] },
    arm: true,
  });
  const rt = r.kernel;
  const stop = await rt.estop.trigger("operator");
  assert.deepEqual(stop.hook_failures, []);
  const plant = rt.registry.host("plant")!;
  const pid = r.kill("plant");
  const securing =
    "e-stop latched: provider plant is AVAILABLE again; bringing it to the safe state";
  await waitFor("plant's securing call", () => r.lines.some((l) => l.includes(securing)), 20_000);
  const back = plant.session!.pid;
  assert.notEqual(back, pid);
  // While its securing call runs, a reload restarts it (its entry changed).
  const report = await rt.reload({
    ...rt.config,
    providers: rt.config.providers.map((p) => ({ ...p, timeoutMs: 6000 })),
  });
  assert.deepEqual(report.providers.restarted, ["plant"]);
  assert.equal(processAlive(back), false, `plant's old process (pid ${back}) still runs`);
  const failures = r.events.filter((e) => e.kind === "hook_failure");
  assert.deepEqual(failures, [], "a hook call into FAULT closed under by the reload");
  assert.ok(
    r.lines.some((l) => l.includes("making its 1 hook call(s) into FAULT (MANUAL->FAULT) again")),
    "the hook call into FAULT made again after the securing run",
  );
  const waited = r.lines.filter((l) => l.includes("reload: waited"));
  assert.equal(waited.length, 1, waited.join("\n"));
  assert.match(
    waited[0]!,
    /reload: waited \d+ ms for the e-stop's safe-state calls and the hook calls into FAULT to plant, then stopped it$/,
  );
});
