/**
 * A reload's date comes from the wall clock (ConfigReloader #date, for its `config_reload` event
 * and GET /metrics' last success). A clock that throws there must not make request() reject:
 * SIGHUP calls it without awaiting (app/process.ts `void kernel.reloader.request()`), so a
 * rejection would be unhandled. The reload is counted and its summary said; the clock's failure
 * is one ERROR line; with no time, no event is published (no invented time). In-process: the
 * reloader over a stand-in runtime whose injected clock throws, its lines captured.
 */
import assert from "node:assert/strict";
import { ConfigReloader, type ReloadedConfig } from "../../src/app/reloader.ts";
import { startedReloadReport } from "../../src/app/reload_report.ts";
import { EventBus, type RuntimeEvent } from "../../src/events/mod.ts";
import { capturingLogger } from "../helpers/log_lines.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** A reloader over a runtime that applies every file (one section), its clock's nowMs throwing. */
function rig(loaded: ReloadedConfig) {
  const { log, lines } = capturingLogger();
  const bus = new EventBus();
  const events: RuntimeEvent[] = [];
  bus.subscribe(({ event }) => void events.push(event));
  const config = testConfig({ providers: [] });
  const reloader = new ConfigReloader({
    runtime: {
      config,
      bus,
      host: {
        clock: {
          nowMs: () => {
            throw new Error("clock unplugged");
          },
        },
      },
      reload: () => {
        const report = startedReloadReport([], []);
        report.applied.push("logging");
        return Promise.resolve(report);
      },
    },
    load: () => Promise.resolve(loaded),
    log,
  });
  return { reloader, lines, events };
}

const errors = (lines: readonly string[]) => lines.filter((l) => l.includes("ERROR"));

Deno.test("ConfigReloader: a wall clock that throws when an applied reload is dated rejects nothing; one ERROR line names it", async () => {
  const { reloader, lines, events } = rig({
    ok: true,
    config: testConfig({ providers: [] }),
    warnings: [],
  });
  // SIGHUP's call: never awaited there, so it must never reject.
  await reloader.request();
  const counts = reloader.counts();
  assert.deepEqual(counts, { success: 1, failure: 0, lastSuccessEpochSeconds: null });
  assert.ok(lines.some((l) => l.includes("config reload: ") && l.includes("applied: logging")));
  const errs = errors(lines);
  assert.equal(errs.length, 1, errs.join("\n"));
  assert.match(errs[0]!, /config reload: reading the wall clock failed: clock unplugged/);
  assert.deepEqual(events.filter((e) => e.kind === "config_reload"), [], "no undated event");
});

Deno.test("ConfigReloader: a wall clock that throws when a failed reload is dated rejects nothing; the failure and the clock each said once", async () => {
  const { reloader, lines, events } = rig({ ok: false, errors: ["an error"] });
  await reloader.request();
  assert.deepEqual(reloader.counts(), { success: 0, failure: 1, lastSuccessEpochSeconds: null });
  const errs = errors(lines);
  assert.equal(errs.length, 3, errs.join("\n"));
  assert.match(errs[0]!, /config reload: an error/);
  assert.match(errs[1]!, /config reload failed: 1 error\(s\) in the file/);
  assert.match(errs[2]!, /config reload: reading the wall clock failed: clock unplugged/);
  assert.deepEqual(events.filter((e) => e.kind === "config_reload"), []);
});

Deno.test("ConfigReloader: an unforeseen throw after the kernel's answer rejects nothing; one ERROR line names it, and a reload asked meanwhile still runs", async () => {
  const { log, lines } = capturingLogger();
  let reloads = 0;
  const reloader = new ConfigReloader({
    runtime: {
      config: testConfig({ providers: [] }),
      bus: new EventBus(),
      host: { clock: { nowMs: () => Date.now() } },
      reload: () => {
        reloads++;
        // Asked again while the first runs: coalesced into one more after it.
        if (reloads === 1) void reloader.request();
        // A report the reloader cannot read (no refused list): its summary throws.
        const { refused: _, ...broken } = startedReloadReport([], []);
        return Promise.resolve(broken as unknown as ReturnType<typeof startedReloadReport>);
      },
    },
    load: () => Promise.resolve({ ok: true, config: testConfig({ providers: [] }), warnings: [] }),
    log,
  });
  await reloader.request();
  assert.equal(reloads, 2, "the reload asked meanwhile ran");
  const errs = errors(lines);
  assert.equal(errs.length, 2, errs.join("\n"));
  for (const e of errs) assert.match(e, /config reload failed unexpectedly: /);
});
