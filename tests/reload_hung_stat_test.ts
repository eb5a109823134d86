/**
 * A reload (SIGHUP) checks the re-read configuration as the start does: what is at every path it
 * names (a provider's command, the TLS files, the behavior tree), every bare command on PATH. It
 * asked with Deno.statSync on the event loop's thread while the providers ran: a path on a hung
 * mount (an NFS server gone, a dying SD card) froze the whole process, the API and the e-stop
 * included. The reload (main.ts configReload) asks off that thread, each question within
 * RELOAD_FILE_READ_TIMEOUT_MS: the e-stop over HTTP answers meanwhile, and the reload is refused
 * naming the key, its line and column and the path, the configuration in force kept. So is the
 * configuration file's own read. Real files, a real HTTP server, the reload's host ports but for
 * the hung one, the reload's bound on a clock moved by hand.
 */
import assert from "node:assert/strict";
import { RELOAD_FILE_READ_TIMEOUT_MS } from "../src/app/mod.ts";
import type { RuntimeEvent } from "../src/events/mod.ts";
import { commandOnPath, readRegularFile, type RegularFileRead, statPath } from "../src/host/mod.ts";
import { configReload, type ReloadPorts } from "../src/main.ts";
import { ManualClock } from "./helpers/clock.ts";
import { recordEvents, startServing, tempDir, waitFor } from "./helpers/kernel.ts";
import { apiFetch } from "./helpers/openapi_check.ts";
import { testConfig } from "./helpers/sim_config.ts";

type ReloadEvent = Extract<RuntimeEvent, { kind: "config_reload" }>;

const NO_ANSWER =
  `no answer within ${RELOAD_FILE_READ_TIMEOUT_MS} ms (a hung mount or a failing disk?)`;

/**
 * Runs a reload of `file` whose host ports never answer for `hung` (a stat, or the file's read)
 * while the runtime serves HTTP; presses the e-stop over HTTP while the question waits, then lets
 * the reload's bound pass. The config_reload events, and whether the configuration in force held.
 */
async function reloadWhileHung(
  file: string,
  hung: { stat?: string; read?: string },
): Promise<{ events: ReloadEvent[]; kept: boolean }> {
  const clock = new ManualClock();
  let waiting = 0;
  const ports: ReloadPorts = {
    clock,
    readRegularFile: (path, maxBytes): Promise<RegularFileRead> => {
      if (path !== hung.read) return readRegularFile(path, maxBytes);
      waiting++;
      return new Promise(() => {});
    },
    stat: (path) => {
      if (path !== hung.stat) return statPath(path);
      waiting++;
      return new Promise(() => {});
    },
    commandOnPath,
  };
  const reload = configReload(
    file,
    { file, logLevel: null },
    { port: null, logLevel: null },
    { logLevel: "info", automationEnabled: false },
    ports,
  );
  const rt = await startServing(testConfig({ providers: [] }), { loadConfig: reload });
  const recorder = recordEvents(rt);
  try {
    const before = rt.config;
    const reloading = rt.reloader!.request();
    await waitFor(`the reload asking of ${hung.stat ?? hung.read}`, () => waiting > 0);
    const res = await apiFetch(`http://127.0.0.1:${rt.http!.port}/v0/estop`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reason: "door opened" }),
    });
    assert.equal(res.status, 200, await res.text());
    assert.equal(rt.estop.status().latched, true, "the e-stop latches while the question waits");
    clock.advance(RELOAD_FILE_READ_TIMEOUT_MS);
    await reloading;
    const events = recorder.events.filter((e): e is ReloadEvent => e.kind === "config_reload");
    return { events, kept: rt.config === before };
  } finally {
    recorder.stop();
    await rt.stop();
  }
}

Deno.test("a reload whose configuration names a path whose stat never answers: the e-stop over HTTP answers meanwhile, the reload is refused naming the key, the configuration in force kept", async () => {
  const dir = tempDir("runtime-reload-stat-");
  const command = `${dir}/nfs/bin/sim`;
  const file = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(
    file,
    `runtime:\n  name: rig\nproviders:\n  - id: sim0\n    command: ${command}\n`,
  );
  const { events, kept } = await reloadWhileHung(file, { stat: command });
  assert.deepEqual(events.map((e) => [e.result, e.errors]), [[
    "failed",
    [`${file}:5:5: error: providers[0].command: cannot check ${
      JSON.stringify(command)
    }: ${NO_ANSWER}`],
  ]]);
  assert.equal(kept, true, "the configuration in force is kept");
});

Deno.test("a reload whose read of the configuration file never answers: the e-stop over HTTP answers meanwhile, the reload is refused saying so", async () => {
  const dir = tempDir("runtime-reload-stat-");
  const file = `${dir}/runtime.yaml`;
  await Deno.writeTextFile(file, `providers:\n  - id: sim0\n    command: deno\n`);
  const { events, kept } = await reloadWhileHung(file, { read: file });
  assert.deepEqual(events.map((e) => [e.result, e.errors]), [[
    "failed",
    [`cannot read ${file}: ${NO_ANSWER}`],
  ]]);
  assert.equal(kept, true, "the configuration in force is kept");
});
