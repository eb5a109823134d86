/**
 * A reload (SIGHUP) that comes while the configuration file is being rewritten in place (an
 * editor, a deploy tool) could read it cut off mid-write; a cut before a section is still valid
 * YAML, so it loaded with that section at its defaults (a cut before `safety:` drops protection:
 * outside AUTO applied with a WARN). The reload (main.ts configReload) now reads the file until
 * two reads in a row agree, CONFIG_RELOAD_READS_MAX reads at most, and is refused, nothing
 * applied, when none do. Real files and a real kernel; the reload's host read is the real one,
 * the writer finishing (or going on writing) right after a read has answered.
 */
import assert from "node:assert/strict";
import type { Kernel } from "../src/app/kernel.ts";
import type { RuntimeEvent } from "../src/events/mod.ts";
import { commandOnPath, readRegularFile, type RegularFileRead, statPath } from "../src/host/mod.ts";
import { CONFIG_RELOAD_READS_MAX, configReload } from "../src/main.ts";
import { ManualClock } from "./helpers/clock.ts";
import { newKernel, recordEvents, tempDir } from "./helpers/kernel.ts";
import { simProvider } from "./helpers/sim_config.ts";

type ReloadEvent = Extract<RuntimeEvent, { kind: "config_reload" }>;

const SIM = simProvider("sim0");

/** The file as written whole, `polling.interval_ms` last; `cut` stops before `polling:`. */
const configText = (dir: string, intervalMs: number, cut = false) =>
  `runtime:\n  name: rig\n  data_dir: ${dir}/data\nproviders:\n  - id: sim0\n` +
  `    command: ${JSON.stringify(SIM.command)}\n    args: ${JSON.stringify(SIM.args)}\n` +
  (cut ? "" : `polling:\n  interval_ms: ${intervalMs}\n`);

/** The reload's host read of `file`, counted; `writes` is written over it after each read. */
class WrittenWhileRead {
  reads = 0;
  /** Written over the file, one after each of its reads, in order, while any is left. */
  writes: string[] = [];
  constructor(readonly file: string) {}
  readonly read = async (path: string, maxBytes: number): Promise<RegularFileRead> => {
    const got = await readRegularFile(path, maxBytes);
    if (path === this.file) {
      this.reads++;
      const next = this.writes.shift();
      if (next !== undefined) await Deno.writeTextFile(path, next);
    }
    return got;
  };
}

async function rig(): Promise<{ rt: Kernel; file: string; dir: string; reads: WrittenWhileRead }> {
  const dir = tempDir("runtime-reload-being-written-");
  const file = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(file, configText(dir, 300));
  const reads = new WrittenWhileRead(file);
  const reload = configReload(
    file,
    { file, logLevel: null },
    { port: null, logLevel: null },
    { logLevel: "info", automationEnabled: false },
    { clock: new ManualClock(), readRegularFile: reads.read, stat: statPath, commandOnPath },
  );
  const first = await reload();
  assert.ok(first.ok, JSON.stringify(first));
  const rt = newKernel(first.config, { loadConfig: reload });
  await rt.start();
  reads.reads = 0;
  return { rt, file, dir, reads };
}

Deno.test("a reload that reads the file cut off mid-write (still valid YAML) reads it again and applies the file as finished, not the cut", async () => {
  const { rt, file, dir, reads } = await rig();
  const recorder = recordEvents(rt);
  try {
    assert.equal(rt.config.polling.intervalMs, 300);
    // The writer has written up to `polling:` when SIGHUP reads; it finishes right after.
    await Deno.writeTextFile(file, configText(dir, 250, true));
    reads.writes = [configText(dir, 250)];
    await rt.reloader!.request();
    const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
    assert.deepEqual(events.map((e) => [e.result, e.errors]), [["applied", []]]);
    assert.equal(rt.config.polling.intervalMs, 250, "the finished file is what applies");
    assert.equal(reads.reads, 3, "read until two reads in a row agree");
    reads.reads = 0;
    await rt.reloader!.request();
    assert.equal(reads.reads, 2, "a steady file: read twice");
  } finally {
    recorder.stop();
    await rt.stop();
  }
});

Deno.test("a reload of a file that changes at every read is refused after CONFIG_RELOAD_READS_MAX reads, saying so, nothing applied", async () => {
  const { rt, file, dir, reads } = await rig();
  const recorder = recordEvents(rt);
  try {
    const before = rt.config;
    await Deno.writeTextFile(file, configText(dir, 250, true));
    reads.writes = Array.from(
      { length: CONFIG_RELOAD_READS_MAX },
      (_, i) => configText(dir, 250, i % 2 === 1) + `# write ${i}\n`,
    );
    await rt.reloader!.request();
    const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
    assert.deepEqual(events.map((e) => e.result), ["failed"], JSON.stringify(events));
    assert.deepEqual(events[0]!.errors, [
      `cannot read ${file}: it changed while being read (${CONFIG_RELOAD_READS_MAX} reads, no ` +
      "two in a row alike): is it being written in place? Write the new file next to it, then " +
      "rename it into place",
    ]);
    assert.equal(reads.reads, CONFIG_RELOAD_READS_MAX, "no more reads than the bound");
    assert.equal(rt.config, before, "the configuration in force is kept");
  } finally {
    recorder.stop();
    await rt.stop();
  }
});
