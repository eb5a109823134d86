/**
 * The ConfigReloader's own lines (its re-reading, the file's warnings and errors, the one summary
 * line) are said after or around what a reload decides: a logger that throws on one of them (a
 * custom logger) must not skip the reload, its count or its `config_reload` event, nor make
 * request() -- which never rejects, and which SIGHUP calls without awaiting -- reject. Real: the
 * kernel with its reloader, over a LineLogger whose chosen line throws.
 */
import assert from "node:assert/strict";
import type { Config } from "../../src/config/mod.ts";
import type { ReloadedConfig } from "../../src/app/mod.ts";
import { LineLogger } from "../../src/host/mod.ts";
import { recordEvents, startRuntime } from "../helpers/kernel.ts";
import { testConfig } from "../helpers/sim_config.ts";

/** A LineLogger whose lines containing `failing` throw (counted), the rest written nowhere. */
function failingLogger(failing: string): { log: LineLogger; thrown: () => number } {
  let thrown = 0;
  const log = new LineLogger({
    level: "debug",
    journald: false,
    now: () => Date.now(),
    write: (line) => {
      if (line.includes(failing)) {
        thrown++;
        throw new Error("log sink failed");
      }
    },
  });
  return { log, thrown: () => thrown };
}

const CASES = [
  { line: "the summary line", failing: "config reload: providers", valid: true },
  { line: "a warning of the file", failing: "config reload: a warning", valid: true },
  { line: "the re-reading line", failing: "re-reading the configuration file", valid: true },
  { line: "an error of the file", failing: "config reload: an error", valid: false },
] as const;

for (const { line, failing, valid } of CASES) {
  Deno.test(`ConfigReloader: a logger throwing on ${line} skips neither the reload nor its event`, async () => {
    const { log, thrown } = failingLogger(failing);
    let next: Config | null = null;
    const rt = await startRuntime(testConfig({ providers: [] }), {
      host: {
        log,
        loadConfig: (): Promise<ReloadedConfig> =>
          Promise.resolve(
            valid
              ? { ok: true, config: next!, warnings: ["a warning"] }
              : { ok: false, errors: ["an error"] },
          ),
      },
    });
    const { events, stop: unsubscribe } = recordEvents(rt);
    try {
      const before = rt.config.polling.intervalMs;
      next = { ...rt.config, polling: { ...rt.config.polling, intervalMs: before * 2 } };
      // SIGHUP's call: never awaited there, so it must never reject.
      await rt.reloader!.request();
      assert.ok(thrown() > 0, `the line containing '${failing}' was written, and threw`);
      const counts = rt.reloader!.counts();
      assert.deepEqual(
        { success: counts.success, failure: counts.failure },
        valid ? { success: 1, failure: 0 } : { success: 0, failure: 1 },
      );
      assert.equal(rt.config.polling.intervalMs, valid ? before * 2 : before);
      const reloads = events.filter((e) => e.kind === "config_reload");
      assert.equal(reloads.length, 1, "one config_reload event");
      const ev = reloads[0];
      assert.equal(ev?.kind === "config_reload" ? ev.result : null, valid ? "applied" : "failed");
    } finally {
      unsubscribe();
      await rt.stop();
    }
  });
}
